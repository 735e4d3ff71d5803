import {
  assert,
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { loadSkills } from "../skill/load.ts";
import { buildSkillTools, SkillToolsBuilder, TOOL_NAMES } from "./builder.ts";
import type { FilePublisher } from "./context.ts";
import { tempDir, writeSkill } from "../tests/helpers/tools.ts";
import { anthropicsSkills, sharedTest } from "../tests/helpers/shared_data.ts";

const CORPUS_DATA = anthropicsSkills();
const CORPUS = CORPUS_DATA.path;

async function exists(path: string): Promise<boolean> {
  return (await Deno.stat(path).catch(() => null)) !== null;
}

const publisher: FilePublisher = {
  async publish({ stream }) {
    await stream.cancel();
    return { url: "https://files.example/x" };
  },
};

Deno.test("buildSkillTools() builds every tool, skill first, publish_file only with a publisher", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "alpha");
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  await using plain = await buildSkillTools({ skills: dir.path, runtime });
  assertEquals(plain.tools.map((t) => t.name), [
    "skill",
    "bash",
    "bash_output",
    "kill_bash",
    "read",
    "write",
    "edit",
    "ls",
    "glob",
    "grep",
  ]);
  await using withPublisher = await buildSkillTools({
    skills: dir.path,
    runtime,
    publisher,
    skillSearch: true,
  });
  assertEquals(withPublisher.tools.map((t) => t.name), [...TOOL_NAMES]);
  for (const tool of withPublisher.tools) {
    assertEquals(tool.inputSchema.type, "object");
    assertEquals(tool.inputSchema.additionalProperties, false);
    for (const name of tool.inputSchema.required) {
      assert(name in tool.inputSchema.properties, `${tool.name}.${name}`);
    }
  }
});

Deno.test("buildSkillTools() without skills has no skill tool", async () => {
  await using set = await buildSkillTools({});
  assertEquals(set.tools.map((t) => t.name), [
    "bash",
    "bash_output",
    "kill_bash",
    "read",
    "write",
    "edit",
    "ls",
    "glob",
    "grep",
  ]);
  assertEquals(set.skills, []);
  assertEquals(set.tool("skill"), undefined);
});

