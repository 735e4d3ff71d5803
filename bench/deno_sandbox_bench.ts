/**
 * Deno Sandbox on its test server (issue 28): `execute("true")` against the
 * same JSON-RPC calls made by a bare WebSocket, the upload of a generated
 * 5,000-file skill against a bare WebSocket sending the same `writeFile`
 * calls (every one in flight at once), and a 1 GiB download against a bare
 * WebSocket reading the same handle a MiB at a time into a file (and, as an
 * extra, 64 KiB at a time: our piece size).
 *
 * @module
 */
import { type BenchCase, runChild, startServerProcess } from "./_harness.ts";
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
import { downloadToFile } from "../runtimes/remote/download.ts";
import {
  DenoSandboxSkillRuntime,
  download,
  upload,
} from "../runtimes/deno_sandbox/runtime.ts";
import { SandboxSocket } from "../runtimes/deno_sandbox/rpc.ts";
import { startDenoSandboxServer } from "../tests/servers/deno_sandbox.ts";

const DATA = new URL("./.data/", import.meta.url).pathname;
const TOKEN = "ddo_bench_token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A bare JSON-RPC client on a native WebSocket: calls by id, stream ends. */
class Bare {
  readonly #ws: WebSocket;
  #id = 0;
  readonly #waiting = new Map<
    number,
    (result: Record<string, unknown>) => void
  >();
  readonly #ends = new Map<number, () => void>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      if (message.id !== undefined) {
        this.#waiting.get(message.id)?.(message.result);
        this.#waiting.delete(message.id);
      } else if (message.method === "$sandbox.stream.end") {
        this.#ends.get(message.params.streamId)?.();
      }
    };
  }

  static async open(url: string): Promise<Bare> {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers: AUTH });
    await new Promise((resolve) => ws.onopen = resolve);
    return new Bare(ws);
  }

  call(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.#id++;
    const answer = new Promise<Record<string, unknown>>((resolve) =>
      this.#waiting.set(id, resolve)
    );
    this.#ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return answer;
  }

  ended(streamId: number): Promise<void> {
    return new Promise((resolve) => this.#ends.set(streamId, resolve));
  }

  close(): void {
    this.#ws.close();
  }
}

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
    const server = startDenoSandboxServer({ token: TOKEN });
    const runtime = new DenoSandboxSkillRuntime({
      token: TOKEN,
      baseUrl: server.url,
      consoleUrl: server.url,
    });
    await runtime.execute({ command: "true" });
    const spawned = server.rpc.find((r) => r.method === "spawn")!;
    const bare = await Bare.open(
      `${server.url}/api/v3/sandbox/${runtime.sandboxId}/connect`,
    );
    // The same call the runtime makes: spawn (the same params), its two
    // streams to their end, processWait.
    const one = async (params: unknown) => {
      const { ok } = await bare.call("spawn", params) as {
        ok: { pid: number; stdoutStreamId: number; stderrStreamId: number };
      };
      await Promise.all([
        bare.ended(ok.stdoutStreamId),
        bare.ended(ok.stderrStreamId),
        bare.call("processWait", { pid: ok.pid }),
      ]);
    };
    return {
      run: async () => {
        const result = await runtime.execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
      bare: () => one(spawned.params),
      bareOne: () => one({ command: "true", stdout: "piped", stderr: "piped" }),
      close: async () => {
        bare.close();
        await runtime.close();
        await server.close();
      },
    };
  })();
}

// ---- a server in its own process (uploads and downloads) ----

let remote: Promise<{ child: Deno.ChildProcess; url: string }> | undefined;

function sandbox(): Promise<{ child: Deno.ChildProcess; url: string }> {
  return remote ??= (async () => {
    const { child, firstLine } = await startServerProcess([
      "run",
      "-A",
      new URL("../tests/servers/deno_sandbox.ts", import.meta.url).pathname,
      "--token",
      TOKEN,
    ], { what: "the Deno Sandbox test server", stderr: "null" });
    const config = btoa(JSON.stringify({
      stop_at_ms: Date.now() + 3600_000,
      labels: { bench: "1" },
      volumes: [],
    }));
    const maker = new WebSocket(
      `${firstLine.replace(/^http/, "ws")}/api/v3/sandboxes/create`,
      { headers: { ...AUTH, "x-deno-sandbox-config": config } },
    );
    await new Promise((resolve) => maker.onopen = resolve);
    const [box] = await (await fetch(
      `${firstLine}/api/v2/sandboxes?${encodeURIComponent("labels[bench]")}=1`,
      { headers: AUTH },
    )).json();
    maker.close();
    return { child, url: `${firstLine}/api/v3/sandbox/${box.id}/connect` };
  })();
}

async function socket(): Promise<SandboxSocket> {
  const { url } = await sandbox();
  return await SandboxSocket.open(url.replace(/^http/, "ws"), AUTH, 30_000);
}

const TARGET = "/home/app/upload-target";
let files: Promise<RemoteUploadFile[]> | undefined;

