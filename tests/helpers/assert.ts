/**
 * Typed assertions from `@std/assert`, for the tests. See `std.ts` for why.
 *
 * @module
 */
import * as asserts from "@std/assert";

/** Typed signatures of the `@std/assert` functions the tests use. */
interface Assertions {
  assert(expr: unknown, msg?: string): asserts expr;
  assertFalse(expr: unknown, msg?: string): void;
  assertEquals<T>(actual: T, expected: T, msg?: string): void;
  assertNotEquals<T>(actual: T, expected: T, msg?: string): void;
  assertStrictEquals<T>(
    actual: unknown,
    expected: T,
    msg?: string,
  ): asserts actual is T;
  assertExists<T>(actual: T, msg?: string): asserts actual is NonNullable<T>;
  assertStringIncludes(actual: string, expected: string, msg?: string): void;
  assertMatch(actual: string, expected: RegExp, msg?: string): void;
  assertNotMatch(actual: string, expected: RegExp, msg?: string): void;
  assertGreater<T>(actual: T, expected: T, msg?: string): void;
  assertGreaterOrEqual<T>(actual: T, expected: T, msg?: string): void;
  assertLess<T>(actual: T, expected: T, msg?: string): void;
  assertLessOrEqual<T>(actual: T, expected: T, msg?: string): void;
  assertInstanceOf<T extends abstract new (...args: never[]) => unknown>(
    actual: unknown,
    expectedType: T,
    msg?: string,
  ): asserts actual is InstanceType<T>;
  assertThrows<E extends Error = Error>(
    fn: () => unknown,
    // deno-lint-ignore no-explicit-any
    errorClass?: abstract new (...args: any[]) => E,
    msgIncludes?: string,
    msg?: string,
  ): E;
  assertRejects<E extends Error = Error>(
    fn: () => PromiseLike<unknown>,
    // deno-lint-ignore no-explicit-any
    errorClass?: abstract new (...args: any[]) => E,
    msgIncludes?: string,
    msg?: string,
  ): Promise<E>;
  fail(msg?: string): never;
}

const typed: Assertions = asserts;

/** Asserts that `expr` is truthy. */
export const assert: Assertions["assert"] = typed.assert;
/** Asserts that `expr` is falsy. */
export const assertFalse: Assertions["assertFalse"] = typed.assertFalse;
/** Asserts deep equality. */
export const assertEquals: Assertions["assertEquals"] = typed.assertEquals;
/** Asserts deep inequality. */
export const assertNotEquals: Assertions["assertNotEquals"] =
  typed.assertNotEquals;
/** Asserts strict (`Object.is`) equality. */
export const assertStrictEquals: Assertions["assertStrictEquals"] =
  typed.assertStrictEquals;
/** Asserts that a value is neither `null` nor `undefined`. */
export const assertExists: Assertions["assertExists"] = typed.assertExists;
/** Asserts that a string contains another. */
export const assertStringIncludes: Assertions["assertStringIncludes"] =
  typed.assertStringIncludes;
/** Asserts that a string matches a regular expression. */
export const assertMatch: Assertions["assertMatch"] = typed.assertMatch;
/** Asserts that a string does not match a regular expression. */
export const assertNotMatch: Assertions["assertNotMatch"] =
  typed.assertNotMatch;
/** Asserts `actual > expected`. */
export const assertGreater: Assertions["assertGreater"] = typed.assertGreater;
/** Asserts `actual >= expected`. */
export const assertGreaterOrEqual: Assertions["assertGreaterOrEqual"] =
  typed.assertGreaterOrEqual;
/** Asserts `actual < expected`. */
export const assertLess: Assertions["assertLess"] = typed.assertLess;
/** Asserts `actual <= expected`. */
export const assertLessOrEqual: Assertions["assertLessOrEqual"] =
  typed.assertLessOrEqual;
/** Asserts that a value is an instance of a class. */
export const assertInstanceOf: Assertions["assertInstanceOf"] =
  typed.assertInstanceOf;
/** Asserts that a function throws. */
export const assertThrows: Assertions["assertThrows"] = typed.assertThrows;
/** Asserts that a promise rejects. */
export const assertRejects: Assertions["assertRejects"] = typed.assertRejects;
/** Fails the test. */
export const fail: Assertions["fail"] = typed.fail;
