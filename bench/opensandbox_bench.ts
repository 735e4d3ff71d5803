/**
 * Benchmarks of the OpenSandbox runtime against the in-process test server:
 * the round trip of `execute("true")` against a bare `fetch` of the same
 * endpoint with the same body, its event stream read to the end (and, as an
 * extra side, read only up to the completion event, as the runtime does).
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/runtime.ts";
import { commandBody } from "../runtimes/opensandbox/execd.ts";
import { startOpenSandboxServer } from "../tests/servers/opensandbox.ts";

interface Setup {
  close(): Promise<void>;
  runtime: OpenSandboxSkillRuntime;
  execdUrl: string;
  headers: Record<string, string>;
  body: string;
}

let setup: Promise<Setup> | undefined;

/** One server and one connected runtime per child process (made in the warm-up). */
function ready(): Promise<Setup> {
  setup ??= (async () => {
    const cwd = await Deno.makeTempDir({ prefix: "skillrun-bench-os-" });
    const server = await startOpenSandboxServer();
    const runtime = new OpenSandboxSkillRuntime({ baseUrl: server.url, cwd });
    await runtime.execute({ command: "true" });
    return {
      close: async () => {
        await runtime.close();
        await server.close();
        await Deno.remove(cwd, { recursive: true });
      },
      runtime,
      execdUrl: `${server.execdUrl(runtime.sandboxId!)}/command`,
      headers: {
        ...server.execdHeaders,
        "content-type": "application/json",
        accept: "text/event-stream",
      },
      // The very body the runtime sends for `execute("true")`.
      body: JSON.stringify(
        commandBody({ command: "true", cwd, env: {}, timeoutMs: 120_000 }),
      ),
    };
  })();
  return setup;
}

async function bareFetch(untilComplete: boolean): Promise<void> {
  const { execdUrl, headers, body } = await ready();
  const response = await fetch(execdUrl, { method: "POST", headers, body });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    if (untilComplete) {
      text += decoder.decode(value, { stream: true });
      if (/"type":"(execution_complete|error)"/.test(text)) {
        await reader.cancel();
        break;
      }
    }
  }
}

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "opensandbox-execute-true",
  title: 'OpenSandbox execute("true") round trip vs bare fetch of /command',
  module: import.meta.url,
  iterations: 30,
  rounds: 3,
  maxRatio: 1.2,
  ours: {
    label: 'runtime.execute({ command: "true" })',
    fn: async () => {
      const { runtime } = await ready();
      const result = await runtime.execute({ command: "true" });
      if (result.exitCode !== 0) throw new Error("true failed");
    },
  },
  baseline: {
    label: "bare fetch, stream read to the end",
    fn: () => bareFetch(false),
  },
  extra: [{
    label: "bare fetch, stream read to the completion event",
    fn: () => bareFetch(true),
  }],
}];

interface FsSetup {
  fenced: OpenSandboxSkillRuntime;
  plain: OpenSandboxSkillRuntime;
}

let fsSetup: Promise<FsSetup> | undefined;

/** Two runtimes on one server: a conversation (fenced, link check) and a plain one. */
function fsReady(): Promise<FsSetup> {
  fsSetup ??= (async () => {
    const cwd = await Deno.makeTempDir({ prefix: "skillrun-bench-osfs-" });
    const server = await startOpenSandboxServer();
    const { MemoryConversationStore } = await import(
      "../workspace/conversation_store.ts"
    );
    const fenced = new OpenSandboxSkillRuntime({
      baseUrl: server.url,
      conversationId: "bench",
      conversationsRoot: `${cwd}/conversations`,
      store: new MemoryConversationStore(),
    });
    await fenced.execute({ command: "true" });
    const plain = new OpenSandboxSkillRuntime({
      baseUrl: server.url,
      cwd: `${cwd}/conversations/bench`,
    });
    await plain.execute({ command: "true" });
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(cwd, { recursive: true });
    });
    return { fenced, plain };
  })();
  return fsSetup;
}

const SMALL = "x".repeat(1024);

/** Writes then reads back a 1 KiB file. */
async function writeRead(runtime: OpenSandboxSkillRuntime): Promise<void> {
  await runtime.fs.writeText("small.txt", SMALL);
  const text = await runtime.fs.readText("small.txt", { maxBytes: 4096 });
  if (text.length !== SMALL.length) throw new Error("short read");
}

cases.push({
  id: "opensandbox-fs-link-check",
  title:
    "OpenSandbox write + read of a 1 KiB file: conversation (link check: +2 stats per call, in parallel) vs plain (none)",
  module: import.meta.url,
  iterations: 20,
  rounds: 5,
  maxRatio: 1.3,
  ours: {
    label: "conversation (checked)",
    fn: async () => writeRead((await fsReady()).fenced),
  },
  baseline: {
    label: "plain (unchecked)",
    fn: async () => writeRead((await fsReady()).plain),
  },
});

if (import.meta.main) {
  await runChild(cases);
  // The in-process server would keep the child alive.
  await (await setup)?.close();
  Deno.exit(0);
}
