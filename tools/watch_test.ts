import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { buildSkillTools, type SkillsChange } from "./builder.ts";
import { tempDir, writeSkill } from "../tests/helpers/tools.ts";

/** Waits until `check` holds (polling), at most `ms`; returns the time taken. */
async function until(check: () => boolean, ms = 5000): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > ms) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - start;
}

Deno.test("buildSkillTools watch: a skill added, changed or removed is in kit.tools at the next read; close stops the watcher", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha", { files: { "run.sh": "echo one\n" } });
  const changes: SkillsChange[] = [];
  const kit = await buildSkillTools({
    skills: dir.path,
    watch: true,
    watchDebounceMs: 50,
    onChange: (change) => changes.push(change),
  });
  try {
    const enumOf = () =>
      (kit.tool("skill")!.inputSchema as unknown as {
        properties: { name: { enum: string[] } };
      }).properties.name.enum;
    assertEquals(enumOf(), ["alpha"]);
    const first = await kit.tool("skill")!.execute({ name: "alpha" });
    assertStringIncludes(first.text, "Instructions of alpha.");

    // Added.
    await writeSkill(dir.path, "beta");
    const added = await until(() => enumOf().includes("beta"));
    assert(added < 1000, `visible after ${added} ms`);
    assertEquals(changes.at(-1), { added: ["beta"], removed: [], changed: [] });

    // Changed while active: the next call gives the new instructions.
    await Deno.writeTextFile(
      `${dir.path}/alpha/SKILL.md`,
      "---\nname: alpha\ndescription: Test skill alpha.\n---\nNew steps of alpha.\n",
    );
    await until(() => changes.at(-1)?.changed.includes("alpha") ?? false);
    const next = await kit.tool("skill")!.execute({ name: "alpha" });
    assertStringIncludes(next.text, "New steps of alpha.");

    // A supporting file changed: the skill counts as changed.
    await Deno.writeTextFile(`${dir.path}/alpha/run.sh`, "echo two, longer\n");
    const count = changes.length;
    await until(() => changes.length > count);
    assertEquals(changes.at(-1)!.changed, ["alpha"]);

    // Removed.
    await Deno.remove(`${dir.path}/beta`, { recursive: true });
    await until(() => !enumOf().includes("beta"));
    assertEquals(kit.skills.map((s) => s.name), ["alpha"]);
  } finally {
    await kit.close();
  }
  // Closed: no more reloads.
  const count = changes.length;
  await writeSkill(dir.path, "gamma");
  await new Promise((resolve) => setTimeout(resolve, 300));
  assertEquals(changes.length, count);
});

Deno.test("buildSkillTools watch: skill_search follows the reload (a skill added is found, a removed one is not)", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  await writeSkill(dir.path, "beta");
  const changes: SkillsChange[] = [];
  await using kit = await buildSkillTools({
    skills: dir.path,
    watch: true,
    watchDebounceMs: 50,
    skillSearch: true,
    onChange: (change) => changes.push(change),
  });
  const search = async (query: string) =>
    (await kit.tool("skill_search")!.execute({ query })).text;
  assertEquals(
    (await search("zebra watercolour")).includes("zebra-paint"),
    false,
  );
  await writeSkill(dir.path, "zebra-paint", {
    description: "Paints zebras in watercolour.",
  });
  await until(() => changes.some((c) => c.added.includes("zebra-paint")));
  assertStringIncludes(await search("zebra watercolour"), "zebra-paint");
  await Deno.remove(`${dir.path}/zebra-paint`, { recursive: true });
  await until(() => changes.some((c) => c.removed.includes("zebra-paint")));
  assertEquals(
    (await search("zebra watercolour")).includes("zebra-paint"),
    false,
  );
});
