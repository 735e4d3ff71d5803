import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { loadSkills } from "../skill/load.ts";
import { createBashTool } from "./bash.ts";
import {
  conversationContext,
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
  writeSkill,
} from "../tests/helpers/tools.ts";
import { countTimeoutChecks } from "../tests/helpers/timeout_checks.ts";

testEachRuntime(
  "bash returns stdout alone when the command succeeds quietly",
  async () => {
    await using dir = await tempDir();
    const { context } = plainContext(dir.path);
    const bash = createBashTool(context);
    assertEquals(await bash.execute({ command: "echo hello" }), {
      text: "hello\n",
      isError: false,
    });
  },
);

testEachRuntime("bash adds STDERR: and the exit code when not 0", async () => {
  await using dir = await tempDir();
  const bash = createBashTool(plainContext(dir.path).context);
  assertEquals(
    await bash.execute({ command: "echo out; echo err >&2; exit 3" }),
    { text: "out\nSTDERR:\nerr\nExit code: 3", isError: true },
  );
  assertEquals(
    await bash.execute({ command: "printf out; printf err >&2" }),
    { text: "out\nSTDERR:\nerr", isError: false },
  );
  assertEquals(await bash.execute({ command: "exit 1" }), {
    text: "Exit code: 1",
    isError: true,
  });
});

testEachRuntime("bash says when there is no output", async () => {
  await using dir = await tempDir();
  const bash = createBashTool(plainContext(dir.path).context);
  assertEquals(await bash.execute({ command: "true" }), {
    text: "(no output)",
    isError: false,
  });
});

testEachRuntime("bash reports a timeout and stops the command", async () => {
  await using dir = await tempDir();
  const bash = createBashTool(plainContext(dir.path).context);
  const started = Date.now();
  const result = await bash.execute({
    command: "echo begun; sleep 20",
    timeout: 500,
  });
  assert(Date.now() - started < 15_000);
  assertEquals(result, {
    text:
      "begun\nCommand timed out after 500 ms and was stopped (with everything it started)",
    isError: true,
  });
});

testEachRuntime(
  "bash cuts long output in the middle, keeping the start and the end",
  async () => {
    await using dir = await tempDir();
    const bash = createBashTool(plainContext(dir.path).context);
    const result = await bash.execute({
      command:
        "printf 'S%.0s' $(seq 1 20000); printf 'M%.0s' $(seq 1 40000); printf 'E%.0s' $(seq 1 20000)",
    });
    assertFalse(result.isError);
    assert(
      result.text.startsWith(
        "S".repeat(15_000) + "\n\n[... 50000 characters omitted",
      ),
    );
    assertStringIncludes(
      result.text,
      "[... 50000 characters omitted: the output has 80000 characters; the first 15000 and the last 15000 are shown ...]",
    );
    assert(result.text.endsWith("\n\n" + "E".repeat(15_000)));
    assert(result.text.length < 30_200);
  },
);

testEachRuntime(
  "bash runs in the default working directory or a relative working_directory",
  async () => {
    await using dir = await tempDir();
    await Deno.mkdir(onHost(`${dir.path}/sub dir`));
    const bash = createBashTool(plainContext(dir.path).context);
    assertEquals(
      (await bash.execute({ command: "pwd" })).text,
      `${dir.path}\n`,
    );
    assertEquals(
      (await bash.execute({ command: "pwd", working_directory: "sub dir" }))
        .text,
      `${dir.path}/sub dir\n`,
    );
  },
);

