/**
 * The shared remote machinery against `curl` on loopback: a 1 GiB download
 * with `downloadToFile` (through `HttpClient`) against `curl -s -o`, and the
 * upload of a skill folder as one streamed multipart request
 * (`collectUploadEntries` + `multipartBody` + `HttpClient`) against
 * `curl -F` with the same files, for `canvas-design` and a generated skill of
 * 5,000 small files. The file server runs in its own process (started by
 * each side's child), so a side's peak memory is the client's alone.
 *
 * @module
 */
import {
  type BenchCase,
  curlToFile,
  runChild,
  startServerProcess,
} from "./_harness.ts";
import { HttpClient } from "../runtimes/remote/http.ts";
import { downloadToFile } from "../runtimes/remote/download.ts";
import {
  collectUploadEntries,
  multipartBody,
} from "../runtimes/remote/upload.ts";

const CANVAS = new URL(
  "../../shared/corpora/anthropics-skills/skills/canvas-design",
  import.meta.url,
).pathname;
const DATA = new URL("./.data/", import.meta.url).pathname;
/** The 1 GiB file (also downloaded by `hosted_bench.ts`). */
export const BIG = `${DATA}remote-1gib.bin`;
/** Its size. */
export const BIG_SIZE = 1024 * 1024 * 1024;
/** The generated 5,000-file skill (also uploaded by `opensandbox_bench.ts`). */
export const MANY = `${DATA}remote-many-files-skill`;
const MANY_FOLDERS = 50;
const MANY_PER_FOLDER = 100;

/** Writes the 1 GiB file once (a marker says it is whole). */
export async function generateBig(): Promise<void> {
  const marker = `${BIG}.complete`;
  try {
    await Deno.stat(marker);
    return;
  } catch {
    // not generated yet
  }
  await Deno.mkdir(DATA, { recursive: true });
  const file = await Deno.open(BIG, {
    write: true,
    create: true,
    truncate: true,
  });
  try {
    const block = new Uint8Array(4 * 1024 * 1024);
    for (let i = 0; i < block.length; i += 65536) {
      crypto.getRandomValues(block.subarray(i, i + 65536));
    }
    for (let written = 0; written < BIG_SIZE; written += block.length) {
      block[0] = written & 0xff; // blocks differ
      for (let offset = 0; offset < block.length;) {
        offset += await file.write(block.subarray(offset));
      }
    }
  } finally {
    file.close();
  }
  await Deno.writeTextFile(marker, "");
}

/** Generates the 5,000-file skill once (a marker says it is whole). */
export async function generateMany(): Promise<void> {
  const marker = `${MANY}/.complete`;
  try {
    await Deno.stat(marker);
    return;
  } catch {
    // not generated yet (or half-generated): build it again
  }
  await Deno.remove(MANY, { recursive: true }).catch(() => {});
  await Deno.mkdir(MANY, { recursive: true });
  await Deno.writeTextFile(
    `${MANY}/SKILL.md`,
    "---\nname: remote-many-files-skill\ndescription: Benchmark skill\n---\n",
  );
  for (let d = 0; d < MANY_FOLDERS; d++) {
    const folder = `${MANY}/part-${String(d).padStart(2, "0")}`;
    await Deno.mkdir(folder);
    await Promise.all(
      Array.from({ length: MANY_PER_FOLDER }, (_, f) =>
        Deno.writeTextFile(
          `${folder}/file-${String(f).padStart(3, "0")}.txt`,
          `line ${d}-${f}\n`.repeat(1 + (f % 20)),
          f % 10 === 0 ? { mode: 0o755 } : {},
        )),
    );
  }
  // The marker is not part of the skill's upload (excluded below).
  await Deno.writeTextFile(marker, "");
}

// ---- the file server (its own process) ----

