import { assert, assertEquals } from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { loadSkills } from "../skill/load.ts";
import type { SkillEvent } from "../observe/events.ts";
import { createBashTool } from "./bash.ts";
import { createSkillTool } from "./skill_tool.ts";
import {
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
  writeSkill,
} from "../tests/helpers/tools.ts";

const SECRET = "evt-s3cr3t-value-42";

async function skillSetup(root: string) {
  await writeSkill(root, "alpha", { files: { "data.txt": "x".repeat(1000) } });
  const { skills } = await loadSkills(onHost(root));
  const config = new SkillRuntimeConfig({
    env: { ALPHA_TOKEN: SECRET },
    bootstrap: ["echo boot-one", "echo boot-two"],
  });
  return { skills, configs: new Map([["alpha", config]]) };
}

testEachRuntime(
  "tools emit call, preparation and output events in order, without the secret",
  async () => {
    await using dir = await tempDir();
    await Deno.mkdir(onHost(`${dir.path}/skills`));
    await Deno.mkdir(onHost(`${dir.path}/work`));
    const { skills, configs } = await skillSetup(`${dir.path}/skills`);
    const events: SkillEvent[] = [];
    const { context, runtime } = plainContext(`${dir.path}/work`, {
      skills,
      configs,
      onEvent: (event) => events.push(event),
    });
    await using _ = runtime;
    const skill = createSkillTool(context, {})!;
    const loaded = await skill.execute({ name: "alpha" }, {
      toolCallId: "call-1",
    });
    assert(!loaded.isError, loaded.text);
    const bash = createBashTool(context);
    const ran = await bash.execute({
      command:
        `printf 'one\\n'; sleep 0.2; echo "tok=$ALPHA_TOKEN" >&2; exit 3`,
    }, { toolCallId: "call-2" });
    assert(ran.isError);

    const kinds = events.map((e) =>
      e.type === "prepare_progress" ? `${e.type}:${e.stage}` : e.type
    );
    // The skill call: start, preparation (copy or upload, each bootstrap
    // command, done), end; then the bash call with its output.
    assertEquals(kinds[0], "tool_call_start");
    const firstEnd = kinds.indexOf("tool_call_end");
    // Plain local runtimes use a skill in place: no copy stage.
    const preparation = [...new Set(kinds.slice(1, firstEnd))].filter((k) =>
      k !== "prepare_progress:copy" && k !== "prepare_progress:upload"
    );
    const materialize = kinds.slice(1, firstEnd).filter((k) =>
      k === "prepare_progress:copy" || k === "prepare_progress:upload"
    );
    if (materialize.length) assert(kinds[1] === materialize[0]);
    // The bootstrap's output reaches this listener too (docs/observability.md:
    // the tools' listener and the runtime's get the same events).
    assertEquals(preparation, [
      "prepare_progress:bootstrap",
      "command_output",
      "prepare_progress:done",
    ]);
    assertEquals(
      events.slice(1, firstEnd).map((e) =>
        e.type === "command_output" && e.stream === "stdout" ? e.text : ""
      ).join(""),
      "boot-one\nboot-two\n",
    );
    // A copy reports bytes as well as files.
    for (const e of events.slice(1, firstEnd)) {
      if (e.type === "prepare_progress" && e.stage === "copy" && e.files) {
        assert(e.bytes !== undefined && e.bytes >= 1000, JSON.stringify(e));
      }
    }
    const boot = events.filter((e) =>
      e.type === "prepare_progress" && e.stage === "bootstrap"
    );
    assertEquals(
      boot.map((e) => e.type === "prepare_progress" && e.detail),
      ["command 1 of 2", "command 2 of 2"],
    );
    assertEquals(kinds.slice(firstEnd + 1, firstEnd + 2), ["tool_call_start"]);
    assertEquals(kinds.at(-1), "tool_call_end");
    const [start1, end1] = [events[0]!, events[firstEnd]!];
    assertEquals(start1, {
      type: "tool_call_start",
      tool: "skill",
      callId: "call-1",
    });
    assert(end1.type === "tool_call_end" && end1.callId === "call-1");
    assertEquals(end1.isError, false);
    assertEquals(end1.bytesOut, new TextEncoder().encode(loaded.text).length);
    const end2 = events.at(-1)!;
    assert(end2.type === "tool_call_end" && end2.tool === "bash");
    assertEquals([end2.callId, end2.isError], ["call-2", true]);
    assert(end2.durationMs >= 150, String(end2.durationMs));
    const out = events.slice(firstEnd).filter((e) =>
      e.type === "command_output"
    );
    const text = (stream: string) =>
      out.map((e) =>
        e.type === "command_output" && e.stream === stream ? e.text : ""
      ).join("");
    assertEquals(text("stdout"), "one\n");
    assertEquals(text("stderr"), "tok=[redacted]\n");
    assert(
      out.every((e) => e.type === "command_output" && e.callId === "call-2"),
    );
    // The first chunk came before the command ended (live, not at the end).
    const firstOut = events.indexOf(out[0]!);
    assert(firstOut < events.length - 1);
    assert(!JSON.stringify(events).includes(SECRET));
  },
);