testEachRuntime(
  "bash refuses a working_directory that is missing or a file",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/f.txt`), "x");
    const bash = createBashTool(plainContext(dir.path).context);
    assertEquals(
      await bash.execute({ command: "pwd", working_directory: "nope" }),
      {
        text: 'Cannot run in "nope": no such folder',
        isError: true,
      },
    );
    assertEquals(
      await bash.execute({ command: "pwd", working_directory: "f.txt" }),
      {
        text: 'Cannot run in "f.txt": it is not a folder',
        isError: true,
      },
    );
  },
);

testEachRuntime("bash validates its input", async () => {
  await using dir = await tempDir();
  const bash = createBashTool(plainContext(dir.path).context);
  assertEquals(await bash.execute({ command: "ls", timeout: 600_001 }), {
    text:
      'Invalid input: Parameter "timeout" must be at most 600000, got 600001',
    isError: true,
  });
  assertEquals(await bash.execute({ cmd: "ls" }), {
    text:
      'Invalid input:\n- Unknown parameter "cmd": expected one of command, timeout, working_directory\n- Missing required parameter "command"',
    isError: true,
  });
  assertEquals(await bash.execute({ command: "  " }), {
    text: 'Invalid input: Parameter "command" must not be blank',
    isError: true,
  });
});

testEachRuntime("bash keeps configured secrets out of its output", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "api");
  const { skills } = await loadSkills(onHost(`${dir.path}/skills`));
  const config = new SkillRuntimeConfig({
    env: { API_KEY: "sk-live-0123456789" },
  });
  const { context } = plainContext(dir.path, {
    skills,
    configs: new Map([["api", config]]),
  });
  await context.prepare(skills[0]!);
  const bash = createBashTool(context);
  const result = await bash.execute({
    command: 'echo "key=$API_KEY"; echo "$API_KEY" >&2; exit 2',
  });
  assertEquals(result, {
    text: "key=[redacted]\nSTDERR:\n[redacted]\nExit code: 2",
    isError: true,
  });
  // Even before the skill is prepared, a configured value never comes back.
  const fresh = plainContext(dir.path, {
    skills,
    configs: new Map([["api", config]]),
  });
  const echoed = await createBashTool(fresh.context).execute({
    command: "echo sk-live-0123456789",
  });
  assertEquals(echoed.text, "[redacted]\n");
});

testEachRuntime("bash redacts secrets before cutting long output", async () => {
  await using dir = await tempDir();
  const secret = "sk-live-0123456789";
  const config = new SkillRuntimeConfig({ env: { API_KEY: secret } });
  const { context } = plainContext(dir.path, {
    configs: new Map([["api", config]]),
  });
  const bash = createBashTool(context);
  // The secret straddles the end of the kept start (15 000 characters).
  const result = await bash.execute({
    command:
      `printf 'a%.0s' $(seq 1 14995); printf '${secret}'; printf 'b%.0s' $(seq 1 40000)`,
  });
  assertFalse(result.text.includes("sk-li"));
  assert(result.text.startsWith(`${"a".repeat(14995)}[reda`));
});

testEachRuntime("bash stops when the caller aborts", async () => {
  await using dir = await tempDir();
  const bash = createBashTool(plainContext(dir.path).context);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const result = await bash.execute({ command: "sleep 20" }, {
    signal: controller.signal,
  });
  assertEquals(result.isError, true);
  assertStringIncludes(result.text, "Cancelled");
});

testEachRuntime(
  "bash in a conversation runs in the workspace and refuses an outside working_directory",
  async () => {
    await using dir = await tempDir();
    const { context, workspace } = await conversationContext(dir.path);
    const bash = createBashTool(context);
    assertEquals(
      (await bash.execute({ command: "pwd" })).text,
      `${workspace}\n`,
    );
    const outside = await bash.execute({
      command: "pwd",
      working_directory: "/",
    });
    assertEquals(outside.isError, true);
    assertStringIncludes(outside.text, "outside the workspace");
    const escape = await bash.execute({
      command: "pwd",
      working_directory: "../..",
    });
    assertEquals(escape.isError, true);
    assertStringIncludes(escape.text, "outside the workspace");
  },
);

testEachRuntime(
  "bash runs a command that starts with a dash as a command",
  async () => {
    await using dir = await tempDir();
    const bash = createBashTool(plainContext(dir.path).context);
    for (const command of ["--help", "-x", "-c", "+x"]) {
      const result = await bash.execute({ command });
      // The shell looks the word up as a command, as a terminal would; it is
      // never taken as an option of the shell itself.
      assert(result.isError, command);
      assertStringIncludes(result.text, `${command}: command not found`);
      assertStringIncludes(result.text, "Exit code: 127");
    }
    const dashed = await bash.execute({
      command: "-x 2>/dev/null; echo after",
    });
    assertEquals(dashed, { text: "after\n", isError: false });
  },
);

testEachRuntime(
  "bash checks a call's timeout once on its way to the command",
  async () => {
    await using dir = await tempDir();
    const bash = createBashTool(plainContext(dir.path).context);
    // The tool validates the model's input against its schema; the runtime's
    // timeout check (`checkTimeoutMs`) runs once: in `checkExecuteRequest`,
    // whose checked value the launcher or the remote command core carries.
    const { result, checks } = await countTimeoutChecks(
      54_321,
      () => bash.execute({ command: "echo once", timeout: 54_321 }),
    );
    assertEquals(result, { text: "once\n", isError: false });
    assertEquals(checks, 1);
  },
);
