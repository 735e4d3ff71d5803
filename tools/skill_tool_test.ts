import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { loadSkills } from "../skill/load.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import type { PreparedSkill, SkillRuntime } from "../runtimes/types.ts";
import { buildSkillTools } from "./builder.ts";
import { createToolContext } from "./context.ts";
import { createSkillTool, DEFAULT_SKILL_DESCRIPTION } from "./skill_tool.ts";
import {
  conversationContext,
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
  writeSkill,
} from "../tests/helpers/tools.ts";

testEachRuntime("createSkillTool() gives no tool without skills", () => {
  assertEquals(createSkillTool(plainContext("/").context), undefined);
});

testEachRuntime(
  "the skill tool in a conversation lists the copy's files, bootstrap outputs included, heavy folders named only",
  async () => {
    await using dir = await tempDir();
    await writeSkill(`${dir.path}/skills`, "gen", {
      files: { "scripts/run.sh": "echo hi\n" },
    });
    const { skills } = await loadSkills(onHost(`${dir.path}/skills`));
    const { context, workspace } = await conversationContext(dir.path, {
      skills,
      configs: new Map([[
        "gen",
        new SkillRuntimeConfig({
          bootstrap: [
            "mkdir -p cache node_modules/pkg && touch cache/index node_modules/pkg/index.js",
          ],
        }),
      ]]),
    });
    const tool = createSkillTool(context)!;
    const result = await tool.execute({ name: "gen" });
    assertEquals(result.isError, false, result.text);
    const base = /Base directory: (.*)\n/.exec(result.text)?.[1] ?? "";
    assert(base.startsWith(`${workspace}/skills/`), base);
    assert(
      result.text.endsWith(
        "Files (3):\nSKILL.md\ncache/index\nscripts/run.sh\nNot listed (heavy folders): node_modules/",
      ),
      result.text,
    );
  },
);

testEachRuntime(
  "the skill tool reports a cancelled preparation and retries later",
  async () => {
    await using dir = await tempDir();
    await writeSkill(dir.path, "slow");
    const { skills } = await loadSkills(onHost(dir.path));
    const { context } = plainContext(dir.path, {
      skills,
      configs: new Map([[
        "slow",
        new SkillRuntimeConfig({ bootstrap: ["sleep 0.5"] }),
      ]]),
    });
    const tool = createSkillTool(context)!;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const cancelled = await tool.execute({ name: "slow" }, {
      signal: controller.signal,
    });
    assertEquals(cancelled, {
      text:
        "Cancelled: the call was aborted\nThe skill is not ready; calling skill again retries the preparation.",
      isError: true,
    });
    const retried = await tool.execute({ name: "slow" });
    assertEquals(retried.isError, false, retried.text);
  },
);

testEachRuntime(
  "the default description names the runtime and the rule to use only these tools",
  async () => {
    await using dir = await tempDir();
    await writeSkill(dir.path, "one");
    const { skills } = await loadSkills(onHost(dir.path));
    const { context, runtime } = plainContext(dir.path, { skills });
    const tool = createSkillTool(context, { toolNames: ["bash", "read"] })!;
    assertStringIncludes(DEFAULT_SKILL_DESCRIPTION, "{catalog}");
    assertStringIncludes(tool.description, `in the "${runtime.name}" runtime`);
    assertStringIncludes(
      tool.description,
      "working only through the tools given with this one (bash, read)",
    );
    assertStringIncludes(tool.description, "<name>one</name>");
  },
);

testEachRuntime("a description function must return a string", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "one");
  const { skills } = await loadSkills(onHost(dir.path));
  assertThrows(
    () =>
      createSkillTool(plainContext(dir.path, { skills }).context, {
        description: (() => 3) as never,
      }),
    TypeError,
    "Cannot describe the skill tool: the description function returned number, not a string",
  );
});

testEachRuntime("the skill tool refuses unknown parameters", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "one");
  const { skills } = await loadSkills(onHost(dir.path));
  const tool = createSkillTool(plainContext(dir.path, { skills }).context)!;
  assertEquals(await tool.execute({ name: "one", args: "x" }), {
    text: 'Invalid input: Unknown parameter "args": expected one of name',
    isError: true,
  });
});

testEachRuntime(
  "the skill tool's catalog never shows a configured value",
  async () => {
    await using dir = await tempDir();
    const secret = "catalog-secret-42x";
    await writeSkill(`${dir.path}/skills`, "leaky", {
      description: `Uses ${secret} to call the service.`,
    });
    const { skills } = await loadSkills(onHost(`${dir.path}/skills`));
    const { context } = plainContext(dir.path, {
      skills,
      configs: new Map([[
        "leaky",
        new SkillRuntimeConfig({ env: { SERVICE_KEY: secret } }),
      ]]),
    });
    const tool = createSkillTool(context)!;
    assert(!tool.description.includes("catalog-secret"), tool.description);
    assertStringIncludes(
      tool.description,
      "Uses [redacted] to call the service.",
    );
  },
);

/**
 * A user's own runtime that caches nothing: every `prepare` call is counted
 * (per skill), waits a little, and fails while `failing` holds the skill.
 */
