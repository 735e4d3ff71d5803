import {
  assert,
  assertEquals,
  assertRejects,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { loadSkills } from "../skill/load.ts";
import { createToolContext, DEFAULT_TOOL_LIMITS } from "./context.ts";
import { createReadTool } from "./read.ts";
import { tempDir, writeSkill } from "../tests/helpers/tools.ts";

Deno.test("createToolContext() merges limits and refuses bad ones", () => {
  const runtime = new LocalSkillRuntime();
  const context = createToolContext(runtime, {
    limits: { grepOutputChars: 10 },
  });
  assertEquals(context.limits, { ...DEFAULT_TOOL_LIMITS, grepOutputChars: 10 });
  assertThrows(
    () => createToolContext(runtime, { limits: { readMaxBytes: 0 } }),
    RangeError,
    'Cannot use limit readMaxBytes "0": it must be a positive integer',
  );
});

Deno.test("the context's secrets hold every configuration's values", async () => {
  const runtime = new LocalSkillRuntime();
  const config = new SkillRuntimeConfig({ env: { TOKEN: "tok-123456" } });
  const context = createToolContext(runtime, {
    configs: new Map([["x", config]]),
  });
  assert(context.secrets().includes("tok-123456"));
  await runtime.close();
});

Deno.test("the configured secrets are still redacted when the runtime cannot give its environment", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/env.txt`, "TOKEN=tok-123456\n");
  await using real = new LocalSkillRuntime({ cwd: dir.path });
  const runtime: SkillRuntime = {
    name: real.name,
    cwd: real.cwd,
    fs: real.fs,
    prepare: (request) => real.prepare(request),
    execute: (request) => real.execute(request),
    environment: () => {
      throw new Error("Cannot read the environment: the runtime is busy");
    },
    close: () => real.close(),
    [Symbol.asyncDispose]: () => real.close(),
  };
  const context = createToolContext(runtime, {
    configs: new Map([[
      "x",
      new SkillRuntimeConfig({ env: { TOKEN: "tok-123456" } }),
    ]]),
  });
  assertEquals(context.secrets(), ["tok-123456"]);
  const read = createReadTool(context);
  const { text } = await read.execute({ file_path: "env.txt" });
  assert(text.endsWith("1\tTOKEN=[redacted]"), text);
});

Deno.test("prepare: a caller that aborts leaves, the others still get the skill", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(dir.path, "slow");
  const { skills } = await loadSkills(dir.path);
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const config = new SkillRuntimeConfig({
    bootstrap: ["sleep 0.6; echo done >> runs.log"],
  });
  const context = createToolContext(runtime, {
    skills,
    configs: new Map([["slow", config]]),
  });
  const controller = new AbortController();
  const leaving = context.prepare(skills[0]!, { signal: controller.signal });
  const staying = context.prepare(skills[0]!);
  setTimeout(() => controller.abort(), 100);
  await assertRejects(() => leaving);
  const prepared = await staying;
  assertEquals(prepared.basePath, folder);
  assertEquals(await Deno.readTextFile(`${folder}/runs.log`), "done\n");
  // Prepared once: a later call answers at once without a second bootstrap.
  assertEquals((await context.prepare(skills[0]!)).basePath, folder);
  assertEquals(await Deno.readTextFile(`${folder}/runs.log`), "done\n");
  await runtime.close();
});

Deno.test("prepare: when every caller aborts, the preparation stops and is not kept", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(dir.path, "slow");
  const { skills } = await loadSkills(dir.path);
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const config = new SkillRuntimeConfig({
    bootstrap: ["sleep 2; echo done >> runs.log"],
  });
  const context = createToolContext(runtime, {
    skills,
    configs: new Map([["slow", config]]),
  });
  const controller = new AbortController();
  const started = Date.now();
  const waiting = context.prepare(skills[0]!, { signal: controller.signal });
  setTimeout(() => controller.abort(), 200);
  await assertRejects(() => waiting);
  assert(Date.now() - started < 1_500);
  // The bootstrap was stopped: nothing is written once its sleep would be over.
  await new Promise((resolve) =>
    setTimeout(resolve, 2_500 - (Date.now() - started))
  );
  assertEquals(await Deno.stat(`${folder}/runs.log`).catch(() => null), null);
  await runtime.close();
});
