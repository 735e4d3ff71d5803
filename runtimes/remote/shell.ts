/**
 * Shell quoting for remote command lines: {@linkcode shellQuote} is the one
 * function through which every value goes before it is put into a command
 * line that a remote `bash -c` runs.
 *
 * @module
 */

/** Words that need no quoting: letters, digits and a few safe marks. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** A valid environment variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Quotes a value for a POSIX shell (`bash`, `sh`), so that the shell reads it
 * back as exactly one word with exactly this value: a value of safe characters
 * only (letters, digits, `_@%+=:,./-`) is returned as it is, anything else in
 * single quotes, each `'` written as `'\''`. Quoting never changes the
 * meaning of a leading `-` to a command: put `--` before such arguments (or
 * prefix paths with `./`).
 *
 * Needs no permission.
 *
 * @param value The value.
 * @returns The quoted word; `''` for the empty string.
 * @throws {TypeError} The value is not a string or holds a NUL character
 * (no shell argument can hold one).
 *
 * @example Quoting adversarial values
 * ```ts
 * import { assert } from "@std/assert";
 * import { shellQuote } from "./shell.ts";
 * assert(shellQuote("/workspace/skills/pdf") === "/workspace/skills/pdf");
 * assert(shellQuote("a b") === "'a b'");
 * assert(shellQuote("it's $(rm -rf /)") === "'it'\\''s $(rm -rf /)'");
 * assert(shellQuote("") === "''");
 * ```
 */
export function shellQuote(value: string): string {
  if (typeof value !== "string") {
    throw new TypeError(
      `Cannot quote ${String(value)}: the value is not a string`,
    );
  }
  if (value.includes("\0")) {
    throw new TypeError(
      `Cannot quote ${JSON.stringify(value)}: the value holds a NUL character`,
    );
  }
  if (value === "") return "''";
  if (SAFE_WORD.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Quotes each argument with {@linkcode shellQuote} and joins them with spaces:
 * a command line whose words are exactly the arguments.
 *
 * Needs no permission.
 *
 * @param args The words, the command first.
 * @returns The command line.
 * @throws {TypeError} An argument is not a string or holds a NUL character.
 *
 * @example A command line from words
 * ```ts
 * import { assert } from "@std/assert";
 * import { shellJoin } from "./shell.ts";
 * assert(shellJoin(["ls", "-la", "my dir"]) === "ls -la 'my dir'");
 * ```
 */
export function shellJoin(args: readonly string[]): string {
  return args.map(shellQuote).join(" ");
}

/**
 * Variable assignments for the start of a command line
 * (`NAME='value' NAME2=v2 `), each value quoted with {@linkcode shellQuote},
 * in the order given. Empty for no variables.
 *
 * Needs no permission.
 *
 * @param env The variables.
 * @returns The assignments, each followed by a space.
 * @throws {TypeError} A name is not a valid variable name, or a value holds a
 * NUL character.
 *
 * @example Prefixing a command with variables
 * ```ts
 * import { assert } from "@std/assert";
 * import { shellAssignments } from "./shell.ts";
 * assert(shellAssignments({ A: "1", B: "x y" }) === "A=1 B='x y' ");
 * ```
 */
export function shellAssignments(
  env: Readonly<Record<string, string>>,
): string {
  let line = "";
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      throw new TypeError(
        `Cannot set variable ${
          JSON.stringify(name)
        }: it is not a valid variable name`,
      );
    }
    line += `${name}=${shellQuote(value)} `;
  }
  return line;
}
