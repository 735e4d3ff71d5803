import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { BackgroundCommands, backgroundCommands } from "../background.ts";
import { startTestServer } from "../../tests/helpers/opensandbox.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(50);
  }
}

/** The live (not zombie) processes of a process group, read from /proc. */
async function groupMembers(pgid: number): Promise<number[]> {
  const members: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`).catch(
      () => "",
    );
    // pid (comm) state ppid pgrp ...: comm may hold spaces, so after ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[2]) === pgid) {
      members.push(Number(entry.name));
    }
  }
  return members;
}

Deno.test("opensandbox background: execd's own background commands: the server's id at once, logs from the cursor, the exit code from status", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const commands = new BackgroundCommands(runtime);
  const { id } = await commands.start({
    command: "printf 'one\\n'; sleep 0.6; printf 'two\\n'; exit 5",
  });
  const record = server.server.commands.get(id);
  assert(record?.background, "started with background: true on the server");
  await until(async () => (await commands.read(id)).stdout === "one\n");
  await commands.wait(id);
  const last = await commands.read(id);
  assertEquals([last.stdout, last.running, last.exitCode], ["two\n", false, 5]);
  // Read from the byte cursor the server gave each time: 0, then past "one\n".
  const cursors = server.server.requests
    .filter((r) => r.route === `/command/${id}/logs`)
    .map((r) => new URLSearchParams(r.query).get("cursor"));
  assertEquals(cursors[0], "0");
  // The last read of "two\n" started past "one\n"; once the status said it
  // had ended, nothing more was asked.
  assertEquals(cursors.at(-1), "4");
  assert(server.server.count("GET", `/command/status/${id}`) >= 2);
});

Deno.test("opensandbox background: a command execd does not know yet right after init reads as running, without output", async () => {
  await using server = await startTestServer({ registerDelayMs: 400 });
  const runtime = server.runtime();
  const commands = new BackgroundCommands(runtime);
  const { id } = await commands.start({ command: "echo hi; sleep 0.2" });
  const early = await commands.read(id);
  assertEquals([early.running, early.stdout, early.error], [
    true,
    "",
    undefined,
  ]);
  await commands.wait(id);
  const read = await commands.read(id);
  assertEquals([read.stdout, read.exitCode], ["hi\n", 0]);
});

Deno.test("opensandbox background: kill interrupts the process group; close() leaves no process", async () => {
  await using server = await startTestServer({ killGraceMs: 500 });
  const runtime = server.runtime();
  // The runtime's own set: its close() ends them.
  const commands = backgroundCommands(runtime);
  const started = [];
  for (let i = 0; i < 3; i++) {
    started.push(
      await commands.start({ command: "sleep 300 & sleep 300 & wait" }),
    );
  }
  const groups = started.map(({ id }) => server.server.commands.get(id)!.pgid);
  for (const pgid of groups) {
    await until(async () => (await groupMembers(pgid)).length === 3);
  }
  const killed = await commands.kill(started[0]!.id);
  assertEquals([killed.running, killed.exitCode], [false, -1]);
  assertEquals(await groupMembers(groups[0]!), []);
  assert(server.server.count("DELETE", "/command") >= 1);
  await runtime.close();
  for (const pgid of groups) assertEquals(await groupMembers(pgid), []);
  assert(
    [...server.server.commands.values()].every((c) => !c.running),
    "no command left running on the server",
  );
  await assertRejects(
    () => commands.start({ command: "true" }),
    Error,
    "closed",
  );
});

Deno.test("opensandbox background: a missing folder is refused clearly, nothing left running", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const commands = new BackgroundCommands(runtime);
  const error = await assertRejects(() =>
    commands.start({
      command: "true",
      cwd: `${server.dir}/none`,
    })
  );
  assertStringIncludes(String(error), "refused");
  assertEquals(commands.list(), []);
});

Deno.test("opensandbox background: a 1 MiB burst reads back bounded, with its start and end and the byte count", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const commands = new BackgroundCommands(runtime, {
    maxOutputBytes: 4096,
  });
  const { id } = await commands.start({
    command: "printf START; head -c 1048576 /dev/zero | tr '\\0' x; printf END",
  });
  await commands.wait(id);
  const read = await commands.read(id);
  assertEquals(read.stdoutBytes, 1048576 + 8);
  assert(read.truncated);
  assert(read.stdout.startsWith("START") && read.stdout.endsWith("END"));
  assert(read.stdout.length < 4096 + 200, `${read.stdout.length}`);
});

Deno.test("opensandbox background: its output fetched by each read is a command_output event of the runtime, the configured value removed", async () => {
  await using server = await startTestServer();
  const secret = "bg-s3cr3t-value-77";
  const seen: { type: string; text?: string }[] = [];
  const runtime = server.runtime({
    env: { BG_KEY: secret },
    onEvent: (event) => void seen.push(event as { type: string }),
  });
  const commands = new BackgroundCommands(runtime);
  const { id } = await commands.start({ command: 'echo "k=$BG_KEY"' });
  await commands.wait(id);
  const read = await commands.read(id);
  assertEquals(read.stdout, `k=${secret}\n`);
  const output = seen.filter((e) => e.type === "command_output")
    .map((e) => e.text).join("");
  assertEquals(output, "k=[redacted]\n");
});
