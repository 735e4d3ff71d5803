/**
 * Keeps configured secrets out of error messages and tool outputs.
 *
 * @module
 */

/** Values shorter than this are not redacted: they would mangle ordinary text. */
export const MIN_SECRET_LENGTH = 4;

/** What replaces a secret value. */
export const REDACTED = "[redacted]";

/**
 * Replaces every occurrence of each value (of at least {@linkcode MIN_SECRET_LENGTH}
 * characters) in `text` with {@linkcode REDACTED}, longest values first.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { redactSecrets } from "./redact.ts";
 * const text = redactSecrets("token=abcd1234 region=eu", ["abcd1234", "eu"]);
 * assert(text === "token=[redacted] region=eu");
 * ```
 *
 * @param text The text to clean.
 * @param values The secret values (e.g. a configuration's environment values).
 * @returns The text without the values.
 */
export function redactSecrets(text: string, values: Iterable<string>): string {
  const secrets = [...new Set(values)].filter((v) =>
    v.length >= MIN_SECRET_LENGTH
  )
    .sort((a, b) => b.length - a.length);
  let result = text;
  for (const secret of secrets) {
    if (result.includes(secret)) result = result.split(secret).join(REDACTED);
  }
  return result;
}
