import {
  assert,
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "./config.ts";
import { SkillPreparationError } from "./errors.ts";
import { PreparationEngine } from "./prepare.ts";
import type { ExecuteRequest, ExecuteResult } from "./types.ts";
import type { Skill } from "../skill/types.ts";

function skill(name: string): Skill {
  return {
    name,
    description: `The ${name} skill`,
    basePath: `/src/${name}`,
    location: `/src/${name}/SKILL.md`,
    instructions: "",
    frontMatter: {},
    warnings: [],
  };
}

interface Recorded {
  command: string;
  cwd: string | undefined;
  env: Record<string, string>;
}

/**
 * A small recording runtime: it records every command with the environment it
 * would run with, and answers by the command's first word: `fail N` exits N,
 * `hang` times out, `slow` takes 20 ms, anything else succeeds.
 */
class RecordingRuntime {
  readonly engine: PreparationEngine;
  readonly ran: Recorded[] = [];
  readonly copies: string[] = [];
  failCopy = false;

  constructor() {
    this.engine = new PreparationEngine({
      materialize: (s) => {
        this.copies.push(s.name);
        if (this.failCopy) return Promise.reject(new Error("disk full"));
        return Promise.resolve({
          basePath: `/ws/skills/${s.name}`,
          bootstrap: true,
        });
      },
      run: (request) => this.execute(request),
    });
  }

  async execute(request: ExecuteRequest): Promise<ExecuteResult> {
    const env = { ...this.engine.environment(), ...request.env };
    this.ran.push({
      command: request.command,
      cwd: request.cwd,
      env,
    });
    const [word, arg] = request.command.split(" ");
    if (word === "slow") await new Promise((r) => setTimeout(r, 20));
    const timedOut = word === "hang";
    const exitCode = timedOut ? -1 : word === "fail" ? Number(arg) : 0;
    return {
      stdout: "",
      stderr: exitCode ? `error from ${request.command}` : "",
      exitCode,
      timedOut,
      aborted: false,
      stdoutBytes: 0,
      stderrBytes: 0,
      stdoutTruncated: false,
      stderrTruncated: false,
      durationMs: 0,
    };
  }
}

Deno.test("prepare() returns the skills in the request's number and order", async () => {
  const runtime = new RecordingRuntime();
  const [a, b] = [skill("a"), skill("b")];
  const prepared = await runtime.engine.prepare({
    skills: [{ skill: b }, { skill: a }, { skill: b }],
  });
  assertEquals(prepared.map((p) => p.name), ["b", "a", "b"]);
  assertEquals(prepared.map((p) => p.basePath), [
    "/ws/skills/b",
    "/ws/skills/a",
    "/ws/skills/b",
  ]);
  assertEquals(runtime.copies, ["b", "a"]);
});

Deno.test("prepare() runs bootstrap commands in order in the prepared base path", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    bootstrap: ["one", "two", { command: "three" }],
  });
  await runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] });
  assertEquals(runtime.ran.map((r) => r.command), ["one", "two", "three"]);
  assertEquals(
    runtime.ran.map((r) => r.cwd),
    Array(3).fill("/ws/skills/a"),
  );
});

Deno.test("prepare() merges environments in order: a skill prepared later wins", async () => {
  const runtime = new RecordingRuntime();
  const first = new SkillRuntimeConfig({
    env: { SHARED: "first", A: "a" },
    bootstrap: ["check"],
  });
  const second = new SkillRuntimeConfig({
    env: { SHARED: "second", B: "b" },
    bootstrap: ["check"],
  });
  await runtime.engine.prepare({
    skills: [{ skill: skill("a"), config: first }, {
      skill: skill("b"),
      config: second,
    }],
  });
  // The first bootstrap sees only its own skill's environment, the second both.
  assertEquals(runtime.ran[0]?.env, { SHARED: "first", A: "a" });
  assertEquals(runtime.ran[1]?.env, { SHARED: "second", A: "a", B: "b" });
  assertEquals(runtime.engine.environment(), {
    SHARED: "second",
    A: "a",
    B: "b",
  });
  // A request's own environment overrides everything.
  const result = await runtime.execute({
    command: "x",
    env: { SHARED: "request" },
  });
  assertEquals(result.exitCode, 0);
  assertEquals(runtime.ran.at(-1)?.env.SHARED, "request");
  // A later batch prepared in the other order: the already-prepared skill keeps its place.
  const third = new SkillRuntimeConfig({ env: { SHARED: "third" } });
  await runtime.engine.prepare({
    skills: [{ skill: skill("c"), config: third }],
  });
  assertEquals(runtime.engine.environment().SHARED, "third");
});

