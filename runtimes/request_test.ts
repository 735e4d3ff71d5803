import { assertEquals, assertThrows } from "@std/assert";
import { checkExecuteRequest, checkPathText } from "./request.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "./command_core.ts";

/** Its fields as plain values (the timeout's brand is a type, not a value). */
const plain = (request: object): Record<string, unknown> => ({ ...request });

Deno.test("checkExecuteRequest() defaults, clamps and returns the checked parts", () => {
  assertEquals(plain(checkExecuteRequest({ command: "true" })), {
    command: "true",
    timeoutMs: 120_000,
    maxOutputBytes: 1024 * 1024,
    env: {},
  });
  assertEquals(
    plain(
      checkExecuteRequest(
        { command: "x", timeoutMs: 2 ** 40, env: { A: "1" } },
        {
          maxOutputBytes: 7,
        },
      ),
    ),
    {
      command: "x",
      timeoutMs: MAX_EXECUTE_TIMEOUT_MS,
      maxOutputBytes: 7,
      env: { A: "1" },
    },
  );
  assertThrows(
    () =>
      checkExecuteRequest({ command: "cat", stdin: new Blob([]).stream() }, {
        stdin: false,
        runtimeName: "demo",
      }),
    TypeError,
    "Cannot run a command with stdin: the demo runtime cannot pipe standard input",
  );
});

Deno.test("checkPathText() refuses empty and NUL paths by name", () => {
  checkPathText("a/b");
  assertThrows(
    () => checkPathText(""),
    TypeError,
    'Cannot use "": the path is empty',
  );
  assertThrows(
    () => checkPathText("a\0/.."),
    TypeError,
    'Cannot use "a\\u0000/..": the path holds a NUL character',
  );
});
