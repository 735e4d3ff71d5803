import {
  assert,
  assertEquals,
  assertGreaterOrEqual,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { buildSkillTools } from "./builder.ts";
import {
  manySkillName,
  manySkillQuery,
  manySkills,
} from "./testdata/many_skills.ts";

function answeredNames(text: string): string[] {
  return [...text.matchAll(/^\d+\. (\S+)$/gm)].map((m) => m[1]!);
}

Deno.test("skill_search puts the described skill in its first 3 answers for at least 95% of queries over 9,000 skills", async () => {
  await using runtime = new LocalSkillRuntime();
  await using set = await buildSkillTools({
    skills: manySkills(9_000),
    runtime,
  });
  const search = set.tool("skill_search")!;
  let found = 0;
  const queries = 900;
  for (let k = 0; k < queries; k++) {
    const i = k * 10 + (k % 10);
    const result = await search.execute({
      query: manySkillQuery(i),
      limit: 3,
    });
    assertEquals(result.isError, false, result.text);
    const names = answeredNames(result.text);
    assert(names.length <= 3);
    if (names.includes(manySkillName(i))) found++;
  }
  assertGreaterOrEqual(found / queries, 0.95, `${found} of ${queries}`);
});

Deno.test("skill_search answers names and descriptions, best first, and says when nothing matches", async () => {
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(200);
  await using set = await buildSkillTools({ skills, runtime });
  const search = set.tool("skill_search")!;
  const result = await search.execute({ query: "invoice and calendar" });
  const names = answeredNames(result.text);
  assertEquals(names[0], "invoice-calendar");
  assertEquals(names.length, 5);
  assertStringIncludes(result.text, "(200 skills searched)");
  assertStringIncludes(
    result.text,
    `   ${skills.find((s) => s.name === "invoice-calendar")!.description}`,
  );
  assertStringIncludes(result.text, 'e.g. {"name":"invoice-calendar"}');
  const none = await search.execute({ query: "qwertyuiop" });
  assertEquals(none.isError, false);
  assertStringIncludes(none.text, 'No skill matches "qwertyuiop"');
  const bad = await search.execute({ query: "x", limit: 0 });
  assert(bad.isError);
  assertStringIncludes(bad.text, 'Parameter "limit" must be at least 1');
  const empty = await search.execute({ query: "" });
  assert(empty.isError);
});

Deno.test("skill_search keeps configured values out of its answers", async () => {
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(150).map((s, i) =>
    i === 7 ? { ...s, description: `${s.description} Token s3cr3t-value.` } : s
  );
  await using set = await buildSkillTools({
    skills,
    runtime,
    configs: { [skills[7]!.name]: { env: { TOKEN: "s3cr3t-value" } } },
  });
  const result = await set.tool("skill_search")!.execute({
    query: skills[7]!.name.replace("-", " "),
  });
  assertStringIncludes(result.text, skills[7]!.name);
  assert(!result.text.includes("s3cr3t-value"), result.text);
  assert(!set.tool("skill")!.description.includes("s3cr3t-value"));
});

Deno.test("tool sets over the same skills share one index; skills reloaded get their own", async () => {
  const { skillIndexOf } = await import("../skill/skill_index.ts");
  await using runtime = new LocalSkillRuntime();
  const skills = manySkills(120);
  // Each build copies the list (as the MCP HTTP handler's sessions do).
  await using one = await buildSkillTools({ skills, runtime });
  await using two = await buildSkillTools({ skills, runtime });
  assert(one.context.skills !== two.context.skills);
  assert(skillIndexOf(one.context.skills) === skillIndexOf(two.context.skills));
  // Fewer skills, or the same names loaded again (new objects): a new index.
  const fewer = skillIndexOf(skills.slice(0, 119));
  assert(fewer !== skillIndexOf(skills));
  assertEquals(fewer.size, 119);
  const reloaded = manySkills(120);
  assert(skillIndexOf(reloaded) !== skillIndexOf(skills));
});