function countingRuntime(cwd: string): {
  runtime: SkillRuntime;
  calls: Map<string, number>;
  failing: Set<string>;
} {
  const real = new LocalSkillRuntime({ cwd });
  const calls = new Map<string, number>();
  const failing = new Set<string>();
  const runtime: SkillRuntime = {
    name: "counting",
    cwd: real.cwd,
    fs: real.fs,
    async prepare(request) {
      const prepared: PreparedSkill[] = [];
      for (const { skill } of request.skills) {
        calls.set(skill.name, (calls.get(skill.name) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (failing.has(skill.name)) {
          throw new Error(`Cannot prepare skill "${skill.name}": no network`);
        }
        prepared.push({ name: skill.name, basePath: skill.basePath, skill });
      }
      return prepared;
    },
    execute: (request) => real.execute(request),
    environment: () => real.environment(),
    close: () => real.close(),
    [Symbol.asyncDispose]: () => real.close(),
  };
  return { runtime, calls, failing };
}

Deno.test("the skill tool prepares each skill once per tool kit with a runtime that does not cache", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  await writeSkill(dir.path, "beta");
  const { runtime, calls } = countingRuntime(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path, runtime });
  const skill = kit.tool("skill")!;
  const seen = new Set<string>();
  for (const name of ["alpha", "beta", "alpha", "alpha", "beta"]) {
    const result = await skill.execute({ name });
    assertEquals(result.isError, false, result.text);
    // The instructions once; later calls answer that the skill is active.
    if (seen.has(name)) {
      assertStringIncludes(result.text, `Skill "${name}" is already active`);
      assert(!result.text.includes(`Instructions of ${name}.`));
    } else {
      assertStringIncludes(result.text, `Instructions of ${name}.`);
    }
    seen.add(name);
  }
  assertEquals(Object.fromEntries(calls), { alpha: 1, beta: 1 });
  // Another tool kit on the same runtime has its own cache.
  await using other = await buildSkillTools({ skills: dir.path, runtime });
  await other.tool("skill")!.execute({ name: "alpha" });
  await other.tool("skill")!.execute({ name: "alpha" });
  assertEquals(Object.fromEntries(calls), { alpha: 2, beta: 1 });
  await runtime.close();
});

Deno.test("concurrent skill calls for one skill share one prepare call", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  await writeSkill(dir.path, "beta");
  const { runtime, calls } = countingRuntime(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path, runtime });
  const skill = kit.tool("skill")!;
  const results = await Promise.all(
    ["alpha", "alpha", "beta", "alpha", "beta"].map((name) =>
      skill.execute({ name })
    ),
  );
  for (const result of results) assertEquals(result.isError, false);
  assertEquals(Object.fromEntries(calls), { alpha: 1, beta: 1 });
  await runtime.close();
});

Deno.test("a failed preparation is not cached by the tools: the next skill call retries", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  const { runtime, calls, failing } = countingRuntime(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path, runtime });
  const skill = kit.tool("skill")!;
  failing.add("alpha");
  const failed = await Promise.all([
    skill.execute({ name: "alpha" }),
    skill.execute({ name: "alpha" }),
  ]);
  for (const result of failed) {
    assertEquals(result.isError, true);
    assertStringIncludes(result.text, "no network");
  }
  assertEquals(calls.get("alpha"), 1);
  failing.delete("alpha");
  const retried = await skill.execute({ name: "alpha" });
  assertEquals(retried.isError, false, retried.text);
  assertEquals(calls.get("alpha"), 2);
  await skill.execute({ name: "alpha" });
  assertEquals(calls.get("alpha"), 2);
  await runtime.close();
});

Deno.test("a caller that retries as soon as a preparation failed gets a new preparation", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  const { skills } = await loadSkills(onHost(dir.path));
  const { runtime, calls, failing } = countingRuntime(dir.path);
  const context = createToolContext(runtime, { skills });
  failing.add("alpha");
  const first = context.prepare(skills[0]!);
  // Retries in the failure's own reaction, before anything else runs.
  const retried = first.catch(() => {
    failing.delete("alpha");
    return context.prepare(skills[0]!);
  });
  assertEquals((await retried).name, "alpha");
  assertEquals(calls.get("alpha"), 2);
  await runtime.close();
});
testEachRuntime(
  "the catalog shows each skill where the runtime prepares it, never its host source",
  async () => {
    await using dir = await tempDir();
    const source = onHost(await writeSkill(`${dir.path}/skills`, "where"));
    const { skills } = await loadSkills(onHost(`${dir.path}/skills`));
    const { context, workspace } = await conversationContext(dir.path, {
      skills,
    });
    const tool = createSkillTool(context)!;
    const location = /<location>(.*)<\/location>/.exec(tool.description)?.[1];
    assert(location !== undefined, tool.description);
    assertFalse(location.startsWith(source), location);
    assert(location.startsWith(`${workspace}/skills/`), location);
    // The path shown is the one the prepared skill's SKILL.md then has.
    const result = await tool.execute({ name: "where" });
    assertEquals(result.isError, false, result.text);
    const base = /Base directory: (.*)\n/.exec(result.text)?.[1] ?? "";
    assertEquals(location, `${base}/SKILL.md`);
    assertStringIncludes(
      await context.runtime.fs.readText(location, { maxBytes: 4096 }),
      "name: where",
    );
  },
);

testEachRuntime(
  "the catalog of a runtime without a workspace shows the path its commands see",
  async () => {
    await using dir = await tempDir();
    await writeSkill(`${dir.path}/skills`, "here");
    const { skills } = await loadSkills(onHost(`${dir.path}/skills`));
    const { context } = plainContext(dir.path, { skills });
    const tool = createSkillTool(context)!;
    const location = /<location>(.*)<\/location>/.exec(tool.description)?.[1];
    const result = await tool.execute({ name: "here" });
    assertEquals(result.isError, false, result.text);
    const base = /Base directory: (.*)\n/.exec(result.text)?.[1] ?? "";
    assertEquals(location, `${base}/SKILL.md`);
  },
);
