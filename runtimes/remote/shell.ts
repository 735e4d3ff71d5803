/**
 * Shell quoting for remote command lines: {@linkcode shellQuote} is the one
 * function through which every value goes before it is put into a command
 * line that a remote `bash -c` runs.
 *
 * @module
 */

// The one quoting function lives below both search/ and runtimes/.
export { shellJoin, shellQuote } from "../../_internal/shell_quote.ts";
import { shellQuote } from "../../_internal/shell_quote.ts";
import { ENV_NAME } from "../config.ts";

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
          JSON.stringify(name.slice(0, 64))
        }: it is not a valid variable name`,
      );
    }
    line += `${name}=${shellQuote(value)} `;
  }
  return line;
}

/**
 * The arguments of `bash` that run `command` in a session of its own
 * (`setsid`), so that SIGTERM to that bash (a service that signals only the
 * process it started: E2B's envd, Vercel's command kill) stops every process
 * the command started: the trap signals the session's group, then SIGKILLs
 * it 2 s later, and bash exits 143. The command is passed as `$1`, never
 * spliced into the script.
 *
 * Needs no permission.
 *
 * @param command The command line.
 * @returns The arguments after `bash`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { sessionBashArgs } from "./shell.ts";
 * const args = sessionBashArgs("echo hi");
 * assertEquals([args[0], args.at(-1)], ["-c", "echo hi"]);
 * ```
 */
export function sessionBashArgs(command: string): string[] {
  return ["-c", SESSION_WRAPPER, "skillrun", command];
}

const SESSION_WRAPPER = [
  `__p=`,
  `trap '[ -n "$__p" ] && kill -TERM -- -$__p 2>/dev/null; ([ -n "$__p" ] && sleep 2 && kill -KILL -- -$__p) >/dev/null 2>&1 & exit 143' TERM`,
  `setsid bash -c -- "$1" skillrun & __p=$!`,
  `wait "$__p"`,
].join("\n");