/** Serves `DATA` files with Range, and drains uploads, counting them. */
function serveFiles(): void {
  let uploads = 0;
  const server = Deno.serve(
    {
      port: 0,
      hostname: "127.0.0.1",
      onListen({ port }) {
        console.log(`http://127.0.0.1:${port}`);
      },
    },
    async (request) => {
      const url = new URL(request.url);
      if (request.method === "POST" && url.pathname === "/upload") {
        uploads++;
        let bytes = 0;
        for await (const chunk of request.body!) bytes += chunk.length;
        return Response.json({ bytes, uploads });
      }
      if (url.pathname.startsWith("/files/")) {
        const path = `${DATA}${url.pathname.slice("/files/".length)}`;
        const file = await Deno.open(path, { read: true });
        const size = (await file.stat()).size;
        const range = /^bytes=(\d+)-$/.exec(request.headers.get("range") ?? "");
        const start = range ? Number(range[1]) : 0;
        if (start > 0) await file.seek(start, Deno.SeekMode.Start);
        return new Response(file.readable, {
          status: range ? 206 : 200,
          headers: range
            ? { "content-range": `bytes ${start}-${size - 1}/${size}` }
            : { "content-length": String(size) },
        });
      }
      return new Response("not found", { status: 404 });
    },
  );
  // Stop when the parent closes our stdin.
  (async () => {
    for await (const _ of Deno.stdin.readable) {
      // ignore input
    }
    await server.shutdown();
    Deno.exit(0);
  })();
}

let serverUrl: string | undefined;

/** Starts the file server process for this child, once. */
async function startServer(): Promise<string> {
  if (serverUrl) return serverUrl;
  // Our exit closes its stdin, which stops it.
  serverUrl = (await startServerProcess(
    ["run", "--allow-all", new URL(import.meta.url).pathname, "--serve"],
    { what: "The bench file server", stdin: "piped" },
  )).firstLine;
  return serverUrl;
}

// ---- the sides ----

let scratch: string | undefined;

/** This child's scratch folder for downloads. */
function scratchDir(): string {
  if (scratch === undefined) {
    Deno.mkdirSync(DATA, { recursive: true });
    scratch = Deno.makeTempDirSync({ dir: DATA, prefix: "remote-targets-" });
    const dir = scratch;
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(dir, { recursive: true });
    });
  }
  return scratch;
}

async function oursDownload(): Promise<void> {
  const url = await startServer();
  const http = new HttpClient({ baseUrl: url });
  const result = await downloadToFile(
    (offset, signal) =>
      http.request({
        method: "GET",
        path: "/files/remote-1gib.bin",
        headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
        timeoutMs: null,
        idleTimeoutMs: 30_000,
        ...(signal ? { signal } : {}),
      }),
    `${scratchDir()}/big.bin`,
    { expectedSize: BIG_SIZE },
  );
  if (result.bytes !== BIG_SIZE) throw new Error("short download");
}

/**
 * Deno's floor: a bare `fetch` piped into the file's `writable`, which Deno
 * runs without JavaScript per chunk; no resume, no size check, no count.
 */
async function bareDenoDownload(): Promise<void> {
  const url = await startServer();
  const target = `${scratchDir()}/big-bare.bin`;
  const response = await fetch(`${url}/files/remote-1gib.bin`);
  const file = await Deno.open(target, {
    write: true,
    create: true,
    truncate: true,
  });
  await response.body!.pipeTo(file.writable);
  if ((await Deno.stat(target)).size !== BIG_SIZE) {
    throw new Error("short download");
  }
}

/**
 * The honest baseline of a download that knows how many bytes reached the
 * file (what resuming needs): a bare `fetch` read loop writing each chunk.
 */
async function bareDenoLoopDownload(): Promise<void> {
  const url = await startServer();
  const target = `${scratchDir()}/big-loop.bin`;
  const response = await fetch(`${url}/files/remote-1gib.bin`);
  using file = await Deno.open(target, {
    write: true,
    create: true,
    truncate: true,
  });
  let bytes = 0;
  for await (const chunk of response.body!) {
    for (let at = 0; at < chunk.length;) {
      at += await file.write(chunk.subarray(at));
    }
    bytes += chunk.length;
  }
  if (bytes !== BIG_SIZE) throw new Error("short download");
}

