/**
 * Benchmarks of the AIO runtime against the AIO test server (run in its own
 * process, so its memory is not counted), each beside a baseline on the same
 * server: `execute("true")` against one bare `fetch` of `/v1/bash/exec`, and a
 * 1 GiB download against `curl -s -o`.
 *
 * @module
 */
import {
  type BenchCase,
  curlToFile,
  runChild,
  startServerProcess,
} from "./_harness.ts";
import { AioSkillRuntime } from "../runtimes/aio/runtime.ts";
import { DEFAULT_POLL_SECONDS } from "../runtimes/aio/execute.ts";
import {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "../runtimes/types.ts";

const ONE_GIB = 1024 * 1024 * 1024;
const DATA = new URL("./.data/aio/", import.meta.url).pathname;
const BIG = `${DATA}big.bin`;
const TOKEN = "bench-aio-token";
const SERVER = new URL("../tests/servers/aio.ts", import.meta.url).pathname;
/** Round trips per timed iteration of the execute case. */
const ROUND_TRIPS = 20;

let serverUrl: Promise<string> | undefined;

/** Starts the AIO test server in a child process (once per process). */
function server(): Promise<string> {
  return serverUrl ??= (async () =>
    (await startServerProcess(
      ["run", "-A", SERVER, "--token", TOKEN, "--home", DATA],
      { what: "The AIO test server" },
    )).firstLine)();
}

let runtime: AioSkillRuntime | undefined;
async function aio(): Promise<AioSkillRuntime> {
  return runtime ??= new AioSkillRuntime({
    baseUrl: await server(),
    apiKey: TOKEN,
    cwd: DATA,
  });
}

let target = 0;
function localTarget(): string {
  return `${DATA}out-${Deno.pid}-${target++}.bin`;
}

/** The cases, each with its baseline. */
export const cases: BenchCase[] = [
  {
    id: "aio-execute-true",
    title: `AIO execute("true") round trip (${ROUND_TRIPS} per iteration)`,
    module: import.meta.url,
    iterations: 10,
    rounds: 5,
    maxRatio: 1.2,
    setup: () => Deno.mkdir(DATA, { recursive: true }),
    ours: {
      label: "execute",
      fn: async () => {
        const runtime = await aio();
        for (let i = 0; i < ROUND_TRIPS; i++) {
          const result = await runtime.execute({ command: "true" });
          if (result.exitCode !== 0) throw new Error("true failed");
        }
      },
    },
    baseline: {
      label: "bare fetch of /v1/bash/exec",
      fn: async () => {
        const url = `${await server()}/v1/bash/exec`;
        for (let i = 0; i < ROUND_TRIPS; i++) {
          const response = await fetch(url, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              authorization: `Bearer ${TOKEN}`,
            },
            // The body the runtime sends for this command.
            body: JSON.stringify({
              command: "true",
              session_id: `bench-${Deno.pid}`,
              exec_dir: DATA,
              env: {},
              timeout: DEFAULT_POLL_SECONDS,
              hard_timeout: DEFAULT_EXECUTE_TIMEOUT_MS / 1000 + 5,
              max_output_length: DEFAULT_MAX_OUTPUT_BYTES,
            }),
          });
          const body = await response.json();
          if (body.data?.exit_code !== 0) throw new Error("true failed");
        }
      },
    },
  },
  {
    id: "aio-download-1gib",
    title: "AIO download of a 1 GiB file",
    module: import.meta.url,
    iterations: 2,
    rounds: 2,
    noWarmup: true,
    maxRatio: 1.25,
    maxRssMiB: 100,
    setup: async () => {
      await Deno.mkdir(DATA, { recursive: true });
      const info = await Deno.stat(BIG).catch(() => null);
      if (info?.size === ONE_GIB) return;
      const made = await new Deno.Command("bash", {
        args: ["-c", `head -c ${ONE_GIB} /dev/urandom > '${BIG}'`],
      }).output();
      if (!made.success) throw new Error("Cannot make the 1 GiB file");
    },
    skipReason: () => {
      try {
        new Deno.Command("curl", { args: ["--version"] }).outputSync();
        return undefined;
      } catch {
        return "curl is not installed";
      }
    },
    ours: {
      label: "fs.download",
      fn: async () => {
        const local = localTarget();
        const { bytes } = await (await aio()).fs.download(BIG, local);
        await Deno.remove(local);
        if (bytes !== ONE_GIB) throw new Error("short download");
      },
    },
    extra: [{
      label: "curl -s -o, then sync --data (flushed to disk as ours is)",
      fn: () => curlDownload({ sync: true }),
    }, {
      // Deno's floor: no resume, no size check, no JavaScript per chunk.
      label: "bare fetch + pipeTo(file.writable)",
      fn: async () => {
        const local = localTarget();
        const url = `${await server()}/v1/file/download?path=${
          encodeURIComponent(BIG)
        }`;
        const response = await fetch(url, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const file = await Deno.open(local, {
          write: true,
          create: true,
          truncate: true,
        });
        await response.body!.pipeTo(file.writable);
        const size = (await Deno.stat(local)).size;
        await Deno.remove(local);
        if (size !== ONE_GIB) throw new Error("short download");
      },
    }],
    baseline: { label: "curl -s -o", fn: () => curlDownload() },
  },
];