Deno.test("prepare() stops at the first failing bootstrap command and caches nothing", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    env: { TOKEN: "s3cret-token" },
    bootstrap: ["one", "fail 3", "never"],
  });
  const error = await assertRejects(
    () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    SkillPreparationError,
    'Cannot prepare skill "a": bootstrap command 2 of 3 exited with code 3',
  );
  assertEquals([
    error.skillName,
    error.exitCode,
    error.commandIndex,
    error.timedOut,
  ], [
    "a",
    3,
    1,
    false,
  ]);
  assertEquals(runtime.ran.map((r) => r.command), ["one", "fail 3"]);
  assertFalse(runtime.engine.isPrepared(skill("a")));
  assertEquals(
    runtime.engine.environment(),
    {},
    "a failed skill's environment is withdrawn",
  );
});

Deno.test("prepare() fails a bootstrap command that times out", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    bootstrap: [{ command: "hang", timeoutMs: 50 }, "never"],
  });
  const error = await assertRejects(
    () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    SkillPreparationError,
    "bootstrap command 1 of 2 timed out after 50 ms",
  );
  assert(error.timedOut);
  assertEquals(error.exitCode, -1);
  assertEquals(runtime.ran.length, 1);
});

Deno.test("prepare() retries after a failure and then succeeds", async () => {
  const runtime = new RecordingRuntime();
  const failing = new SkillRuntimeConfig({ bootstrap: ["fail 1"] });
  await assertRejects(() =>
    runtime.engine.prepare({ skills: [{ skill: skill("a"), config: failing }] })
  );
  const fixed = new SkillRuntimeConfig({
    env: { OK: "yes" },
    bootstrap: ["setup"],
  });
  const [prepared] = await runtime.engine.prepare({
    skills: [{ skill: skill("a"), config: fixed }],
  });
  assertEquals(prepared?.basePath, "/ws/skills/a");
  assertEquals(runtime.copies, ["a", "a"], "the retry materialises again");
  assertEquals(runtime.engine.environment(), { OK: "yes" });
  assert(runtime.engine.isPrepared(skill("a")));
});

Deno.test("prepare() wraps a failed copy with the skill's name and without secrets", async () => {
  const runtime = new RecordingRuntime();
  runtime.failCopy = true;
  const config = new SkillRuntimeConfig({ env: { KEY: "abcdef" } });
  const error = await assertRejects(
    () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    SkillPreparationError,
  );
  assertStringIncludes(error.message, 'Cannot prepare skill "a": disk full');
  assertInstanceOf(error.cause, Error);
});

Deno.test("prepare() keeps environment values out of bootstrap error messages", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    env: { API_KEY: "key-123456" },
    bootstrap: ["fail 2 key-123456"],
  });
  const error = await assertRejects(
    () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    SkillPreparationError,
  );
  assertFalse(error.message.includes("key-123456"), error.message);
  assertStringIncludes(error.message, "[redacted]");
});

Deno.test("prepare() runs a skill's bootstrap once for 20 concurrent calls", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({ bootstrap: ["slow"] });
  const results = await Promise.all(
    Array.from(
      { length: 20 },
      () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    ),
  );
  assertEquals(runtime.ran.length, 1);
  assertEquals(runtime.copies.length, 1);
  assertEquals(new Set(results.map(([p]) => p)).size, 1);
});

Deno.test("prepare() is idempotent and clear() forgets", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    env: { A: "1" },
    bootstrap: ["one"],
  });
  await runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] });
  await runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] });
  assertEquals(runtime.ran.length, 1);
  runtime.engine.clear();
  assertEquals(runtime.engine.environment(), {});
  assertFalse(runtime.engine.isPrepared(skill("a")));
  await runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] });
  assertEquals(runtime.ran.length, 2);
});

Deno.test("prepare() stops before starting when the signal is aborted", async () => {
  const runtime = new RecordingRuntime();
  const controller = new AbortController();
  controller.abort();
  await assertRejects(() =>
    runtime.engine.prepare({
      skills: [{ skill: skill("a") }],
      signal: controller.signal,
    })
  );
  assertEquals(runtime.copies, []);
});

