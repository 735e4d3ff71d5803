/**
 * The one order of names and paths: by Unicode code point (UTF-8 byte order),
 * a folder's entries before its neighbours' (what ripgrep's `--sort path`
 * gives). Search results, listings and copies all sort this way.
 *
 * @module
 */

/**
 * Compares two `/`-separated paths the way a walk that sorts each folder's
 * entries by name visits them (ripgrep `--sort path`): segment by segment, by
 * Unicode code point (UTF-8 byte order). So `a/b.txt` comes before `a-b.txt`.
 *
 * @param a A path.
 * @param b Another path.
 * @returns Negative, zero or positive.
 *
 * Needs no permission.
 *
 * @example Sorting paths
 * ```ts
 * import { assert } from "@std/assert";
 * import { comparePaths } from "./compare.ts";
 * const paths = ["a.txt", "a-b.txt", "a/b.txt", "B.txt"].sort(comparePaths);
 * assert(paths.join(" ") === "B.txt a/b.txt a-b.txt a.txt");
 * ```
 */
export function comparePaths(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // The separator sorts before everything: a shorter segment comes first.
    if (x === 0x2f) return -1;
    if (y === 0x2f) return 1;
    // Surrogates (astral code points) sort after the rest of the BMP.
    if (x >= 0xd800 && x <= 0xdfff) x += 0x10000;
    if (y >= 0xd800 && y <= 0xdfff) y += 0x10000;
    return x - y;
  }
  return a.length - b.length;
}

/**
 * Compares two entry names by code point (UTF-8 byte order).
 *
 * @param a A name.
 * @param b Another name.
 * @returns Negative, zero or positive.
 */
export function compareNames(a: string, b: string): number {
  return comparePaths(a, b);
}