Deno.test("building prepares nothing: no bootstrap runs, nothing is copied", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(`${dir.path}/skills`, "marker");
  const config = new SkillRuntimeConfig({
    bootstrap: ["touch bootstrapped.marker"],
  });
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${dir.path}/conversations`,
    conversationId: "c1",
  });
  await using set = await buildSkillTools({
    skills: `${dir.path}/skills`,
    configs: { marker: config },
    runtime,
  });
  const copies = `${runtime.cwd}/skills`;
  assertEquals(await Array.fromAsync(Deno.readDir(copies)), []);
  assertFalse(await exists(`${folder}/bootstrapped.marker`));

  const result = await set.tool("skill")!.execute({ name: "marker" });
  assertFalse(result.isError, result.text);
  // The copy (beside it, the record of what the conversation prepared).
  const [copy] = (await Array.fromAsync(Deno.readDir(copies))).filter((e) =>
    e.isDirectory
  );
  assert(copy, "the skill was copied on first use");
  assert(await exists(`${copies}/${copy.name}/bootstrapped.marker`));
  assertFalse(
    await exists(`${folder}/bootstrapped.marker`),
    "the source is untouched",
  );
  assertStringIncludes(result.text, `Base directory: ${copies}/${copy.name}\n`);
});

Deno.test("the skill tool returns the runtime, base directory, instructions and files", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(dir.path, "report", {
    body: "# Report\n\nRun `scripts/make.sh`.\n",
    files: { "scripts/make.sh": "echo made\n", "reference/notes.md": "n" },
  });
  await using set = await buildSkillTools({
    skills: dir.path,
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
  });
  const result = await set.tool("skill")!.execute({ name: "report" });
  assertEquals(result, {
    text: [
      'Skill "report" is ready in the "local" runtime.',
      `Base directory: ${folder}`,
      "Paths in the instructions are relative to the base directory: pass it as working_directory to bash, or join it to paths for the file tools.",
      "",
      '<skill_instructions name="report">',
      "# Report\n\nRun `scripts/make.sh`.",
      "</skill_instructions>",
      "",
      "Files (3):",
      "SKILL.md",
      "reference/notes.md",
      "scripts/make.sh",
    ].join("\n"),
    isError: false,
  });
});

Deno.test("the skill tool caps its file list", async () => {
  await using dir = await tempDir();
  const files: Record<string, string> = {};
  for (let i = 0; i < 5; i++) files[`f${i}.txt`] = "x";
  await writeSkill(dir.path, "many", { files });
  await using set = await buildSkillTools({
    skills: dir.path,
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
    limits: { skillFilesListed: 2 },
  });
  const { text } = await set.tool("skill")!.execute({ name: "many" });
  assertStringIncludes(
    text,
    "\nFiles (the first 2; use ls or glob for the rest):\n",
  );
});

Deno.test("a failing bootstrap is the skill tool's error, is not cached, and the next call retries", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(dir.path, "flaky");
  const config = new SkillRuntimeConfig({
    bootstrap: [
      "echo attempt >> attempts.log; test -f ready.flag || { echo not ready >&2; exit 7; }",
    ],
  });
  await using set = await buildSkillTools({
    skills: dir.path,
    configs: { flaky: config },
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
  });
  const skill = set.tool("skill")!;
  const failed = await skill.execute({ name: "flaky" });
  assertEquals(failed, {
    text:
      'Cannot prepare skill "flaky": bootstrap command 1 of 1 exited with code 7\nnot ready\nThe skill is not ready; calling skill again retries the preparation.',
    isError: true,
  });
  assertEquals(await Deno.readTextFile(`${folder}/attempts.log`), "attempt\n");
  await Deno.writeTextFile(`${folder}/ready.flag`, "");
  const retried = await skill.execute({ name: "flaky" });
  assertFalse(retried.isError, retried.text);
  await skill.execute({ name: "flaky" });
  assertEquals(
    await Deno.readTextFile(`${folder}/attempts.log`),
    "attempt\nattempt\n",
  );
});

Deno.test("ten concurrent skill calls prepare once", async () => {
  await using dir = await tempDir();
  const folder = await writeSkill(dir.path, "slow");
  const config = new SkillRuntimeConfig({
    bootstrap: ["echo run >> runs.log; sleep 0.5"],
  });
  await using set = await buildSkillTools({
    skills: dir.path,
    configs: [["slow", config]],
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
  });
  const skill = set.tool("skill")!;
  const results = await Promise.all(
    Array.from({ length: 10 }, () => skill.execute({ name: "slow" })),
  );
  for (const result of results) assertFalse(result.isError, result.text);
  assertEquals(await Deno.readTextFile(`${folder}/runs.log`), "run\n");
});

Deno.test("a configuration's environment reaches bash after the skill is prepared", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "env");
  await using set = await buildSkillTools({
    skills: dir.path,
    // The same name twice (after trimming): the later replaces the earlier.
    configs: [
      [
        "env",
        new SkillRuntimeConfig({ env: { MODE: "a1", ONLY_FIRST: "yes" } }),
      ],
      [" env ", new SkillRuntimeConfig({ env: { MODE: "b2" } })],
    ],
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
  });
  const bash = set.tool("bash")!;
  assertEquals(
    (await bash.execute({ command: 'echo "[$MODE]"' })).text,
    "[]\n",
  );
  await set.tool("skill")!.execute({ name: "env" });
  assertEquals(
    (await bash.execute({ command: 'echo "[$MODE][$ONLY_FIRST]"' })).text,
    "[b2][]\n",
  );
});

Deno.test("configurations bound to unknown, blank or missing names are refused", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "pdf");
  const config = new SkillRuntimeConfig();
  const build = (configs: unknown) =>
    buildSkillTools({ skills: dir.path, configs: configs as never });
  await assertRejects(
    () => build({ PDF: config }),
    RangeError,
    'Cannot bind a configuration to skill "PDF": no such skill (available: "pdf")',
  );
  await assertRejects(
    () => build({ "  ": config }),
    TypeError,
    'Cannot bind a configuration to skill "  ": the name is blank',
  );
  await assertRejects(
    () => build({ pdf: null }),
    TypeError,
    'Cannot bind a configuration to skill "pdf": the configuration is missing',
  );
  await assertRejects(
    () => build({ pdf: { env: { "1BAD": "x" } } }),
    TypeError,
    'Cannot bind a configuration to skill "pdf": Cannot set environment variable "1BAD"',
  );
  await assertRejects(
    () => build({ pdf: { environment: {} } }),
    TypeError,
    'Cannot bind a configuration to skill "pdf": unknown field "environment" (expected env, bootstrap)',
  );
});

Deno.test("a configuration may be given as plain options", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "opts");
  await using set = await buildSkillTools({
    skills: dir.path,
    configs: { opts: { env: { LEVEL: "l9" } } },
    runtime: new LocalSkillRuntime({ cwd: dir.path }),
  });
  await set.tool("skill")!.execute({ name: "opts" });
  assertEquals(
    (await set.tool("bash")!.execute({ command: "echo $LEVEL" })).text,
    "l9\n",
  );
});

Deno.test("names select skills; the skill tool's enum lists only them", async () => {
  await using dir = await tempDir();
  for (const name of ["a-one", "b-two", "c-three"]) {
    await writeSkill(dir.path, name);
  }
  await using set = await buildSkillTools({
    skills: dir.path,
    names: [" c-three", "a-one "],
  });
  assertEquals(set.skills.map((s) => s.name), ["a-one", "c-three"]);
  const schema = set.tool("skill")!.inputSchema.properties.name!;
  assertEquals(schema.enum, ["a-one", "c-three"]);
  assertEquals(await set.tool("skill")!.execute({ name: "b-two" }), {
    text:
      'Invalid input: Parameter "name" must be one of "a-one", "c-three", got "b-two"',
    isError: true,
  });
  await assertRejects(
    () => buildSkillTools({ skills: dir.path, names: ["A-ONE"] }),
    RangeError,
    'Cannot select skill "A-ONE": no such skill',
  );
});

Deno.test("sources with names, loaded skills and several roots mix; duplicate names warn", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/one`, "shared");
  await writeSkill(`${dir.path}/one`, "first");
  await writeSkill(`${dir.path}/two`, "shared");
  await writeSkill(`${dir.path}/three`, "loaded");
  const { skills: loaded } = await loadSkills(`${dir.path}/three`);
  await using set = await buildSkillTools({
    skills: [
      { root: `${dir.path}/one`, names: ["shared"] },
      `${dir.path}/two`,
      ...loaded,
    ],
  });
  assertEquals(set.skills.map((s) => s.name), ["loaded", "shared"]);
  assertEquals(set.skills[1]!.basePath, `${dir.path}/one/shared`);
  assertEquals(set.warnings, [
    `Skipped "${dir.path}/two/shared/SKILL.md": the skill name "shared" is already used by "${dir.path}/one/shared/SKILL.md"`,
  ]);
});

