import { assertEquals } from "../tests/helpers/assert.ts";
import { validateInput } from "./_input.ts";
import type { JsonSchema } from "./types.ts";

const schema: JsonSchema = {
  type: "object",
  properties: {
    command: { type: "string", minLength: 1 },
    timeout: { type: "integer", minimum: 1, maximum: 600_000 },
    ratio: { type: "number" },
    all: { type: "boolean" },
    mode: { type: "string", enum: ["content", "count"] },
  },
  required: ["command"],
  additionalProperties: false,
};

Deno.test("validateInput() returns the given parameters", () => {
  assertEquals(
    validateInput(schema, { command: "ls", timeout: 5, all: true }),
    {
      ok: true,
      value: { command: "ls", timeout: 5, all: true },
    },
  );
});

Deno.test("validateInput() refuses an unknown parameter and names the known ones", () => {
  assertEquals(validateInput(schema, { command: "ls", cwd: "/" }), {
    ok: false,
    message:
      'Invalid input: Unknown parameter "cwd": expected one of command, timeout, ratio, all, mode',
  });
});

Deno.test("validateInput() reports a missing required parameter", () => {
  assertEquals(validateInput(schema, {}), {
    ok: false,
    message: 'Invalid input: Missing required parameter "command"',
  });
  assertEquals(validateInput(schema, undefined), {
    ok: false,
    message: 'Invalid input: Missing required parameter "command"',
  });
});

Deno.test("validateInput() reports wrong types", () => {
  const cases: [unknown, string][] = [
    [{ command: 3 }, 'Parameter "command" must be a string, got number 3'],
    [
      { command: "x", timeout: "5000" },
      'Parameter "timeout" must be an integer, got string "5000"',
    ],
    [
      { command: "x", timeout: 1.5 },
      'Parameter "timeout" must be an integer, got 1.5',
    ],
    [
      { command: "x", all: "yes" },
      'Parameter "all" must be a boolean, got string "yes"',
    ],
    [
      { command: "x", ratio: [] },
      'Parameter "ratio" must be a number, got an array',
    ],
    [
      { command: "x", ratio: NaN },
      'Parameter "ratio" must be a number, got NaN',
    ],
  ];
  for (const [input, message] of cases) {
    assertEquals(validateInput(schema, input), {
      ok: false,
      message: `Invalid input: ${message}`,
    });
  }
});

Deno.test("validateInput() reports values out of range or not in the enum", () => {
  assertEquals(validateInput(schema, { command: "x", timeout: 0 }), {
    ok: false,
    message: 'Invalid input: Parameter "timeout" must be at least 1, got 0',
  });
  assertEquals(validateInput(schema, { command: "x", timeout: 700_000 }), {
    ok: false,
    message:
      'Invalid input: Parameter "timeout" must be at most 600000, got 700000',
  });
  assertEquals(validateInput(schema, { command: "x", mode: "lines" }), {
    ok: false,
    message:
      'Invalid input: Parameter "mode" must be one of "content", "count", got "lines"',
  });
  assertEquals(validateInput(schema, { command: "" }), {
    ok: false,
    message: 'Invalid input: Parameter "command" must not be empty',
  });
});

Deno.test("validateInput() lists several problems at once", () => {
  assertEquals(validateInput(schema, { timeout: -1, x: 1 }), {
    ok: false,
    message:
      'Invalid input:\n- Parameter "timeout" must be at least 1, got -1\n- Unknown parameter "x": expected one of command, timeout, ratio, all, mode\n- Missing required parameter "command"',
  });
});

Deno.test("validateInput() treats null as not given for optional parameters only", () => {
  assertEquals(validateInput(schema, { command: "x", timeout: null }), {
    ok: true,
    value: { command: "x" },
  });
  assertEquals(validateInput(schema, { command: null }), {
    ok: false,
    message: 'Invalid input: Missing required parameter "command"',
  });
});

Deno.test("validateInput() refuses input that is not an object", () => {
  assertEquals(validateInput(schema, [1]), {
    ok: false,
    message: "Invalid input: expected an object of parameters, got an array",
  });
  assertEquals(validateInput(schema, "ls"), {
    ok: false,
    message: "Invalid input: expected an object of parameters, got string",
  });
});

Deno.test("validateInput() does not treat inherited names as parameters", () => {
  const result = validateInput(schema, { command: "x", toString: "y" });
  assertEquals(result.ok, false);
});
