import { assert, assertEquals, assertMatch } from "../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { buildSkillTools } from "./builder.ts";
import { tempDir } from "../tests/helpers/tools.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("background tools (on by default): bash starts, bash_output reads new output then the exit code, kill_bash stops", async () => {
  await using dir = await tempDir();
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  await using set = await buildSkillTools({
    runtime,
    limits: { backgroundCommands: 1 },
  });
  assertEquals(set.tools.map((t) => t.name).slice(0, 3), [
    "bash",
    "bash_output",
    "kill_bash",
  ]);
  assert("run_in_background" in set.tool("bash")!.inputSchema.properties);
  const bash = set.tool("bash")!;
  const output = set.tool("bash_output")!;
  const kill = set.tool("kill_bash")!;
  const started = await bash.execute({
    command: "echo one; sleep 0.6; echo two; exit 4",
    run_in_background: true,
  });
  assert(!started.isError, started.text);
  const id = /id "(bg\d+)"/.exec(started.text)![1]!;
  // The limit: one at once.
  const refused = await bash.execute({
    command: "true",
    run_in_background: true,
  });
  assert(refused.isError);
  assertMatch(refused.text, /1 are running/);
  await sleep(300);
  const first = await output.execute({ id });
  assertMatch(first.text, /^one\n\[running; 4 bytes since the last read\]$/);
  await sleep(800);
  const second = await output.execute({ id });
  assertEquals(second.text, "two\n[finished; exit code 4]");
  const unknown = await output.execute({ id: "bg99" });
  assert(unknown.isError);
  assertMatch(unknown.text, /No background command "bg99"/);

  const long = await bash.execute({
    command: "sleep 60",
    run_in_background: true,
  });
  const longId = /id "(bg\d+)"/.exec(long.text)![1]!;
  const stopped = await kill.execute({ id: longId });
  assertMatch(stopped.text, /was stopped/);
  assertEquals(
    (await output.execute({ id: longId })).text,
    "[stopped by kill_bash]",
  );
  await runtime.close();
});

Deno.test("background: false (or a tools list without bash_output): bash has no run_in_background and there are no background tools", async () => {
  for (
    const options of [
      { background: false },
      { tools: ["bash", "kill_bash"] as const },
    ]
  ) {
    await using set = await buildSkillTools(options);
    assert(
      !("run_in_background" in set.tool("bash")!.inputSchema.properties),
    );
    assertEquals(set.tool("bash_output"), undefined);
    assertEquals(set.tool("kill_bash"), undefined);
    const refused = await set.tool("bash")!.execute({
      command: "true",
      run_in_background: true,
    });
    assert(refused.isError);
  }
  await using all = await buildSkillTools({});
  assertEquals(all.tools.map((t) => t.name), [
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
});
