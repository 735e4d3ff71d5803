/**
 * Benchmarks of the OpenSandbox runtime against the test server:
 *
 * - the round trip of `execute("true")` (in-process server) against a bare
 *   `fetch` of the same endpoint with the same body, its event stream read to
 *   the end (and, as an extra side, read only up to the completion event, as
 *   the runtime does);
 * - the upload of the generated 5,000-file skill (`remote_bench.ts`) in
 *   requests of 500 files (execd's part limit) against `curl` posting the
 *   same batches, the server in its own process;
 * - the timeout of `sleep 30 & wait` at 1 s on a server with zombie
 *   semantics (its interrupt waits for every zombie of the group): the time
 *   to the result against the 1 s limit itself.
 *
 * @module
 */
import { type BenchCase, runChild, startServerProcess } from "./_harness.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/runtime.ts";
import { commandBody } from "../runtimes/opensandbox/execd.ts";
import { startOpenSandboxServer } from "../tests/servers/opensandbox.ts";
import {
  EXECD_MAX_UPLOAD_FILES,
  execdFiles,
} from "../runtimes/opensandbox/execd.ts";
import { HttpClient } from "../runtimes/remote/http.ts";
import {
  collectUploadEntries,
  type UploadEntry,
} from "../runtimes/remote/upload.ts";
import type { RemoteUploadFile } from "../runtimes/remote/fs.ts";
import { generateMany, MANY, POLICY } from "./remote_bench.ts";

