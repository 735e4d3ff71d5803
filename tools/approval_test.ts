import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { MANIFEST_FILE } from "../package/installed.ts";
import {
  buildSkillTools,
  type BuildSkillToolsOptions,
  type SkillsChange,
} from "./builder.ts";
import type { ToolApprovalCall, ToolApprovalDecision } from "./approval.ts";
import { pathExists, tempDir, writeSkill } from "../tests/helpers/tools.ts";

/** A tool set in a conversation workspace of `root`, with a skill whose allowed-tools is given. */
async function workspaceSet(
  root: string,
  options: BuildSkillToolsOptions & { allowedTools?: string } = {},
) {
  await writeSkill(`${root}/skills`, "gitlike", {
    description: options.allowedTools === undefined
      ? "Runs touch."
      : `Runs touch.\nallowed-tools: ${options.allowedTools}`,
    files: { "scripts/run.sh": "touch from-script\n" },
  });
  await writeSkill(`${root}/skills`, "other", {
    description: "Allows everything of bash.\nallowed-tools: Bash Write",
  });
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${root}/conversations`,
    conversationId: "c1",
  });
  const set = await buildSkillTools({
    skills: `${root}/skills`,
    runtime,
    ...options,
  });
  return {
    set,
    cwd: runtime.cwd,
    async [Symbol.asyncDispose]() {
      await set.close();
      await runtime.close();
    },
  };
}

const askBashAndWrites = (call: ToolApprovalCall): ToolApprovalDecision =>
  ["bash", "write", "edit"].includes(call.tool) ? "ask" : "allow";

Deno.test('approve: "deny" answers an error saying so and runs nothing, for bash, write and edit', async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, {
    approve: (call) => call.tool === "ls" ? "allow" : "deny",
  });
  await Deno.writeTextFile(`${k.cwd}/kept.txt`, "old\n");
  const bash = await k.set.tool("bash")!.execute({ command: "touch marker" });
  assert(bash.isError);
  assertStringIncludes(bash.text, 'Denied: the bash call "touch marker"');
  assertStringIncludes(bash.text, "nothing ran");
  const write = await k.set.tool("write")!.execute({
    file_path: "new.txt",
    content: "x",
  });
  assert(write.isError);
  const edit = await k.set.tool("edit")!.execute({
    file_path: "kept.txt",
    old_string: "old",
    new_string: "new",
  });
  assert(edit.isError);
  const read = await k.set.tool("read")!.execute({ file_path: "kept.txt" });
  assert(read.isError);
  assertFalse(await pathExists(`${k.cwd}/marker`));
  assertFalse(await pathExists(`${k.cwd}/new.txt`));
  assertEquals(await Deno.readTextFile(`${k.cwd}/kept.txt`), "old\n");
  const ls = await k.set.tool("ls")!.execute({});
  assertFalse(ls.isError);
});

Deno.test("approve: a policy that throws, rejects or answers nonsense fails closed", async () => {
  await using dir = await tempDir();
  for (
    const approve of [
      () => {
        throw new Error("policy broke");
      },
      () => Promise.reject(new Error("policy broke")),
      () => "yes" as ToolApprovalDecision,
    ]
  ) {
    await using k = await workspaceSet(dir.path, { approve });
    const result = await k.set.tool("bash")!.execute({
      command: "touch marker",
    });
    assert(result.isError);
    assertStringIncludes(result.text, "Denied:");
    assertFalse(await pathExists(`${k.cwd}/marker`));
  }
});

Deno.test("approve: covers every tool of the set, with the active skill named", async () => {
  await using dir = await tempDir();
  const seen: ToolApprovalCall[] = [];
  await using k = await workspaceSet(dir.path, {
    approve: (call) => {
      seen.push(call);
      return "allow";
    },
  });
  const started = await k.set.tool("bash")!.execute({
    command: "sleep 0.1; echo bg",
    run_in_background: true,
  });
  const id = /id "([^"]+)"/.exec(started.text)?.[1] ?? "";
  await k.set.tool("skill")!.execute({ name: "gitlike" });
  await k.set.tool("write")!.execute({ file_path: "a.txt", content: "a\n" });
  await k.set.tool("edit")!.execute({
    file_path: "a.txt",
    old_string: "a",
    new_string: "b",
  });
  await k.set.tool("read")!.execute({ file_path: "a.txt" });
  await k.set.tool("ls")!.execute({});
  await k.set.tool("glob")!.execute({ pattern: "*.txt" });
  await k.set.tool("grep")!.execute({ pattern: "b" });
  assertFalse((await k.set.tool("bash_output")!.execute({ id })).isError);
  assertFalse((await k.set.tool("kill_bash")!.execute({ id })).isError);
  assertEquals(
    [...new Set(seen.map((call) => call.tool))].sort(),
    [
      "bash",
      "bash_output",
      "edit",
      "glob",
      "grep",
      "kill_bash",
      "ls",
      "read",
      "skill",
      "write",
    ],
  );
  assertEquals(seen[0]?.skill, undefined);
  assertEquals(seen.find((c) => c.tool === "write")?.skill, "gitlike");
  assertEquals(seen.find((c) => c.tool === "write")?.input, {
    file_path: "a.txt",
    content: "a\n",
  });
});

Deno.test('approve: "ask" answers needsApproval and runs nothing; approved: true runs it', async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, { approve: askBashAndWrites });
  const bash = k.set.tool("bash")!;
  const first = await bash.execute({ command: "touch marker" });
  assert(first.isError);
  assertEquals(first.needsApproval, true);
  assertEquals(first.approval, {
    tool: "bash",
    input: { command: "touch marker" },
  });
  assertStringIncludes(
    first.text,
    'Approval needed: the bash call "touch marker"',
  );
  const again = await bash.execute({ command: "touch marker" });
  assertEquals(again.needsApproval, true);
  assertFalse(await pathExists(`${k.cwd}/marker`));
  const approved = await bash.execute({ command: "touch marker" }, {
    approved: true,
  });
  assertFalse(approved.isError);
  assert(await pathExists(`${k.cwd}/marker`));
});

Deno.test("approve: requestApproval is asked; only a yes runs, a no or a throw does not", async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, { approve: askBashAndWrites });
  const write = k.set.tool("write")!;
  const asked: ToolApprovalCall[] = [];
  const no = await write.execute({ file_path: "no.txt", content: "x" }, {
    requestApproval: (call) => {
      asked.push(call);
      return Promise.resolve({ approved: false, reason: "the user declined" });
    },
  });
  assertEquals(
    no.text,
    'Not approved: the write call on "no.txt" did not run (the user declined)',
  );
  const thrown = await write.execute({ file_path: "no.txt", content: "x" }, {
    requestApproval: () => Promise.reject(new Error("client went away")),
  });
  assertStringIncludes(thrown.text, "client went away");
  assert(thrown.isError);
  assertFalse(await pathExists(`${k.cwd}/no.txt`));
  const yes = await write.execute({ file_path: "yes.txt", content: "y" }, {
    requestApproval: () => Promise.resolve(true),
  });
  assertFalse(yes.isError);
  assertEquals(await Deno.readTextFile(`${k.cwd}/yes.txt`), "y");
  assertEquals(asked, [{
    tool: "write",
    input: { file_path: "no.txt", content: "x" },
  }]);
});

Deno.test("approve: a denial wins over approved: true and over allowed-tools", async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, {
    approve: () => "deny",
    allowedTools: "Bash(touch:*)",
  });
  const result = await k.set.tool("bash")!.execute({ command: "touch m" }, {
    approved: true,
  });
  assertStringIncludes(result.text, "Denied:");
  assertFalse(await pathExists(`${k.cwd}/m`));
});

Deno.test("without approve, every call runs as before (no approvalFor)", async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path);
  assertEquals(k.set.tool("bash")!.approvalFor, undefined);
  const result = await k.set.tool("bash")!.execute({ command: "touch m" });
  assertFalse(result.isError);
  assert(await pathExists(`${k.cwd}/m`));
});

Deno.test("allowed-tools pre-approve only after the skill's call, only what they cover", async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, {
    approve: askBashAndWrites,
    allowedTools: "Bash(touch:*) Read",
  });
  const bash = k.set.tool("bash")!;
  // Before the skill is active: asked.
  assertEquals(
    (await bash.execute({ command: "touch before" })).needsApproval,
    true,
  );
  assertEquals(
    (await bash.approvalFor!({ command: "touch a" })).decision,
    "ask",
  );
  const skill = await k.set.tool("skill")!.execute({ name: "gitlike" });
  assertFalse(skill.isError);
  const check = await bash.approvalFor!({ command: "touch a" });
  assertEquals(check.decision, "allow");
  assertStringIncludes(check.reason, 'skill "gitlike"');
  assertFalse((await bash.execute({ command: "touch after" })).isError);
  assert(await pathExists(`${k.cwd}/after`));
  const chained = await bash.execute({ command: "touch x; echo hi > y" });
  assertEquals(chained.needsApproval, true);
  const both = await bash.execute({ command: "touch p && touch q" });
  assertFalse(both.isError);
  const trick = await bash.execute({ command: "touch' 'x; rm -f after" });
  assertEquals(trick.needsApproval, true);
  assert(await pathExists(`${k.cwd}/after`));
  // write is not in the list: still asked.
  assertEquals(
    (await k.set.tool("write")!.execute({ file_path: "w.txt", content: "" }))
      .needsApproval,
    true,
  );
  assertFalse(await pathExists(`${k.cwd}/before`));
  assertFalse(await pathExists(`${k.cwd}/w.txt`));
});

Deno.test("allowed-tools: another skill's call replaces the list; another tool set never shares it", async () => {
  await using dir = await tempDir();
  await using k = await workspaceSet(dir.path, {
    approve: askBashAndWrites,
    allowedTools: "Bash(touch:*)",
  });
  await k.set.tool("skill")!.execute({ name: "gitlike" });
  assertEquals(
    (await k.set.tool("bash")!.approvalFor!({ command: "touch a" })).decision,
    "allow",
  );
  await using second = await buildSkillTools({
    skills: `${dir.path}/skills`,
    runtime: k.set.runtime,
    approve: askBashAndWrites,
  });
  assertEquals(
    (await second.tool("bash")!.approvalFor!({ command: "touch a" })).decision,
    "ask",
  );
  await k.set.tool("skill")!.execute({ name: "other" });
  const check = await k.set.tool("bash")!.approvalFor!({ command: "rm -rf x" });
  assertEquals(check.decision, "allow");
  assertEquals(check.call.skill, "other");
  await k.set.tool("skill")!.execute({ name: "gitlike" });
  assertEquals(
    (await k.set.tool("bash")!.approvalFor!({ command: "rm -rf x" })).decision,
    "ask",
  );
});

Deno.test("allowed-tools: a file of the skill changed or added after activation revokes the pre-approval", async () => {
  await using dir = await tempDir();
  for (const change of ["changed", "added"] as const) {
    await using k = await workspaceSet(`${dir.path}/${change}`, {
      approve: askBashAndWrites,
      allowedTools: "Bash(bash:*)",
    });
    const skill = await k.set.tool("skill")!.execute({ name: "gitlike" });
    const base = /Base directory: (.*)/.exec(skill.text)![1]!;
    const bash = k.set.tool("bash")!;
    assertEquals(
      (await bash.approvalFor!({ command: "bash scripts/run.sh" })).decision,
      "allow",
    );
    // What the model could do with an approved write: change the script.
    const path = change === "changed"
      ? `${base}/scripts/run.sh`
      : `${base}/scripts/extra.sh`;
    const written = await k.set.tool("write")!.execute(
      { file_path: path, content: "touch evil\n" },
      { approved: true },
    );
    assertFalse(written.isError, written.text);
    const after = await bash.execute({
      command: `bash ${base}/scripts/run.sh`,
      working_directory: k.cwd,
    });
    assertEquals(after.needsApproval, true);
    assertFalse(await pathExists(`${k.cwd}/evil`));
    assertFalse(await pathExists(`${k.cwd}/from-script`));
  }
});

Deno.test("allowed-tools of a skill from an installed package count only with trustAllowedTools", async () => {
  await using dir = await tempDir();
  // A package's folder: the skill beside its manifest.
  await Deno.mkdir(`${dir.path}/skills`, { recursive: true });
  await Deno.writeTextFile(
    `${dir.path}/skills/${MANIFEST_FILE}`,
    JSON.stringify({ name: "gitlike", files: [] }),
  );
  for (const trust of [false, true]) {
    await using k = await workspaceSet(`${dir.path}`, {
      approve: askBashAndWrites,
      allowedTools: "Bash(touch:*)",
      ...(trust ? { trustAllowedTools: true } : {}),
    });
    await k.set.tool("skill")!.execute({ name: "gitlike" });
    assertEquals(
      (await k.set.tool("bash")!.approvalFor!({ command: "touch a" })).decision,
      trust ? "allow" : "ask",
    );
  }
});

Deno.test("buildSkillTools() refuses an approve that is not a function", async () => {
  let message = "";
  try {
    await buildSkillTools({ approve: "allow" as never });
  } catch (error) {
    message = (error as Error).message;
  }
  assertEquals(
    message,
    'Cannot build the tools: approve must be a function answering "allow", "deny" or "ask"',
  );
});

/** Waits until `check` holds (polling), at most 5 s. */
async function until(check: () => boolean): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > 5000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

Deno.test("allowed-tools: hot reload revokes the pre-approval of a skill changed or removed on disk", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "gitlike", {
    description: "Runs touch.\nallowed-tools: Bash(touch:*)",
  });
  await using runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${dir.path}/conversations`,
    conversationId: "c1",
  });
  const changes: SkillsChange[] = [];
  await using kit = await buildSkillTools({
    skills: `${dir.path}/skills`,
    runtime,
    watch: true,
    watchDebounceMs: 50,
    approve: askBashAndWrites,
    onChange: (change) => changes.push(change),
  });
  const cwd = runtime.cwd;
  assertFalse((await kit.tool("skill")!.execute({ name: "gitlike" })).isError);
  assertFalse(
    (await kit.tool("bash")!.execute({ command: "touch one" })).isError,
  );
  assert(await pathExists(`${cwd}/one`));

  // Changed on disk (the same allowed-tools): asked again, nothing runs.
  await Deno.writeTextFile(
    `${dir.path}/skills/gitlike/SKILL.md`,
    "---\nname: gitlike\ndescription: Runs touch.\nallowed-tools: Bash(touch:*)\n---\nNew steps.\n",
  );
  await until(() => changes.some((c) => c.changed.includes("gitlike")));
  const two = await kit.tool("bash")!.execute({ command: "touch two" });
  assertEquals(two.needsApproval, true);
  assertFalse(await pathExists(`${cwd}/two`));

  // Its new content activated: pre-approved again.
  const again = await kit.tool("skill")!.execute({ name: "gitlike" });
  assertStringIncludes(again.text, "New steps.");
  assertFalse(
    (await kit.tool("bash")!.execute({ command: "touch three" })).isError,
  );
  assert(await pathExists(`${cwd}/three`));

  // Removed on disk: asked, nothing runs.
  await Deno.remove(`${dir.path}/skills/gitlike`, { recursive: true });
  await until(() => changes.some((c) => c.removed.includes("gitlike")));
  const four = await kit.tool("bash")!.execute({ command: "touch four" });
  assertEquals(four.needsApproval, true);
  assertFalse(await pathExists(`${cwd}/four`));
});
