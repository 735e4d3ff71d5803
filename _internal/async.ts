/**
 * `@std/async`'s `abortable` and `delay`, with explicit types.
 *
 * Development maps `@std/async/...` to `npm:deno-std` (its JavaScript ships
 * without declarations), so the types are declared here; under the official
 * `jsr:@std/async` (`deno task test:official`) each declaration is checked
 * against std's own types (plain assignments, no casts). Only the two
 * modules are imported, not `@std/async`'s whole index: an import costs
 * every cold start.
 *
 * @module
 */
import { abortable as stdAbortable } from "@std/async/abortable";
import { delay as stdDelay } from "@std/async/delay";

/**
 * Waits for a promise, or rejects with the signal's reason when it aborts
 * first (the promise itself goes on; its outcome is then ignored).
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
 */
export const abortable: <T>(
  promise: Promise<T>,
  signal: AbortSignal,
) => Promise<T> = stdAbortable;

/** Options of {@linkcode delay}. */
export interface DelayOptions {
  /** Stops the wait early: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Keeps the process alive while waiting (default `true`); `false` unrefs
   * the timer.
   */
  persistent?: boolean;
}

/**
 * Waits `ms` milliseconds; rejects with the signal's reason when it aborts
 * first. `delay` of `@std/async`. Needs no permission.
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
 */
export const delay: (ms: number, options?: DelayOptions) => Promise<void> =
  stdDelay;