Deno.test("the skill tool's description carries the catalog and the tool rule", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "csv", {
    description: "Summarise <CSV> & tables.",
  });
  await using set = await buildSkillTools({ skills: dir.path });
  const description = set.tool("skill")!.description;
  assertStringIncludes(
    description,
    'prepares the skill in the "local" runtime',
  );
  assertStringIncludes(
    description,
    "working only through the tools given with this one (bash, bash_output, kill_bash, read, write, edit, ls, glob, grep)",
  );
  assertStringIncludes(
    description,
    `<available_skills>\n<skill>\n<name>csv</name>\n<description>Summarise &lt;CSV&gt; &amp; tables.</description>\n<location>${dir.path}/csv/SKILL.md</location>\n</skill>\n</available_skills>`,
  );
});

Deno.test("the skill tool's description can be a template or a function", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "x");
  await using templated = await buildSkillTools({
    skills: dir.path,
    skillDescription: "Skills here:\n{catalog}\nEnd.",
  });
  const text = templated.tool("skill")!.description;
  assert(
    text.startsWith("Skills here:\n<available_skills>") &&
      text.endsWith("</available_skills>\nEnd."),
  );
  await using appended = await buildSkillTools({
    skills: dir.path,
    skillDescription: "Use skills.",
  });
  assert(
    appended.tool("skill")!.description.startsWith(
      "Use skills.\n\n<available_skills>",
    ),
  );
  await using computed = await buildSkillTools({
    skills: dir.path,
    skillDescription: ({ skills, runtimeName }) =>
      `${skills.length} skill on ${runtimeName}`,
  });
  assertEquals(computed.tool("skill")!.description, "1 skill on local");
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "buildSkillTools() loads the real skills of the Anthropic collection",
  ),
  async fn() {
    await using set = await buildSkillTools({
      skills: CORPUS,
      names: ["skill-creator", "mcp-builder"],
    });
    const description = set.tool("skill")!.description;
    assertStringIncludes(description, "<name>mcp-builder</name>");
    assertStringIncludes(description, "<name>skill-creator</name>");
    const result = await set.tool("skill")!.execute({ name: "mcp-builder" });
    assertFalse(result.isError, result.text);
    assertStringIncludes(result.text, "SKILL.md\n");
  },
});

