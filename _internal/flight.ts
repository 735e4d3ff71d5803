/**
 * One call shared by every caller that waits for it (a skill's preparation):
 * it runs under its own signal, a caller whose signal aborts only stops
 * waiting, and the call is aborted when no caller waits any more.
 *
 * @module
 */

/** A call under way and how many callers wait for it. */
export interface Flight<T> {
  /** The call's outcome. */
  readonly promise: Promise<T>;
  /** Aborts the call (done when the last caller leaves). */
  readonly controller: AbortController;
  /** How many callers wait for it. */
  waiters: number;
}

/**
 * Starts a shared call once `after` (a previous call still stopping) has
 * settled. `run` gets the flight's own signal. A failure with no caller left
 * never becomes an unhandled rejection.
 *
 * @param run The call.
 * @param after A previous call to let settle first.
 * @returns The flight (no caller waits for it yet: see {@linkcode waitFor}).
 */
export function startFlight<T>(
  run: (signal: AbortSignal) => Promise<T>,
  after?: Promise<unknown>,
): Flight<T> {
  const controller = new AbortController();
  const settled = after ? after.then(() => {}, () => {}) : Promise.resolve();
  const promise = settled.then(() => run(controller.signal));
  promise.catch(() => {});
  return { promise, controller, waiters: 0 };
}

/**
 * Waits for a shared call. A caller whose signal aborts leaves with its
 * reason; the call itself is aborted when the last caller leaves.
 *
 * @param flight The shared call.
 * @param signal The caller's signal.
 * @returns The call's outcome.
 */
export function waitFor<T>(
  flight: Flight<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  flight.waiters++;
  if (!signal) return flight.promise.finally(() => flight.waiters--);
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const leave = (): boolean => {
      if (settled) return false;
      settled = true;
      flight.waiters--;
      signal.removeEventListener("abort", onAbort);
      return true;
    };
    const onAbort = () => {
      if (!leave()) return;
      if (flight.waiters === 0) flight.controller.abort(signal.reason);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    flight.promise.then(
      (value) => leave() && resolve(value),
      (error) => leave() && reject(error),
    );
  });
}