interface Setup {
  close(): Promise<void>;
  cwd: string;
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
      cwd,
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

// ---- upload of 5,000 files in batches of 500 (server in its own process) ----

const DATA = new URL("./.data/", import.meta.url).pathname;
const TARGET = `${DATA}opensandbox-upload-target`;
const META = `${DATA}opensandbox-upload-metadata`;
const SERVER = new URL("../tests/servers/opensandbox.ts", import.meta.url)
  .pathname;

interface UploadSetup {
  execdUrl: string;
  entries: UploadEntry[];
  files: RemoteUploadFile[];
  server: Deno.ChildProcess;
}

let uploadSetup: Promise<UploadSetup> | undefined;

/** Starts the test server by hand (its own process), makes a sandbox. */
function uploadReady(): Promise<UploadSetup> {
  uploadSetup ??= (async () => {
    const { child: server, firstLine: url } = await startServerProcess(
      ["run", "-A", SERVER, "--port", "0", "--linger-ms", "0"],
      { what: "the test server", stderr: "null" },
    );
    const created = await fetch(`${url}/sandboxes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        image: { uri: "ubuntu" },
        entrypoint: ["bash"],
        resourceLimits: {},
      }),
    });
    const { id } = await created.json() as { id: string };
    const origin = url.replace(/\/v1$/, "");
    const entries = await collectUploadEntries(MANY, { policy: POLICY });
    return {
      execdUrl: `${origin}/sandboxes/${id}/port/44772`,
      entries,
      files: entries.map((entry) => ({
        remotePath: `${TARGET}/${entry.relativePath}`,
        content: { path: entry.localPath, size: entry.size },
        mode: entry.mode,
      })),
      server,
    };
  })();
  return uploadSetup;
}

/** Makes the 5,000-file skill and the metadata files curl sends. */
async function uploadData(): Promise<void> {
  await generateMany();
  const entries = await collectUploadEntries(MANY, { policy: POLICY });
  await Deno.mkdir(META, { recursive: true });
  await Promise.all(entries.map((entry, i) =>
    Deno.writeTextFile(
      `${META}/${i}.json`,
      JSON.stringify({
        path: `${TARGET}/${entry.relativePath}`,
        mode: Number((entry.mode & 0o777).toString(8)),
      }),
    )
  ));
}

async function oursUpload(): Promise<void> {
  const { execdUrl, files } = await uploadReady();
  await execdFiles(new HttpClient({ baseUrl: execdUrl })).upload(files);
}

const curlBatches: string[][] = [];

/** The same batches of 500 files, each posted by one `curl -F` (streamed), `atOnce` at a time. */
async function curlUpload(atOnce = 1): Promise<void> {
  const { execdUrl, entries } = await uploadReady();
  if (curlBatches.length === 0) {
    for (let i = 0; i < entries.length; i += EXECD_MAX_UPLOAD_FILES) {
      const args = ["-s", "-f", "-o", "/dev/null", "-H", "Expect:"];
      entries.slice(i, i + EXECD_MAX_UPLOAD_FILES).forEach((entry, j) => {
        args.push(
          "-F",
          `metadata=@${META}/${
            i + j
          }.json;filename=metadata;type=application/json`,
          "-F",
          `file=@${entry.localPath};filename=f`,
        );
      });
      args.push(`${execdUrl}/files/upload`);
      curlBatches.push(args);
    }
  }
  let next = 0;
  const worker = async () => {
    while (next < curlBatches.length) {
      const args = curlBatches[next++]!;
      const status = await new Deno.Command("curl", {
        args,
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).output();
      if (!status.success) throw new Error(`curl exited with ${status.code}`);
    }
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
}

function skipWithoutCurl(): string | undefined {
  try {
    new Deno.Command("curl", { args: ["--version"] }).outputSync();
    return undefined;
  } catch {
    return "curl is not installed";
  }
}

// ---- the timeout of `sleep 30 & wait` on a server with zombie semantics ----

async function timeoutSleepWait(): Promise<void> {
  const { runtime } = await ready();
  const result = await runtime.execute({
    command: "sleep 30 & wait",
    timeoutMs: 1000,
  });
  if (!result.timedOut) throw new Error("the command did not time out");
}

/** The same through the previous wrapper (a nested `bash -c`): bare fetch + DELETE. */
async function previousWrapperTimeout(): Promise<void> {
  const { execdUrl, headers, cwd } = await ready();
  const command =
    `bash -c 'sleep 30 & wait'; __skillrun_status=$?; printf '\\n'; printf '\\n' >&2; exit "$__skillrun_status"`;
  const response = await fetch(execdUrl, {
    method: "POST",
    headers,
    body: JSON.stringify({ command, cwd, envs: {}, timeout: 60_000 }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let id: string | undefined;
  const timer = setTimeout(async () => {
    const answer = await fetch(`${execdUrl}?id=${id}`, {
      method: "DELETE",
      headers,
    });
    await answer.body?.cancel();
  }, 1000);
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    id ??= /"type":"init","text":"([^"]+)"/.exec(text)?.[1];
    if (/"type":"(execution_complete|error)"/.test(text)) {
      await reader.cancel();
      break;
    }
  }
  clearTimeout(timer);
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
}, {
  id: "opensandbox-upload-5000-files",
  title:
    "OpenSandbox upload of a generated 5,000-file skill in requests of 500 files (11 requests each side)",
  module: import.meta.url,
  setup: uploadData,
  iterations: 3,
  rounds: 3,
  maxRatio: 1.5,
  ours: {
    label: "execdFiles().upload (11 streamed requests, 3 at a time)",
    fn: oursUpload,
  },
  baseline: {
    label: "curl -F, the same 11 batches one after the other",
    fn: () => curlUpload(1),
  },
  extra: [{
    label: "curl -F, the same 11 batches, 3 at a time",
    fn: () => curlUpload(3),
  }],
  skipReason: skipWithoutCurl,
}, {
  id: "opensandbox-timeout-sleep-wait",
  title:
    "OpenSandbox timeout of `sleep 30 & wait` at 1 s (zombie semantics on): time to the result vs the limit",
  module: import.meta.url,
  iterations: 3,
  rounds: 2,
  maxRatio: 1.5,
  ours: {
    label: 'execute({ command: "sleep 30 & wait", timeoutMs: 1000 })',
    fn: timeoutSleepWait,
  },
  baseline: {
    label: "the 1 s limit itself (a timer)",
    fn: () => new Promise((resolve) => setTimeout(resolve, 1000)),
  },
  extra: [{
    label: "the previous wrapper (nested bash -c): bare fetch, DELETE at 1 s",
    fn: previousWrapperTimeout,
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
      "../runtimes/stores/conversation_store.ts"
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
    await fenced.fs.writeText("small.txt", SMALL);
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(cwd, { recursive: true });
    });
    return { fenced, plain };
  })();
  return fsSetup;
}

const SMALL = "x".repeat(1024);

/** Writes a 1 KiB file. */
async function writeSmall(runtime: OpenSandboxSkillRuntime): Promise<void> {
  await runtime.fs.writeText("small.txt", SMALL);
}

/** Reads a 1 KiB file back. */
async function readSmall(runtime: OpenSandboxSkillRuntime): Promise<void> {
  const text = await runtime.fs.readText("small.txt", { maxBytes: 4096 });
  if (text.length !== SMALL.length) throw new Error("short read");
}

cases.push({
  id: "opensandbox-fs-link-check-read",
  title:
    "OpenSandbox read of a 1 KiB file: conversation (link check: one /files/info naming every step, then the download) vs plain (one download)",
  module: import.meta.url,
  iterations: 20,
  rounds: 5,
  maxRatio: 1.3,
  ours: {
    label: "conversation (checked)",
    fn: async () => readSmall((await fsReady()).fenced),
  },
  baseline: {
    label: "plain (unchecked)",
    fn: async () => readSmall((await fsReady()).plain),
  },
}, {
  id: "opensandbox-fs-link-check-write",
  title:
    "OpenSandbox write of a 1 KiB file: conversation (one command: check, temporary file, rename) vs plain (/files/info for the mode + upload in place)",
  module: import.meta.url,
  iterations: 20,
  rounds: 5,
  maxRatio: 1.3,
  ours: {
    label: "conversation (checked, renamed)",
    fn: async () => writeSmall((await fsReady()).fenced),
  },
  baseline: {
    label: "plain (in place)",
    fn: async () => writeSmall((await fsReady()).plain),
  },
  extra: [{
    label: 'execute({ command: "true" }) (one command, for scale)',
    fn: async () => {
      await (await fsReady()).plain.execute({ command: "true" });
    },
  }],
});

if (import.meta.main) {
  await runChild(cases);
  // The in-process server would keep the child alive.
  await (await setup)?.close();
  const upload = await uploadSetup;
  if (upload) {
    upload.server.kill("SIGTERM");
    await upload.server.status;
  }
  Deno.exit(0);
}