async function curlDownload(options: { sync?: boolean } = {}): Promise<void> {
  const url = await startServer();
  const size = await curlToFile(
    `${url}/files/remote-1gib.bin`,
    `${scratchDir()}/big-curl.bin`,
    options,
  );
  if (size !== BIG_SIZE) throw new Error("short download");
}

/** Leaves the generation marker out of an upload of {@linkcode MANY}. */
export const POLICY = { extraExcludes: ["/.complete"] };

/** Uploads a skill as one multipart request with our code. */
async function oursUpload(source: string): Promise<void> {
  const url = await startServer();
  const entries = await collectUploadEntries(source, { policy: POLICY });
  const { body, contentType, length } = multipartBody(
    entries.map((entry) => ({
      name: "file",
      filename: entry.relativePath,
      content: { path: entry.localPath, size: entry.size },
    })),
  );
  const answer = await new HttpClient({ baseUrl: url }).json<
    { bytes: number }
  >({
    method: "POST",
    path: "/upload",
    body,
    headers: { "content-type": contentType },
  });
  if (answer.bytes !== length) throw new Error("upload length mismatch");
}

const curlArgs = new Map<string, string[]>();

/** Uploads the same files with `curl -F` (its file list built once). */
async function curlUpload(source: string): Promise<void> {
  const url = await startServer();
  let args = curlArgs.get(source);
  if (!args) {
    const entries = await collectUploadEntries(source, { policy: POLICY });
    args = ["-s", "-f", "-o", "/dev/null", "-H", "Expect:"];
    for (const entry of entries) {
      args.push(
        "-F",
        `file=@${entry.localPath};filename=${entry.relativePath}`,
      );
    }
    args.push(`${url}/upload`);
    curlArgs.set(source, args);
  }
  const status = await new Deno.Command("curl", {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`curl exited with ${status.code}`);
}

function skipWithoutCurl(): string | undefined {
  try {
    new Deno.Command("curl", { args: ["--version"] }).outputSync();
    return undefined;
  } catch {
    return "curl is not installed";
  }
}

/** The cases. */
export const cases: BenchCase[] = [
  {
    id: "remote-download-1gib",
    title: "download 1 GiB over loopback (Range-capable server)",
    module: import.meta.url,
    setup: generateBig,
    ours: { label: "downloadToFile", fn: oursDownload },
    baseline: { label: "curl -s -o", fn: () => curlDownload() },
    extra: [{
      label: "curl -s -o, then sync --data (flushed to disk as ours is)",
      fn: () => curlDownload({ sync: true }),
    }, {
      label: "bare fetch + pipeTo(file.writable)",
      fn: bareDenoDownload,
    }, {
      label: "bare fetch read loop + write",
      fn: bareDenoLoopDownload,
    }],
    iterations: 3,
    rounds: 2,
    maxRatio: 1.25,
    maxRssMiB: 100,
    skipReason: skipWithoutCurl,
  },
  {
    id: "remote-upload-canvas-design",
    title: "upload canvas-design (83 files, 5.5 MB) in 1 multipart request",
    module: import.meta.url,
    ours: {
      label: "multipartBody + HttpClient",
      fn: () => oursUpload(CANVAS),
    },
    baseline: { label: "curl -F (1 request)", fn: () => curlUpload(CANVAS) },
    iterations: 10,
    rounds: 7,
    maxRatio: 1.5,
    skipReason: skipWithoutCurl,
  },
  {
    id: "remote-upload-5000-files",
    title: "upload a generated 5,000-file skill in 1 multipart request",
    module: import.meta.url,
    setup: generateMany,
    ours: {
      label: "multipartBody + HttpClient",
      fn: () => oursUpload(MANY),
    },
    baseline: { label: "curl -F (1 request)", fn: () => curlUpload(MANY) },
    iterations: 5,
    rounds: 5,
    maxRatio: 1.5,
    skipReason: skipWithoutCurl,
  },
];

if (import.meta.main) {
  if (Deno.args[0] === "--serve") serveFiles();
  else await runChild(cases);
}
