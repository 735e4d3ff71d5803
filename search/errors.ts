/**
 * The errors of the search engine.
 *
 * @module
 */

/** Options of {@linkcode SearchTimeoutError}. */
export interface SearchTimeoutErrorOptions {
  /** The time limit that passed, in ms. */
  readonly timeoutMs: number;
}

/**
 * A search ran past its time limit and was stopped (its workers or its
 * `rg` process killed). Nothing partial is returned.
 *
 * @example Catching a timeout
 * ```ts
 * import { assert } from "@std/assert";
 * import { SearchTimeoutError } from "@skillrun/skillrun/search";
 * const error = new SearchTimeoutError(
 *   'Search for "(a+)+$" timed out after 2000 ms: the pattern may be too slow; simplify it or narrow the path',
 *   { timeoutMs: 2000 },
 * );
 * assert(error.name === "SearchTimeoutError" && error.timeoutMs === 2000);
 * ```
 */
export class SearchTimeoutError extends Error {
  /** The error's name. */
  override readonly name = "SearchTimeoutError";
  /** The time limit that passed, in ms. */
  readonly timeoutMs: number;

  /** Makes the error. */
  constructor(message: string, options: SearchTimeoutErrorOptions) {
    super(message);
    this.timeoutMs = options.timeoutMs;
  }
}

/** The error a search throws when its time limit passes. */
export function timeoutError(
  what: string,
  timeoutMs: number,
): SearchTimeoutError {
  return new SearchTimeoutError(
    `${what} timed out after ${timeoutMs} ms: the pattern may be too slow (for example nested repetition like "(a+)+"); simplify it or narrow the path`,
    { timeoutMs },
  );
}
