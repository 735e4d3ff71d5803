import {
  assertEquals,
  assertFalse,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { UsageError } from "./_args.ts";
import { readConfigFile } from "./_config.ts";

async function withFile(
  content: string,
  fn: (path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const path = hostPath.join(dir, "config.json");
    await Deno.writeTextFile(path, content);
    await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("readConfigFile() reads each skill's environment and bootstrap commands", async () => {
  await withFile(
    JSON.stringify({
      " csv-report ": {
        env: { REPORT_TITLE: "Sales", TOKEN: "s3cret" },
        bootstrap: ["bash scripts/bootstrap.sh", {
          command: "make",
          timeoutMs: 5000,
        }],
      },
      other: {},
    }),
    async (path) => {
      const configs = await readConfigFile(path);
      assertEquals([...configs.keys()], ["csv-report", "other"]);
      const config = configs.get("csv-report")!;
      assertEquals(config.env, { REPORT_TITLE: "Sales", TOKEN: "s3cret" });
      assertEquals(config.bootstrap, [
        { command: "bash scripts/bootstrap.sh", timeoutMs: 120_000 },
        { command: "make", timeoutMs: 5000 },
      ]);
      assertEquals(configs.get("other")!.bootstrap, []);
    },
  );
});

Deno.test("readConfigFile() refuses bad files with messages naming the file and the skill, never a value", async () => {
  const cases: [string, string][] = [
    ["{not json", "not valid JSON"],
    // V8 quotes the text around an unexpected token: a value must not leak.
    ['{"a": {"env": {"TOKEN": s3cret-value}}}', "not valid JSON"],
    ['{"a": {"env": {"TOKEN": "s3cret-value" s3cret}}}', "not valid JSON"],
    ['{"a": {"env": {"TOKEN": "s3cret\u0001"}}}', "not valid JSON"],
    ["[]", "expected an object of skill names"],
    ['{"a": "x"}', 'skill "a" must be an object with "env" and "bootstrap"'],
    ['{"a": {"envs": {}}}', 'skill "a" has unknown field "envs"'],
    ['{"a": {"env": ["s3cret"]}}', 'skill "a": "env" must be an object'],
    ['{"a": {"env": {"1BAD": "s3cret"}}}', "[A-Za-z_][A-Za-z0-9_]*"],
    ['{"a": {"env": {"TOKEN": 42}}}', "value must be a string"],
    ['{"a": {"bootstrap": "make"}}', '"bootstrap" must be a list of commands'],
    ['{"a": {"bootstrap": ["  "]}}', "command must not be blank"],
    [
      '{"a": {"bootstrap": [{"command": "make", "timeoutMs": 0}]}}',
      "timeout must be a positive number",
    ],
  ];
  for (const [content, expected] of cases) {
    await withFile(content, async (path) => {
      const error = await assertRejects(
        () => readConfigFile(path),
        UsageError,
      );
      assertStringIncludes(error.message, `Cannot read config "${path}"`);
      assertStringIncludes(error.message, expected);
      assertFalse(error.message.includes("s3cret"), error.message);
    });
  }
});

Deno.test("readConfigFile() names a missing file", async () => {
  await assertRejects(
    () => readConfigFile("/no/such/config.json"),
    UsageError,
    'Cannot read config "/no/such/config.json": no such file',
  );
});
