/**
 * Counts the checks of one command timeout: the runs of the command core's
 * `checkTimeoutMs` on a given value while a call is under way. The check
 * tests finiteness with the global `Number.isFinite`, so the count watches
 * that function (the real one still answers) and keeps the calls made from
 * `checkTimeoutMs` on that value. Test-only.
 *
 * @module
 */

/**
 * Runs `call` and counts how often `checkTimeoutMs(timeoutMs)` ran meanwhile
 * (choose a value no other command of the call has).
 *
 * @param timeoutMs The timeout whose checks are counted.
 * @param call The call.
 * @returns The call's result and the count.
 */
export async function countTimeoutChecks<T>(
  timeoutMs: number,
  call: () => Promise<T>,
): Promise<{ result: T; checks: number }> {
  const isFinite = Number.isFinite;
  let checks = 0;
  Number.isFinite = (value: unknown): boolean => {
    if (
      value === timeoutMs &&
      /\bcheckTimeoutMs\b/.test(new Error().stack ?? "")
    ) {
      checks++;
    }
    return isFinite(value);
  };
  try {
    const result = await call();
    return { result, checks };
  } finally {
    Number.isFinite = isFinite;
  }
}
