import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { DEFAULT_BOOTSTRAP_TIMEOUT_MS, SkillRuntimeConfig } from "./config.ts";

Deno.test("SkillRuntimeConfig refuses bad variable names", () => {
  for (const name of ["", "1A", "A-B", "A B", "É", "A=B", "$A"]) {
    const error = assertThrows(
      () => new SkillRuntimeConfig({ env: { [name]: "x" } }),
      TypeError,
      "name must match [A-Za-z_][A-Za-z0-9_]*",
    );
    assertStringIncludes(error.message, JSON.stringify(name));
  }
  for (const name of ["A", "_a", "a_1", "PATH"]) {
    assertEquals(
      new SkillRuntimeConfig({ env: { [name]: "x" } }).env[name],
      "x",
    );
  }
});

Deno.test("SkillRuntimeConfig refuses null, undefined and non-string values", () => {
  for (const value of [null, undefined, 1, true, {}]) {
    assertThrows(
      () => new SkillRuntimeConfig({ env: { A: value as unknown as string } }),
      TypeError,
      'Cannot set environment variable "A": value must be a string',
    );
    assertThrows(
      () => SkillRuntimeConfig.builder().env("A", value as unknown as string),
      TypeError,
      "value must be a string",
    );
  }
  assertThrows(
    () =>
      SkillRuntimeConfig.builder().envs(
        null as unknown as Record<string, string>,
      ),
    TypeError,
    "expected an object, got null",
  );
});

Deno.test("SkillRuntimeConfig does not echo a mistyped value in its error", () => {
  const error = assertThrows(
    () =>
      new SkillRuntimeConfig({
        env: { PIN: 982451653 as unknown as string },
      }),
    TypeError,
  );
  assertEquals(
    error.message,
    'Cannot set environment variable "PIN": value must be a string, got number',
  );
});

Deno.test("SkillRuntimeConfig refuses blank commands and timeouts that are not positive", () => {
  for (const command of ["", "   ", "\n\t"]) {
    assertThrows(
      () => new SkillRuntimeConfig({ bootstrap: [command] }),
      TypeError,
      "Cannot add bootstrap command 1: command must not be blank",
    );
  }
  for (const timeoutMs of [0, -1, NaN, Infinity]) {
    assertThrows(
      () =>
        new SkillRuntimeConfig({
          bootstrap: ["ok", { command: "make", timeoutMs }],
        }),
      RangeError,
      "Cannot add bootstrap command 2: timeout must be a positive number of ms",
    );
    assertThrows(
      () => SkillRuntimeConfig.builder().bootstrap("make", timeoutMs),
      RangeError,
    );
  }
});

Deno.test("SkillRuntimeConfig keeps bootstrap order and the default timeout", () => {
  const config = SkillRuntimeConfig.builder().bootstrap("a").bootstrap("b", 5)
    .build();
  assertEquals(config.bootstrap, [
    { command: "a", timeoutMs: DEFAULT_BOOTSTRAP_TIMEOUT_MS },
    { command: "b", timeoutMs: 5 },
  ]);
  assertEquals(DEFAULT_BOOTSTRAP_TIMEOUT_MS, 120_000);
});

Deno.test("SkillRuntimeConfig lets a later value for the same name win", () => {
  const config = SkillRuntimeConfig.builder()
    .env("A", "1")
    .envs({ A: "2", B: "x" })
    .env("B", "y")
    .build();
  assertEquals(config.env, { A: "2", B: "y" });
});

Deno.test("SkillRuntimeConfig is immutable once built", () => {
  const env = { A: "1" };
  const bootstrap = ["one"];
  const builder = SkillRuntimeConfig.builder().envs(env);
  const config = new SkillRuntimeConfig({ env, bootstrap });
  const built = builder.build();
  env.A = "changed";
  bootstrap.push("two");
  builder.env("A", "later");
  assertEquals(config.env.A, "1");
  assertEquals(built.env.A, "1");
  assertEquals(config.bootstrap.length, 1);
  assert(Object.isFrozen(config.env) && Object.isFrozen(config.bootstrap));
  assert(Object.isFrozen(config.bootstrap[0]));
  assertThrows(() => {
    (config.env as Record<string, string>).A = "x";
  }, TypeError);
  assertThrows(() => {
    (config.bootstrap as unknown as string[]).push("x");
  }, TypeError);
});

Deno.test("SkillRuntimeConfig never reveals values through String, JSON or inspect", () => {
  const secret = "sk-live-0123456789";
  const config = new SkillRuntimeConfig({
    env: { API_KEY: secret, REGION: "eu-west" },
    bootstrap: [`curl -H "Authorization: ${secret}" https://example.com`],
  });
  const forms = [
    String(config),
    `${config}`,
    JSON.stringify(config),
    JSON.stringify({ nested: config }),
    Deno.inspect(config),
    Deno.inspect({ nested: config }, { depth: 10, showHidden: true }),
  ];
  for (const form of forms) {
    assertFalse(form.includes(secret), form);
    assertFalse(form.includes("eu-west"), form);
  }
  assertStringIncludes(String(config), "API_KEY, REGION");
  assertEquals(JSON.parse(JSON.stringify(config)), {
    env: ["API_KEY", "REGION"],
    bootstrapCommands: 1,
  });
});
