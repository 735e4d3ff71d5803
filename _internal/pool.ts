/**
 * The small worker pool: runs an async function over items, a few at a time.
 *
 * @module
 */

/** Options of {@linkcode mapLimited}. */
export interface MapLimitedOptions {
  /** Stops taking new items; the call then fails with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * Runs `fn` over `items`, at most `limit` at a time, and returns the results
 * in the items' order. After a failure (or an abort) no new item starts; the
 * call waits for those already started, then throws the first failure.
 *
 * @example Three at a time
 * ```ts
 * import { assert } from "@std/assert";
 * import { mapLimited } from "./pool.ts";
 * let running = 0, most = 0;
 * const doubled = await mapLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
 *   most = Math.max(most, ++running);
 *   await new Promise((resolve) => setTimeout(resolve, 1));
 *   running--;
 *   return n * 2;
 * });
 * assert(doubled.join() === "2,4,6,8,10,12,14" && most === 3);
 * ```
 *
 * @param items The items.
 * @param limit How many run at once (at least 1).
 * @param fn The work for one item.
 * @param options A signal.
 * @returns The results, in order.
 * @throws {unknown} The first failure of `fn`, or the signal's reason.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  options: MapLimitedOptions = {},
): Promise<R[]> {
  const { signal } = options;
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      if (signal?.aborted) {
        failed = true;
        failure = signal.reason;
        return;
      }
      const index = next++;
      try {
        results[index] = await fn(items[index]!);
      } catch (error) {
        if (!failed) {
          failed = true;
          failure = error;
        }
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker),
  );
  if (failed) throw failure;
  return results;
}
