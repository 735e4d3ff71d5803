import {
  assertEquals,
  assertInstanceOf,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { SearchTimeoutError, timeoutError } from "./errors.ts";

Deno.test("timeoutError() names the limit and suggests a simpler pattern", () => {
  const error = timeoutError('Search for "(a+)+$"', 2000);
  assertInstanceOf(error, SearchTimeoutError);
  assertEquals(error.name, "SearchTimeoutError");
  assertEquals(error.timeoutMs, 2000);
  assertStringIncludes(
    error.message,
    'Search for "(a+)+$" timed out after 2000 ms: ',
  );
});
