import {
  assert,
  assertEquals,
  assertFalse,
  assertLessOrEqual,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { loadSkills } from "../skill/load.ts";
import { buildSkillTools } from "./builder.ts";
import type { Tool } from "./types.ts";
import { tempDir } from "../tests/helpers/tools.ts";
import { manySkills, writeManySkills } from "./testdata/many_skills.ts";

const BUDGET = 8_000;

/** What a tool definition costs in a request: its name, description and schema. */
function definitionChars(tool: Tool): number {
  return tool.name.length + tool.description.length +
    JSON.stringify(tool.inputSchema).length;
}

function skillToolChars(tool: Tool): number {
  return tool.description.length + JSON.stringify(tool.inputSchema).length;
}

function enumOf(tool: Tool): unknown[] | undefined {
  return tool.inputSchema.properties.name!.enum as unknown[] | undefined;
}

function listedNames(tool: Tool): string[] {
  return [...tool.description.matchAll(/<name>([^<]*)<\/name>/g)].map((m) =>
    m[1]!
  );
}

for (const count of [10, 100, 1_000, 9_000]) {
  Deno.test(`the skill tool's description and schema stay within the default budget with ${count} skills`, async () => {
    await using runtime = new LocalSkillRuntime();
    await using set = await buildSkillTools({
      skills: manySkills(count),
      runtime,
    });
    const skill = set.tool("skill")!;
    assertLessOrEqual(skillToolChars(skill), BUDGET);
    const listed = listedNames(skill);
    if (count === 10) {
      assertEquals(listed.length, 10);
      assertEquals(set.tool("skill_search"), undefined);
    } else {
      assert(listed.length > 5 && listed.length < count, `${listed.length}`);
      assertStringIncludes(
        skill.description,
        `${
          count - listed.length
        } more skills are not listed here: find them with the skill_search tool`,
      );
      assertEquals(skill.inputSchema.properties.name!.enum, undefined);
      assert(set.tool("skill_search"));
    }
    // Every tool's definition together: bounded whatever the count (1.4
    // million characters for 9,000 skills before the budget).
    const total = set.tools.reduce(
      (sum, tool) => sum + definitionChars(tool),
      0,
    );
    assertLessOrEqual(total, 20_000);
  });
}

Deno.test("a small catalog is listed whole with an enum of its names, and no skill_search", async () => {
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(10);
  await using set = await buildSkillTools({ skills, runtime });
  const skill = set.tool("skill")!;
  const names = skills.map((s) => s.name).sort();
  assertEquals(skill.inputSchema.properties.name!.enum, names);
  assertEquals(listedNames(skill), names);
  assertFalse(skill.description.includes("not listed here"));
  for (const s of skills) {
    assertStringIncludes(skill.description, s.description);
  }
  assertEquals(set.tools.map((t) => t.name).includes("skill_search"), false);
  const unknown = await skill.execute({ name: "nope" });
  assert(unknown.isError);
  assertStringIncludes(unknown.text, 'must be one of "');
});

Deno.test("a skill outside the listing is loaded by its name, then joins the listing", async () => {
  await using dir = await tempDir();
  await writeManySkills(dir.path, 200);
  const { skills } = await loadSkills(dir.path);
  await using runtime = new LocalSkillRuntime({ cwd: dir.path });
  await using set = await buildSkillTools({ skills, runtime });
  const skill = set.tool("skill")!;
  const before = listedNames(skill);
  const outside = skills.find((s) => !before.includes(s.name))!;
  assert(outside, "some skill is outside the listing");
  const result = await skill.execute({ name: outside.name });
  assertEquals(result.isError, false, result.text);
  assertStringIncludes(result.text, `Skill "${outside.name}" is ready`);
  assertStringIncludes(result.text, outside.instructions.trim());
  // Used most recently: now listed, and the whole still within the budget.
  const after = listedNames(skill);
  assert(after.includes(outside.name), "the skill called joined the listing");
  assertEquals(after.length, before.length);
  assertLessOrEqual(skillToolChars(skill), BUDGET);
  // Calling a listed skill again changes nothing (the description stays as
  // a prompt cache saw it).
  const description = skill.description;
  assertEquals(
    (await skill.execute({ name: outside.name })).isError,
    false,
  );
  assertEquals(skill.description, description);
});

Deno.test("an unknown name is answered with the closest names", async () => {
  await using runtime = new LocalSkillRuntime();
  await using set = await buildSkillTools({
    skills: manySkills(1_000),
    runtime,
  });
  const skill = set.tool("skill")!;
  const typo = await skill.execute({ name: "invoice-chrt" });
  assert(typo.isError);
  assertStringIncludes(typo.text, 'Unknown skill "invoice-chrt"');
  assertStringIncludes(typo.text, "The closest names: invoice-chart");
  assertStringIncludes(typo.text, "skill_search finds skills");
  const prefix = await skill.execute({ name: "spreadsheet-calend" });
  assertStringIncludes(prefix.text, "spreadsheet-calendar");
  const nothing = await skill.execute({ name: "zzzz" });
  assertStringIncludes(nothing.text, "No skill has a name close to it.");
});

Deno.test("priority names are listed first, in their order", async () => {
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(500);
  // Without priority the first skills of the set's order are listed.
  await using plain = await buildSkillTools({ skills, runtime });
  const order = plain.skills.map((s) => s.name);
  const plainListed = listedNames(plain.tool("skill")!);
  assert(plainListed.includes(order[0]!));
  const wanted = [order[499]!, order[321]!];
  for (const name of wanted) assertFalse(plainListed.includes(name), name);
  await using set = await buildSkillTools({
    skills,
    runtime,
    priority: wanted,
  });
  const listed = listedNames(set.tool("skill")!);
  for (const name of wanted) assert(listed.includes(name), name);
  assertLessOrEqual(Math.abs(listed.length - plainListed.length), 1);
});

Deno.test("catalogBudget sets the bound; a budget too small for the tool's own text, a bad one, or an unknown priority name is refused", async () => {
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(100);
  for (const budget of [3_000, 8_000, 20_000]) {
    await using set = await buildSkillTools({
      skills,
      runtime,
      catalogBudget: budget,
    });
    const skill = set.tool("skill")!;
    assertLessOrEqual(skillToolChars(skill), budget);
    // Less than one more entry left unused.
    assertLessOrEqual(budget - skillToolChars(skill), 400);
  }
  await using whole = await buildSkillTools({
    skills,
    runtime,
    catalogBudget: 1_000_000,
  });
  assertEquals(
    enumOf(whole.tool("skill")!)?.length,
    100,
  );
  await assertRejects(
    () => buildSkillTools({ skills, runtime, catalogBudget: 300 }),
    RangeError,
    'Cannot build the skill tool with catalogBudget "300": the tool\'s own text takes',
  );
  await assertRejects(
    () => buildSkillTools({ skills, runtime, catalogBudget: 0 }),
    RangeError,
    'Cannot build the skill tool with catalogBudget "0": it must be a positive integer',
  );
  await assertRejects(
    () => buildSkillTools({ skills, runtime, priority: ["nope"] }),
    RangeError,
    'Cannot give priority to skill "nope": no such skill',
  );
  await assertRejects(
    // @ts-expect-error: a wrong type, as from JavaScript
    () => buildSkillTools({ skills, runtime, skillSearch: "yes" }),
    TypeError,
    "skillSearch must be true or false",
  );
});

Deno.test("skillSearch: true offers skill_search with a small catalog; false leaves it out of a large one", async () => {
  await using runtime = new LocalSkillRuntime();
  await using small = await buildSkillTools({
    skills: manySkills(5),
    runtime,
    skillSearch: true,
  });
  assertEquals(small.tools.slice(0, 2).map((t) => t.name), [
    "skill",
    "skill_search",
  ]);
  assertEquals(
    enumOf(small.tool("skill")!)?.length,
    5,
  );
  await using large = await buildSkillTools({
    skills: manySkills(300),
    runtime,
    skillSearch: false,
  });
  assertEquals(large.tool("skill_search"), undefined);
  assertStringIncludes(
    large.tool("skill")!.description,
    "not listed here; this tool loads any of them by its exact name.",
  );
  const unknown = await large.tool("skill")!.execute({ name: "nope" });
  assertFalse(unknown.text.includes("skill_search"));
  // A tools list without skill_search: not offered either.
  await using listed = await buildSkillTools({
    skills: manySkills(300),
    runtime,
    tools: ["skill", "bash"],
  });
  assertEquals(listed.tools.map((t) => t.name), ["skill", "bash"]);
});

Deno.test("a description function over the budget is given fewer skills until the whole fits", async () => {
  await using runtime = new LocalSkillRuntime();
  await using set = await buildSkillTools({
    skills: manySkills(300),
    runtime,
    catalogBudget: 5_000,
    // Repeats the catalog: grows twice as fast as a template would.
    skillDescription: ({ catalog }) =>
      `Skills:\n${catalog}\nAgain:\n${catalog}`,
  });
  const skill = set.tool("skill")!;
  assertLessOrEqual(skillToolChars(skill), 5_000);
  assert(listedNames(skill).length > 2);
});

Deno.test("each listed description is cut at 1,536 characters, the others whole", async () => {
  await using runtime = new LocalSkillRuntime();
  const [first, ...rest] = manySkills(3);
  const long = `Start of the long one. ${"word ".repeat(1_000)}End.`;
  const skills = [{ ...first!, description: long }, ...rest];
  await using set = await buildSkillTools({
    skills,
    runtime,
    catalogBudget: 100_000,
  });
  const skill = set.tool("skill")!;
  const shown = new Map(
    [
      ...skill.description.matchAll(
        /<name>([^<]*)<\/name>\s*<description>([^<]*)<\/description>/g,
      ),
    ].map((m) => [m[1]!, m[2]!]),
  );
  const cut = shown.get(first!.name)!;
  assertLessOrEqual([...cut].length, 1_536);
  assert([...cut].length > 1_400, `${[...cut].length}`);
  assert(cut.startsWith("Start of the long one."));
  assertFalse(cut.includes("End."));
  for (const other of rest) {
    assertEquals(shown.get(other.name), other.description);
  }
  // Listed whole: still an enum.
  assertEquals(enumOf(skill)?.length, 3);
});
