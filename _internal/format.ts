/**
 * Small shared formatters and argument checks of the file systems and the
 * tools (one copy each).
 *
 * @module
 */

/**
 * A byte count for people: `1 byte`, `1000 bytes`, `4 KiB`, `1.5 MiB`.
 *
 * @example Sizes
 * ```ts
 * import { assert } from "@std/assert";
 * import { formatBytes } from "./format.ts";
 * assert(formatBytes(1) === "1 byte" && formatBytes(4096) === "4 KiB");
 * assert(formatBytes(1.5 * 1024 * 1024) === "1.5 MiB");
 * ```
 *
 * @param bytes A count of bytes.
 * @returns The text.
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = value.toFixed(1).replace(/\.0$/, "");
  return `${shown} ${units[unit]}`;
}

/**
 * The error of a text read over its size limit.
 *
 * @param path The file.
 * @param limit The limit in bytes.
 * @returns `Cannot read "<path>": file is larger than the <limit> limit`.
 */
export function tooLargeError(path: string, limit: number): RangeError {
  return new RangeError(
    `Cannot read "${path}": file is larger than the ${
      formatBytes(limit)
    } limit`,
  );
}