Deno.test("tools narrows the set; bad options are refused clearly", async () => {
  await using set = await buildSkillTools({ tools: ["read", "bash"] });
  assertEquals(set.tools.map((t) => t.name), ["bash", "read"]);
  await assertRejects(
    () => buildSkillTools({ tools: ["rm" as never] }),
    RangeError,
    'Cannot build tool "rm": no such tool',
  );
  await assertRejects(
    () => buildSkillTools({ runtime: {} as never }),
    TypeError,
    "Cannot build the tools: runtime must implement SkillRuntime",
  );
  await assertRejects(
    () => buildSkillTools({ publisher: {} as never }),
    TypeError,
    "Cannot build the tools: publisher must have a publish() method",
  );
});

Deno.test("close() closes a runtime the builder made, never the application's", async () => {
  const owned = await buildSkillTools();
  await owned.close();
  await owned.close();
  assertInstanceOf(owned.runtime, LocalSkillRuntime);
  assert((owned.runtime as LocalSkillRuntime).closed);
  const mine = new LocalSkillRuntime();
  const lent = await buildSkillTools({ runtime: mine });
  await lent.close();
  assertFalse(mine.closed);
  await mine.close();
});

Deno.test("SkillToolsBuilder follows the Java builder's calls", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "report-generator");
  await writeSkill(dir.path, "other");
  const config = SkillRuntimeConfig.builder()
    .env("REPORT_API_URL", "https://api.example.com")
    .bootstrap("true", 120_000)
    .build();
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const tools = await new SkillToolsBuilder()
    .addSkillsDirectory(dir.path, "report-generator")
    .skillRuntimeConfig("report-generator", config)
    .runtime(runtime)
    .filePublisher(publisher)
    .options({ skillSearch: true })
    .buildTools();
  assertEquals(tools.map((t) => t.name), [...TOOL_NAMES]);
  assertEquals(tools[0]!.inputSchema.properties.name!.enum, [
    "report-generator",
  ]);
  await assertRejects(
    () =>
      new SkillToolsBuilder().addSkillsDirectory(dir.path).skillRuntimeConfig(
        "nope",
        config,
      ).build(),
    RangeError,
    'Cannot bind a configuration to skill "nope"',
  );
  await runtime.close();
});

Deno.test("with a publisher, the skill and publish_file descriptions tell the model how to deliver files", async () => {
  await using dir = await tempDir();
  await writeSkill(dir.path, "report");
  await using withPublisher = await buildSkillTools({
    skills: dir.path,
    publisher,
  });
  await using without = await buildSkillTools({ skills: dir.path });
  const skill = withPublisher.tool("skill")!.description;
  const publish = withPublisher.tool("publish_file")!.description;
  for (const description of [skill, publish]) {
    const text = description.toLowerCase();
    // Publish the final files by default...
    assertStringIncludes(text, "publish the final files a task produces");
    assertStringIncludes(text, "by default");
    // ...and whenever the user asks to send, give, attach or share one.
    assertStringIncludes(text, "send, give, attach or share");
    // Answer with the URL, never an internal path.
    assertStringIncludes(text, "answer with the url");
    assertStringIncludes(text, "never with an internal path");
    // Never claim a delivery without a publish.
    assertStringIncludes(text, "never say a file was sent or delivered unless");
    // Skip it when the user says not to.
    assertStringIncludes(text, "do not publish when the user says not to");
    // Never invent a host path.
    assertStringIncludes(text, "never invent a host path");
  }
  assertFalse(without.tool("skill")!.description.includes("publish_file"));
  assertEquals(without.tool("publish_file"), undefined);
});
