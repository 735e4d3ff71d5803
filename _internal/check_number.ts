/**
 * The one check of a numeric option, with one wording:
 * `Cannot <action> <name> "<value>": it must be a <rule>`.
 *
 * @module
 */

/** What a number must be. */
export type NumberRule =
  | "positive integer"
  | "non-negative integer"
  | "positive number"
  | "non-negative number"
  | "positive number of ms"
  | "non-negative number of ms";

/**
 * Checks a numeric option: a finite number (a safe integer for the integer
 * rules), above 0 for the positive rules, at least 0 for the non-negative
 * ones. Needs no permission.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkNumber } from "./check_number.ts";
 * checkNumber(3, "limit", "positive integer");
 * assertThrows(
 *   () => checkNumber(0, "limit", "positive integer"),
 *   RangeError,
 *   'Cannot use limit "0": it must be a positive integer',
 * );
 * assertThrows(
 *   () => checkNumber(-1, "timeout", "positive number of ms", "run a command with"),
 *   RangeError,
 *   'Cannot run a command with timeout "-1": it must be a positive number of ms',
 * );
 * ```
 *
 * @param value The value given.
 * @param name The option's name, for the message.
 * @param rule What it must be.
 * @param action What the option is for, for the message (default `use`).
 * @returns The same value.
 * @throws {RangeError} It breaks the rule.
 */
export function checkNumber(
  value: unknown,
  name: string,
  rule: NumberRule,
  action: string = "use",
): number {
  const integer = rule.endsWith("integer");
  const positive = rule.startsWith("positive");
  if (
    typeof value !== "number" ||
    !(integer ? Number.isSafeInteger(value) : Number.isFinite(value)) ||
    (positive ? value <= 0 : value < 0)
  ) {
    throw new RangeError(
      `Cannot ${action} ${name} "${String(value)}": it must be a ${rule}`,
    );
  }
  return value;
}
