// The kit's background commands (E2B, Vercel, Deno Sandbox) and the servers' own
// (OpenSandbox, AIO) reached from two runtime objects on one sandbox.
import { assert, assertEquals, assertRejects } from "@std/assert";
import { backgroundCommands } from "../runtimes/background.ts";
import { MemoryConversationStore } from "../runtimes/stores/conversation_store.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { startE2BTestServer } from "./helpers/e2b.ts";
import { startVercelTestServer } from "./helpers/vercel.ts";
import { startTestServer as startOpenSandboxTestServer } from "./helpers/opensandbox.ts";
import { startAioTestServer } from "./helpers/aio.ts";
import { processAlive, waitFor } from "./helpers/remote.ts";
import { startDenoSandboxTestServer } from "./helpers/deno_sandbox.ts";

/** Two runtime objects on one conversation's sandbox, as two instances have. */
const kinds: {
  name: string;
  /** The kit runs them (else the server's own facility: OpenSandbox's execd). */
  kit: boolean;
  /** The command's id as the server (or the kit) names it. */
  id: RegExp;
  /** One log of both streams (execd's). */
  combined?: boolean;
  start: () => Promise<
    {
      dir: string;
      runtime(options: Record<string, unknown>): SkillRuntime;
    } & AsyncDisposable
  >;
}[] = [
  {
    name: "e2b",
    kit: true,
    id: /^bg[0-9]{15}$/,
    start: () => startE2BTestServer(),
  },
  {
    name: "vercel",
    kit: true,
    id: /^bg[0-9]{15}$/,
    start: () => startVercelTestServer(),
  },
  {
    name: "deno-sandbox",
    kit: true,
    id: /^bg[0-9]{15}$/,
    start: () => startDenoSandboxTestServer(),
  },
  {
    name: "opensandbox",
    kit: false,
    id: /^[0-9a-f]{32}$/,
    combined: true,
    start: () => startOpenSandboxTestServer(),
  },
  {
    name: "aio",
    kit: false,
    id: /^[0-9a-f-]{36}$/,
    start: () => startAioTestServer(),
  },
];

for (const kind of kinds) {
  Deno.test(`${kind.name} background: started on one runtime, read, waited for and killed on another attached to the same sandbox`, async () => {
    await using server = await kind.start();
    const store = new MemoryConversationStore();
    const options = {
      conversationId: "thread-bg",
      conversationsRoot: `${server.dir}/conversations`,
      store,
    };
    const first = server.runtime(options);
    const second = server.runtime(options);

    const { id } = await backgroundCommands(first).start({
      command: "echo one; echo warn >&2; sleep 0.3; echo two; exit 4",
    });
    assert(kind.id.test(id), id);
    const other = backgroundCommands(second);
    assertEquals((await other.wait(id)).exitCode, 4);
    const read = await other.read(id);
    assertEquals(
      [read.stdout, read.stderr, read.running, read.exitCode, read.command],
      [
        // execd keeps one log of both streams.
        kind.combined ? "one\nwarn\ntwo\n" : "one\ntwo\n",
        kind.combined ? "" : "warn\n",
        false,
        4,
        "echo one; echo warn >&2; sleep 0.3; echo two; exit 4",
      ],
    );
    // The kit's cursor is the sandbox's: what the second read, the first
    // does not again (execd's cursor is each runtime's own).
    const again = await backgroundCommands(first).read(id);
    assertEquals(
      [again.stdout, again.stderr, again.exitCode],
      kind.kit
        ? ["", "", 4]
        : kind.combined
        ? ["one\nwarn\ntwo\n", "", 4]
        : ["one\ntwo\n", "warn\n", 4],
    );

    const long = await backgroundCommands(first).start({
      command: "sleep 300 & echo $! > child.pid; wait",
    });
    const pidFile = `${server.dir}/conversations/thread-bg/child.pid`;
    assert(
      await waitFor(async () =>
        (await Deno.readTextFile(pidFile).catch(() => "")).trim() !== ""
      ),
    );
    const child = Number((await Deno.readTextFile(pidFile)).trim());
    assert(processAlive(child));
    const killed = await other.kill(long.id);
    assertEquals([killed.running, killed.exitCode], [false, -1]);
    assert(await waitFor(() => !processAlive(child)));
    const seen = await backgroundCommands(first).read(long.id);
    // The kit marks the kill in the sandbox, AIO says "killed"; execd only
    // says the group's wrapper ended on SIGTERM (143) to a runtime that did
    // not kill it.
    assertEquals([seen.running, seen.exitCode], [
      false,
      kind.combined ? 143 : -1,
    ]);

    await assertRejects(
      () => other.read("bg000000000000000"),
      RangeError,
      'No background command "bg000000000000000"',
    );
  });

  if (!kind.kit) continue;
  Deno.test(`${kind.name} background: a timeout stops the group and reads as timed out; a missing folder is refused`, async () => {
    await using server = await kind.start();
    const runtime = server.runtime({});
    const commands = backgroundCommands(runtime);
    const { id } = await commands.start({
      command: "echo start; sleep 30",
      timeoutMs: 500,
    });
    await commands.wait(id);
    const read = await commands.read(id);
    assertEquals(
      [read.stdout, read.running, read.exitCode, read.timedOut],
      ["start\n", false, -1, true],
    );
    await assertRejects(
      () => commands.start({ command: "true", cwd: `${server.dir}/missing` }),
      Error,
    );
  });
}