async function uploadFiles(): Promise<RemoteUploadFile[]> {
  const entries = await collectUploadEntries(MANY, { policy: POLICY });
  return entries.map((entry) => ({
    remotePath: `${TARGET}/${entry.relativePath}`,
    content: { path: entry.localPath, size: entry.size },
  }));
}

async function oursUpload(): Promise<void> {
  const rpc = await socket();
  try {
    await upload(rpc, await (files ??= uploadFiles()));
  } finally {
    rpc.close();
  }
}

/** The same calls, bare: the folders, then every writeFile at once. */
async function bareUpload(): Promise<void> {
  const { url } = await sandbox();
  const bare = await Bare.open(url);
  try {
    const all = await (files ??= uploadFiles());
    const folders = new Set(
      all.map((f) => f.remotePath.replace(/\/[^/]*$/, "")),
    );
    await Promise.all(
      [...folders].map((path) =>
        bare.call("mkdir", { path, options: { recursive: true } })
      ),
    );
    await Promise.all(all.map(async (file) => {
      const bytes = await Deno.readFile(
        (file.content as { path: string }).path,
      );
      const result = await bare.call("writeFile", {
        path: file.remotePath,
        content: bytes.toBase64(),
      });
      if (!("ok" in result)) throw new Error("writeFile failed");
    }));
  } finally {
    bare.close();
  }
}

const scratch = () => `${DATA}deno-sandbox-download`;

async function oursDownload(): Promise<void> {
  const rpc = await socket();
  try {
    await Deno.mkdir(scratch(), { recursive: true });
    const { bytes } = await downloadToFile(
      (offset, signal) => download(rpc, BIG, offset, signal),
      `${scratch()}/ours.bin`,
      { expectedSize: BIG_SIZE },
    );
    if (bytes !== BIG_SIZE) throw new Error("short download");
  } finally {
    rpc.close();
  }
}

/**
 * The same calls, bare: open, fileRead `length` bytes at a time (a MiB, its
 * fastest; or ours, 64 KiB), each piece written out as it comes.
 */
async function bareDownload(length = 1 << 20): Promise<void> {
  const { url } = await sandbox();
  const bare = await Bare.open(url);
  await Deno.mkdir(scratch(), { recursive: true });
  const out = await Deno.open(`${scratch()}/bare.bin`, {
    write: true,
    create: true,
    truncate: true,
  });
  try {
    const opened = await bare.call("open", {
      path: BIG,
      options: { read: true },
    }) as { ok: { fileHandleId: number } };
    const fileHandleId = opened.ok.fileHandleId;
    let total = 0;
    while (true) {
      const { ok } = await bare.call("fileRead", {
        fileHandleId,
        length,
      }) as { ok: { data: string | null } };
      if (ok.data === null) break;
      const bytes = Uint8Array.fromBase64(ok.data);
      total += bytes.length;
      await out.write(bytes);
    }
    await bare.call("fileClose", { fileHandleId });
    if (total !== BIG_SIZE) throw new Error("short download");
  } finally {
    out.close();
    bare.close();
  }
}

/** The cases of this file. */
export const cases: BenchCase[] = [
  {
    id: "deno-sandbox-execute-true",
    title:
      'Deno Sandbox execute("true") vs a bare WebSocket making the same calls',
    module: import.meta.url,
    iterations: 30,
    rounds: 3,
    maxRatio: 1.2,
    ours: {
      label: 'runtime.execute({ command: "true" })',
      fn: async () => await (await execSetup()).run(),
    },
    baseline: {
      label: "bare WebSocket: the same spawn, its streams' ends, processWait",
      fn: async () => await (await execSetup()).bare(),
    },
    extra: [{
      label: "bare WebSocket: spawn of plain `true` (no bash, no timeout)",
      fn: async () => await (await execSetup()).bareOne(),
    }],
  },
  {
    id: "deno-sandbox-upload-5000-files",
    title:
      "Deno Sandbox upload of a generated 5,000-file skill (writeFile calls)",
    module: import.meta.url,
    setup: generateMany,
    iterations: 3,
    rounds: 2,
    maxRatio: 1.5,
    ours: { label: "upload (64 writeFile in flight)", fn: oursUpload },
    baseline: {
      label: "bare WebSocket: every writeFile in flight at once",
      fn: bareUpload,
    },
  },
  {
    id: "deno-sandbox-download-1gib",
    title: "Deno Sandbox download of 1 GiB",
    module: import.meta.url,
    setup: generateBig,
    iterations: 2,
    rounds: 2,
    maxRatio: 1.25,
    maxRssMiB: 100,
    ours: {
      label: "downloadToFile over open + fileRead (64 KiB)",
      fn: oursDownload,
    },
    baseline: {
      label: "bare WebSocket: open + fileRead (1 MiB) into a file",
      fn: () => bareDownload(),
    },
    extra: [{
      label: "bare WebSocket: open + fileRead (64 KiB, our piece) into a file",
      fn: () => bareDownload(64 << 10),
    }],
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