testEachRuntime("a throwing listener breaks no tool call", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(onHost(`${dir.path}/skills`));
  await Deno.mkdir(onHost(`${dir.path}/work`));
  const { skills, configs } = await skillSetup(`${dir.path}/skills`);
  let calls = 0;
  const { context, runtime } = plainContext(`${dir.path}/work`, {
    skills,
    configs,
    onEvent: () => {
      calls++;
      throw new Error("listener bug");
    },
  });
  await using _ = runtime;
  const loaded = await createSkillTool(context, {})!.execute({ name: "alpha" });
  assert(!loaded.isError, loaded.text);
  const ran = await createBashTool(context).execute({ command: "echo fine" });
  assertEquals(ran, { text: "fine\n", isError: false });
  assert(calls >= 6, String(calls));
});

testEachRuntime(
  "a listener returning a rejected promise breaks nothing",
  async () => {
    await using dir = await tempDir();
    const { context, runtime } = plainContext(dir.path, {
      onEvent: () => Promise.reject(new Error("async listener bug")),
    });
    await using _ = runtime;
    const ran = await createBashTool(context).execute({ command: "echo fine" });
    assertEquals(ran, { text: "fine\n", isError: false });
  },
);

testEachRuntime(
  "a secret written across two chunks never reaches an event",
  async () => {
    await using dir = await tempDir();
    await Deno.mkdir(onHost(`${dir.path}/skills`));
    await Deno.mkdir(onHost(`${dir.path}/work`));
    const { skills, configs } = await skillSetup(`${dir.path}/skills`);
    const texts: string[] = [];
    const { context, runtime } = plainContext(`${dir.path}/work`, {
      skills,
      configs,
      onEvent: (event) => {
        if (event.type === "command_output") texts.push(event.text);
      },
    });
    await using _ = runtime;
    await createSkillTool(context, {})!.execute({ name: "alpha" });
    const half = SECRET.length / 2 | 0;
    const ran = await createBashTool(context).execute({
      command: `printf 'a=${SECRET.slice(0, half)}'; sleep 0.3; printf '${
        SECRET.slice(half)
      } end\\n'`,
    });
    assertEquals(ran.text, "a=[redacted] end\n");
    // The skill's bootstrap output first (it reaches this listener too).
    assertEquals(texts.join(""), "boot-one\nboot-two\na=[redacted] end\n");
    for (const text of texts) {
      assert(!text.includes(SECRET.slice(0, half)), text);
      assert(!text.includes(SECRET.slice(half)), text);
    }
  },
);

Deno.test("tool_call_end counts the result's UTF-8 bytes (multi-byte, 4-byte and replaced characters); a call writing nothing emits no output event", async () => {
  await using dir = await tempDir();
  const events: SkillEvent[] = [];
  const { context, runtime } = plainContext(dir.path, {
    onEvent: (event) => events.push(event),
  });
  await using _ = runtime;
  const bash = createBashTool(context);
  // é (2 bytes), 日 (3), 😀 (4), and a lone 0xff byte read as U+FFFD (3).
  const ran = await bash.execute({
    command: String.raw`printf 'a\303\251\346\227\245\360\237\230\200\377'`,
  }, { toolCallId: "utf8" });
  assertEquals(ran.text, "aé日😀\ufffd");
  const end = events.find((e) => e.type === "tool_call_end")!;
  assert(end.type === "tool_call_end");
  assertEquals(end.bytesOut, new TextEncoder().encode(ran.text).length);
  assertEquals(end.bytesOut, 13);

  events.length = 0;
  const quiet = await bash.execute({ command: "true" }, { toolCallId: "q" });
  assertEquals(quiet.text, "(no output)");
  assertEquals(events.map((e) => e.type), ["tool_call_start", "tool_call_end"]);
  const quietEnd = events[1]!;
  assert(quietEnd.type === "tool_call_end");
  assertEquals(quietEnd.bytesOut, 11);
});