Deno.test("prepare() skips bootstrap when the runtime says the skill is already bootstrapped", async () => {
  const ran: string[] = [];
  const engine = new PreparationEngine({
    materialize: (s) =>
      Promise.resolve({ basePath: s.basePath, bootstrap: false }),
    run: (request) => {
      ran.push(request.command);
      return Promise.reject(new Error("must not run"));
    },
  });
  const config = new SkillRuntimeConfig({
    env: { X: "1" },
    bootstrap: ["one"],
  });
  await engine.prepare({ skills: [{ skill: skill("a"), config }] });
  assertEquals(ran, []);
  assertEquals(engine.environment(), { X: "1" });
});

Deno.test("prepare() keeps a shared preparation going for the callers still waiting when the one that started it aborts", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({ bootstrap: ["slow", "slow"] });
  const controller = new AbortController();
  const first = runtime.engine.prepare({
    skills: [{ skill: skill("a"), config }],
    signal: controller.signal,
  });
  const second = runtime.engine.prepare({
    skills: [{ skill: skill("a"), config }],
  });
  setTimeout(() => controller.abort(), 5);
  await assertRejects(() => first);
  const [prepared] = await second;
  assertEquals(prepared?.basePath, "/ws/skills/a");
  assert(runtime.engine.isPrepared(skill("a")));
  // One run, not stopped: the second caller still waited for it.
  assertEquals(runtime.ran.map((r) => r.command), ["slow", "slow"]);
});

Deno.test("prepare() stops a preparation when its last caller leaves, keeps nothing, and starts afresh", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({ bootstrap: ["slow", "slow"] });
  const controller = new AbortController();
  const only = runtime.engine.prepare({
    skills: [{ skill: skill("a"), config }],
    signal: controller.signal,
  });
  setTimeout(() => controller.abort(), 5);
  await assertRejects(() => only);
  assert(!runtime.engine.isPrepared(skill("a")));
  const [prepared] = await runtime.engine.prepare({
    skills: [{ skill: skill("a"), config }],
  });
  assertEquals(prepared?.basePath, "/ws/skills/a");
  // The first run stopped after its first command; the next ran both.
  assertEquals(runtime.ran.map((r) => r.command), ["slow", "slow", "slow"]);
});

Deno.test("prepare() fails every caller when the shared preparation fails on its own", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({ bootstrap: ["slow", "fail 4"] });
  const calls = [0, 1, 2].map(() =>
    runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] })
  );
  for (const call of calls) {
    await assertRejects(
      () => call,
      SkillPreparationError,
      "exited with code 4",
    );
  }
  assertEquals(runtime.ran.length, 2, "one shared run, no retries");
});

Deno.test("prepare() refuses a different configuration for a prepared skill instead of ignoring it", async () => {
  const runtime = new RecordingRuntime();
  const config = new SkillRuntimeConfig({
    env: { A: "1" },
    bootstrap: ["one"],
  });
  await runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] });
  // The same content in another object, or no configuration at all: idempotent.
  const same = new SkillRuntimeConfig({ env: { A: "1" }, bootstrap: ["one"] });
  await runtime.engine.prepare({
    skills: [{ skill: skill("a"), config: same }],
  });
  await runtime.engine.prepare({ skills: [{ skill: skill("a") }] });
  const other = new SkillRuntimeConfig({ env: { A: "2" }, bootstrap: ["one"] });
  const error = await assertRejects(
    () =>
      runtime.engine.prepare({
        skills: [{ skill: skill("a"), config: other }],
      }),
    SkillPreparationError,
    'Cannot prepare skill "a": it is already prepared in this runtime with a different configuration',
  );
  assertFalse(error.message.includes("2"), "no value in the message");
  assertEquals(runtime.ran.length, 1);
  assertEquals(runtime.engine.environment(), { A: "1" });
});

Deno.test("prepare() redacts a bootstrap's output before cutting it to its tail", async () => {
  const runtime = new RecordingRuntime();
  const secret = "key-ABCDEFGHIJ";
  // The tail of 2000 characters would start inside the secret.
  const config = new SkillRuntimeConfig({
    env: { API_KEY: secret },
    bootstrap: [`fail 2 ${secret}${"x".repeat(1995)}`],
  });
  const error = await assertRejects(
    () => runtime.engine.prepare({ skills: [{ skill: skill("a"), config }] }),
    SkillPreparationError,
  );
  for (let k = 3; k <= secret.length; k++) {
    assertFalse(
      error.message.includes(`\n${secret.slice(secret.length - k)}x`),
      error.message.slice(0, 200),
    );
  }
  assertStringIncludes(error.message, "xxxx");
});
