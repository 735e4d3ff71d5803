/**
 * The one quoting function for every value put into a remote (POSIX shell)
 * command line: search in a sandbox, remote runtimes. Values are wrapped in
 * single quotes, inside which a POSIX shell interprets nothing; a single
 * quote in the value becomes `'\''` (close, escaped quote, reopen).
 *
 * @module
 */

/** Words that need no quoting: letters, digits and a few safe marks. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Quotes one value for a POSIX shell (`sh`, `bash`, `dash`, BusyBox `ash`):
 * the shell reads it back as exactly this one word, whatever it holds
 * (spaces, quotes, `$()`, backticks, globs, newlines, non-ASCII). A value of
 * safe characters only (letters, digits, `_@%+=:,./-`) is returned as it is;
 * put `--` before arguments that may start with `-`.
 *
 * Needs no permission.
 *
 * @param value The value.
 * @returns The quoted word.
 * @throws {TypeError} The value is not a string, or holds a NUL character
 * (no command line can carry one).
 *
 * @example Quoting a hostile value
 * ```ts
 * import { assert } from "@std/assert";
 * import { shellQuote } from "./shell_quote.ts";
 * assert(shellQuote("it's $(rm -rf /)") === "'it'\\''s $(rm -rf /)'");
 * assert(shellQuote("") === "''");
 * ```
 */
export function shellQuote(value: string): string {
  if (typeof value !== "string") {
    throw new TypeError(
      `Cannot quote a value for a shell: expected a string, got ${typeof value}`,
    );
  }
  // The value is never echoed: it may be a secret (a variable's value).
  if (value.includes("\0")) {
    throw new TypeError(
      "Cannot quote a value for a shell: it holds a NUL character",
    );
  }
  if (value === "") return "''";
  if (SAFE_WORD.test(value)) return value;
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * Quotes every value with {@linkcode shellQuote} and joins them with spaces:
 * a command line whose words are exactly these values.
 *
 * Needs no permission.
 *
 * @param args The words.
 * @returns The command line.
 * @throws {TypeError} A word is not a string or holds a NUL character.
 *
 * @example A command line
 * ```ts
 * import { assert } from "@std/assert";
 * import { shellJoin } from "./shell_quote.ts";
 * assert(shellJoin(["ls", "-l", "my file"]) === "ls -l 'my file'");
 * ```
 */
export function shellJoin(args: readonly string[]): string {
  return args.map(shellQuote).join(" ");
}
