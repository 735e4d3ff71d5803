/**
 * The one check of a path's text, before any normalisation: a non-empty
 * string without NUL (`a\0/..` must not become a harmless path).
 *
 * @module
 */

/**
 * Checks that a path is a non-empty string without NUL. The same check, with
 * the same messages, on every runtime's file calls and working directories,
 * the workspace fence and the local writes.
 *
 * Needs no permission.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkPathText } from "./path_text.ts";
 * checkPathText("notes/a.txt");
 * assertThrows(() => checkPathText("a\0b"), TypeError, "NUL");
 * assertThrows(() => checkPathText("", "write"), TypeError, 'Cannot write ""');
 * ```
 *
 * @param path The path.
 * @param action What the caller would do with it, for the message
 * (`Cannot <action> "<path>": ...`; default `use`).
 * @throws {TypeError} It is not a string, is empty, or holds NUL.
 */
export function checkPathText(
  path: unknown,
  action: string = "use",
): asserts path is string {
  if (typeof path !== "string" || path === "") {
    throw new TypeError(
      `Cannot ${action} ${JSON.stringify(path)}: the path is empty`,
    );
  }
  if (path.includes("\0")) {
    throw new TypeError(
      `Cannot ${action} ${
        JSON.stringify(path)
      }: the path holds a NUL character`,
    );
  }
}
