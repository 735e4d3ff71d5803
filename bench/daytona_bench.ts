/**
 * Daytona on its test server (issue 28): `execute("true")` against the same
 * requests made by bare fetch, the upload of a generated 5,000-file skill
 * against curl, and a 1 GiB download against `curl -s -o`.
 *
 * @module
 */
import {
  type BenchCase,
  curlToFile,
  runChild,
  startServerProcess,
} from "./_harness.ts";
import {
  BIG,
  BIG_SIZE,
  generateBig,
  generateMany,
  MANY,
  POLICY,
} from "./remote_bench.ts";
import { collectUploadEntries } from "../runtimes/remote/upload.ts";
import type { RemoteUploadFile } from "../runtimes/remote/fs.ts";
import { HttpClient } from "../runtimes/remote/http.ts";
import { downloadToFile } from "../runtimes/remote/download.ts";
import {
  DaytonaSkillRuntime,
  toolboxDownload,
  toolboxUpload,
} from "../runtimes/daytona/runtime.ts";
import { startDaytonaServer } from "../tests/servers/daytona.ts";

const DATA = new URL("./.data/", import.meta.url).pathname;
const KEY = "bench-key";
const AUTH = { authorization: `Bearer ${KEY}` };

// ---- execute("true"): in-process server, one connected runtime ----

interface ExecSetup {
  run(): Promise<void>;
  bare(): Promise<void>;
  bareOne(): Promise<void>;
  close(): Promise<void>;
}

let exec: Promise<ExecSetup> | undefined;