const SMALL = "x".repeat(1024);

let fsSetup:
  | Promise<{ fenced: AioSkillRuntime; plain: AioSkillRuntime }>
  | undefined;

/** Two runtimes on the server: a conversation (fenced, link check) and a plain one. */
function fsReady(): Promise<
  { fenced: AioSkillRuntime; plain: AioSkillRuntime }
> {
  fsSetup ??= (async () => {
    const { MemoryConversationStore } = await import(
      "../runtimes/stores/conversation_store.ts"
    );
    const root = `${DATA}conversations`;
    const fenced = new AioSkillRuntime({
      baseUrl: await server(),
      apiKey: TOKEN,
      conversationId: "bench",
      conversationsRoot: root,
      store: new MemoryConversationStore(),
    });
    await fenced.execute({ command: "true" });
    const plain = new AioSkillRuntime({
      baseUrl: await server(),
      apiKey: TOKEN,
      cwd: `${root}/bench`,
    });
    await fenced.fs.writeText("small.txt", SMALL);
    return { fenced, plain };
  })();
  return fsSetup;
}

cases.push({
  id: "aio-fs-link-check-read",
  title:
    "AIO read of a 1 KiB file: conversation (one command that checks and reads) vs plain (one download)",
  module: import.meta.url,
  iterations: 10,
  rounds: 3,
  maxRatio: 1.3,
  ours: {
    label: "conversation (checked)",
    fn: async () => {
      const text = await (await fsReady()).fenced.fs.readText("small.txt", {
        maxBytes: 4096,
      });
      if (text.length !== SMALL.length) throw new Error("short read");
    },
  },
  baseline: {
    label: "plain (unchecked)",
    fn: async () => {
      const text = await (await fsReady()).plain.fs.readText("small.txt", {
        maxBytes: 4096,
      });
      if (text.length !== SMALL.length) throw new Error("short read");
    },
  },
}, {
  id: "aio-fs-link-check-write",
  title:
    "AIO write of a 1 KiB file: conversation (one command: check, temporary file, rename) vs plain (upload in place)",
  module: import.meta.url,
  iterations: 10,
  rounds: 3,
  maxRatio: 1.3,
  ours: {
    label: "conversation (checked, renamed)",
    fn: async () => (await fsReady()).fenced.fs.writeText("small.txt", SMALL),
  },
  baseline: {
    label: "plain (in place)",
    fn: async () => (await fsReady()).plain.fs.writeText("small.txt", SMALL),
  },
});

/** `curl -s -o` of the big file, optionally flushed to disk afterwards. */
async function curlDownload(options: { sync?: boolean } = {}): Promise<void> {
  const local = localTarget();
  const url = `${await server()}/v1/file/download?path=${
    encodeURIComponent(BIG)
  }`;
  try {
    const size = await curlToFile(url, local, {
      ...options,
      headers: [`Authorization: Bearer ${TOKEN}`],
    });
    if (size !== ONE_GIB) throw new Error("short download");
  } finally {
    await Deno.remove(local).catch(() => {});
  }
}

await runChild(cases);
