/**
 * The project's copies of `@std/async`'s `abortable` and `delay`, kept here
 * because `@std/async` cannot be linked in the official configuration
 * (`scripts/official_std.ts` resolves std offline from a folder without it).
 * Same semantics as std's, so a later swap is a change of imports.
 *
 * @module
 */

/**
 * Waits for a promise, or rejects with the signal's reason when it aborts
 * first (the promise itself goes on; its outcome is then ignored). As
 * `abortable` of `@std/async`. Needs no permission.
 *
 * @example Leaving a slow promise
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { abortable } from "./async.ts";
 * const never = new Promise<never>(() => {});
 * await assertRejects(
 *   () => abortable(never, AbortSignal.abort(new Error("stop"))),
 *   Error,
 *   "stop",
 * );
 * ```
 *
 * @param promise What to wait for.
 * @param signal Stops waiting.
 * @returns The promise's value.
 * @throws The signal's reason, or the promise's error.
 */
export function abortable<T>(
  promise: Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", onAbort)
    );
  });
}

/** Options of {@linkcode delay}. */
export interface DelayOptions {
  /** Stops the wait early: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * Keeps the process alive while waiting (default `true`); `false` unrefs
   * the timer.
   */
  readonly persistent?: boolean;
}

/**
 * Waits `ms` milliseconds. As `delay` of `@std/async`. Needs no permission.
 *
 * @example Waiting, and stopping a wait
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { delay } from "./async.ts";
 * await delay(1);
 * await assertRejects(
 *   () => delay(60_000, { signal: AbortSignal.abort(new Error("stop")) }),
 *   Error,
 *   "stop",
 * );
 * ```
 *
 * @param ms How long.
 * @param options A signal; whether the timer keeps the process alive.
 * @returns When the time has passed.
 * @throws The signal's reason, when it aborts first.
 */
export function delay(ms: number, options: DelayOptions = {}): Promise<void> {
  const { signal, persistent = true } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    if (!persistent) Deno.unrefTimer(timer);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