function execSetup(): Promise<ExecSetup> {
  return exec ??= (async () => {
    const server = startDaytonaServer({ apiKey: KEY });
    // The exec body the runtime sends, replayed by the bare side.
    let execBody = "";
    const recording: typeof fetch = async (input, init) => {
      if (String(input).endsWith("/exec")) execBody = String(init?.body);
      return await fetch(input, init);
    };
    const runtime = new DaytonaSkillRuntime({
      apiKey: KEY,
      baseUrl: server.url,
      fetch: recording,
    });
    await runtime.execute({ command: "true" });
    const toolbox = `${
      server.url.replace(/\/api$/, "/toolbox")
    }/${runtime.sandboxId}`;
    const post = async (path: string, body?: string, method = "POST") => {
      const response = await fetch(`${toolbox}${path}`, {
        method,
        headers: { ...AUTH, "content-type": "application/json" },
        ...(body === undefined ? {} : { body }),
      });
      await response.arrayBuffer();
    };
    await post("/process/session", JSON.stringify({ sessionId: "kept" }));
    let n = 0;
    return {
      run: async () => {
        const result = await runtime.execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
      // The same three requests the runtime makes, the same bodies: a
      // session, the command (wrapped as the runtime wraps it), the kill.
      bare: async () => {
        const id = `bare-${n++}`;
        await post("/process/session", JSON.stringify({ sessionId: id }));
        await post(`/process/session/${id}/exec`, execBody);
        await post(`/process/session/${id}`, undefined, "DELETE");
      },
      bareOne: () =>
        post(
          "/process/session/kept/exec",
          JSON.stringify({ command: "true" }),
        ),
      close: async () => {
        await runtime.close();
        await server.close();
      },
    };
  })();
}

// ---- a server in its own process (uploads and downloads) ----

let remote: Promise<{ child: Deno.ChildProcess; toolbox: string }> | undefined;

function sandbox(): Promise<{ child: Deno.ChildProcess; toolbox: string }> {
  return remote ??= (async () => {
    const { child, firstLine } = await startServerProcess([
      "run",
      "-A",
      new URL("../tests/servers/daytona.ts", import.meta.url).pathname,
      "--api-key",
      KEY,
    ], { what: "the Daytona test server", stderr: "null" });
    const created = await (await fetch(`${firstLine}/sandbox`, {
      method: "POST",
      headers: { ...AUTH, "content-type": "application/json" },
      body: "{}",
    })).json();
    return { child, toolbox: `${created.toolboxProxyUrl}/${created.id}` };
  })();
}

const TARGET = "/home/daytona/upload-target";
let files: Promise<RemoteUploadFile[]> | undefined;

async function uploadFiles(): Promise<RemoteUploadFile[]> {
  const entries = await collectUploadEntries(MANY, { policy: POLICY });
  return entries.map((entry) => ({
    remotePath: `${TARGET}/${entry.relativePath}`,
    content: { path: entry.localPath, size: entry.size },
  }));
}

async function oursUpload(): Promise<void> {
  const { toolbox } = await sandbox();
  await toolboxUpload(
    new HttpClient({ baseUrl: toolbox, headers: AUTH }),
    await (files ??= uploadFiles()),
  );
}

/** The same request: `curl -K` with a `form` line per part. */
async function curlUpload(): Promise<void> {
  const { toolbox } = await sandbox();
  const all = await (files ??= uploadFiles());
  const config = `${DATA}daytona-curl-upload.txt`;
  const quote = (text: string) => JSON.stringify(text);
  await Deno.writeTextFile(
    config,
    all.flatMap((file, i) => [
      `form = ${quote(`files[${i}].path=${file.remotePath}`)}`,
      `form = ${
        quote(`files[${i}].file=@${(file.content as { path: string }).path}`)
      }`,
    ]).join("\n") + "\n",
  );
  const status = await new Deno.Command("curl", {
    args: [
      "-s",
      "-f",
      "-o",
      "/dev/null",
      "-H",
      "Expect:",
      "-H",
      `Authorization: Bearer ${KEY}`,
      "-K",
      config,
      `${toolbox}/files/bulk-upload`,
    ],
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`curl exited with ${status.code}`);
}

const scratch = () => `${DATA}daytona-download`;

async function oursDownload(): Promise<void> {
  const { toolbox } = await sandbox();
  const http = new HttpClient({ baseUrl: toolbox, headers: AUTH });
  await Deno.mkdir(scratch(), { recursive: true });
  const { bytes } = await downloadToFile(
    (offset, signal) => toolboxDownload(http, BIG, offset, signal),
    `${scratch()}/ours.bin`,
    { expectedSize: BIG_SIZE },
  );
  if (bytes !== BIG_SIZE) throw new Error("short download");
}

async function curlDownload(): Promise<void> {
  const { toolbox } = await sandbox();
  await Deno.mkdir(scratch(), { recursive: true });
  const size = await curlToFile(
    `${toolbox}/files/download?path=${encodeURIComponent(BIG)}`,
    `${scratch()}/curl.bin`,
    { headers: [`Authorization: Bearer ${KEY}`] },
  );
  if (size !== BIG_SIZE) throw new Error("short download");
}

function skipWithoutCurl(): string | undefined {
  try {
    new Deno.Command("curl", { args: ["--version"] }).outputSync();
    return undefined;
  } catch {
    return "curl is not installed";
  }
}

/** The cases of this file. */
export const cases: BenchCase[] = [
  {
    id: "daytona-execute-true",
    title: 'Daytona execute("true") vs bare fetch of the same requests',
    module: import.meta.url,
    iterations: 30,
    rounds: 3,
    maxRatio: 1.2,
    ours: {
      label: 'runtime.execute({ command: "true" })',
      fn: async () => await (await execSetup()).run(),
    },
    baseline: {
      label: "bare fetch: session, the same exec body, delete session",
      fn: async () => await (await execSetup()).bare(),
    },
    extra: [{
      label: "bare fetch: one exec of plain `true` in a kept session",
      fn: async () => await (await execSetup()).bareOne(),
    }],
  },
  {
    id: "daytona-upload-5000-files",
    title:
      "Daytona upload of a generated 5,000-file skill (one multipart bulk-upload)",
    module: import.meta.url,
    setup: generateMany,
    iterations: 3,
    rounds: 2,
    maxRatio: 1.5,
    ours: { label: "toolboxUpload (streamed multipart)", fn: oursUpload },
    baseline: {
      label: "curl -K (a form line per part), the same request",
      fn: curlUpload,
    },
    skipReason: skipWithoutCurl,
  },
  {
    id: "daytona-download-1gib",
    title: "Daytona download of 1 GiB",
    module: import.meta.url,
    setup: generateBig,
    iterations: 2,
    rounds: 2,
    maxRatio: 1.25,
    maxRssMiB: 100,
    ours: {
      label: "downloadToFile over GET /files/download",
      fn: oursDownload,
    },
    baseline: { label: "curl -s -o", fn: curlDownload },
    skipReason: skipWithoutCurl,
  },
];

if (import.meta.main) {
  await runChild(cases);
  if (exec) await (await exec).close();
  if (remote) {
    const { child } = await remote;
    child.kill("SIGTERM");
    await child.status;
  }
}
