/**
 * Whether a program runs here: one check, used by the doctor and the tests,
 * that answers `false` for a missing program instead of throwing (spawning a
 * program that is not on `PATH` throws synchronously in Deno).
 *
 * @module
 */

/**
 * Runs `program args...` with no input or output and answers whether it
 * exited with 0. A missing program, or one this process may not run, answers
 * `false`.
 *
 * Needs `--allow-run` for the program (without it: `false`).
 *
 * @param program The program, looked up on `PATH`.
 * @param args Its arguments.
 * @returns Whether it ran and exited with 0.
 *
 * @example A program that exists and one that does not
 * ```ts
 * import { assert } from "@std/assert";
 * import { commandSucceeds } from "./command.ts";
 * assert(await commandSucceeds("true"));
 * assert(!await commandSucceeds("surely-no-such-program-here"));
 * ```
 */
export async function commandSucceeds(
  program: string,
  args: readonly string[] = [],
): Promise<boolean> {
  try {
    const output = await new Deno.Command(program, {
      args: [...args],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return output.success;
  } catch {
    return false;
  }
}
