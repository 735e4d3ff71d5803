/**
 * The error every package operation throws for a bad package: what was
 * refused, and the entry that caused it when there is one.
 *
 * @module
 */

/** Why a package was refused. */
export type PackageErrorCode =
  | "unsafe-path"
  | "link"
  | "special-file"
  | "duplicate"
  | "too-many-entries"
  | "too-large"
  | "ratio"
  | "bad-name"
  | "no-skill"
  | "several-skills"
  | "corrupt"
  | "digest-mismatch"
  | "bad-format"
  | "source";

/**
 * A package was refused: an unsafe entry, a bomb, a wrong digest, a corrupt
 * archive, a source that failed. Nothing of it was installed.
 *
 * @example Telling a refused package apart
 * ```ts
 * import { assert } from "@std/assert";
 * import { PackageError } from "@skillrun/skillrun/package";
 * const error = new PackageError("link", "a symlink", { entry: "x/link" });
 * assert(error.message.includes('"x/link"') && error.code === "link");
 * ```
 */
export class PackageError extends Error {
  /** What kind of refusal. */
  readonly code: PackageErrorCode;
  /** The entry of the archive that was refused, when one was. */
  readonly entry: string | undefined;

  /**
   * Makes the error; the message names the entry.
   *
   * @param code What kind of refusal.
   * @param reason Why, in words.
   * @param options The entry, and the error that caused this one.
   */
  constructor(
    code: PackageErrorCode,
    reason: string,
    options: { entry?: string; cause?: unknown } = {},
  ) {
    const where = options.entry === undefined
      ? ""
      : ` (entry ${JSON.stringify(options.entry)})`;
    super(
      `Refused the skill package${where}: ${reason}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = "PackageError";
    this.code = code;
    this.entry = options.entry;
  }
}
