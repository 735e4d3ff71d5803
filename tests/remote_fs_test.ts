import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertLess,
  assertRejects,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { WorkspaceEscapeError } from "../runtimes/errors.ts";
import type { FileInfo } from "../runtimes/types.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";
import { HttpClient } from "../runtimes/remote/http.ts";
import { multipartBody } from "../runtimes/remote/upload.ts";
import { type RemoteFileOps, RemoteFileSystem } from "../runtimes/remote/fs.ts";
import { serve } from "./helpers/remote_servers.ts";
import { skillCorpus } from "./helpers/skill_fixture.ts";
import { delay } from "../_internal/async.ts";

// A real font when ../shared is beside the clone, else a generated one.
const corpus = await skillCorpus();
const FONT = corpus.real
  ? `${corpus.skill("canvas-design")}/canvas-fonts/ArsenalSC-Regular.ttf`
  : `${corpus.skill("canvas-design")}/canvas-fonts/FixtureSans-Regular.ttf`;
const REMOTE_ROOT = "/w";

async function sha256(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as BufferSource);
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

interface Harness extends AsyncDisposable {
  root: string;
  requests: string[];
  ops: RemoteFileOps;
  /** Bytes the endless file sent before it was cancelled. */
  endless: { sent: number; cancelled: boolean };
  /** Drop the next download after this many bytes. */
  dropNext: { after: number | null };
}

/**
 * A small file server over a temporary folder (`/w/...` maps into it), and
 * the RemoteFileOps a runtime would write for it, through HttpClient.
 */
async function harness(): Promise<Harness> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-remote-fs-" }),
  );
  const requests: string[] = [];
  const endless = { sent: 0, cancelled: false };
  const dropNext = { after: null as number | null };
  const local = (remote: string) => {
    assert(remote === REMOTE_ROOT || remote.startsWith(`${REMOTE_ROOT}/`));
    return hostPath.join(root, remote.slice(REMOTE_ROOT.length));
  };
  const info = async (remote: string): Promise<FileInfo | null> => {
    try {
      const stat = await Deno.lstat(local(remote));
      return {
        path: remote,
        name: remote.slice(remote.lastIndexOf("/") + 1),
        type: stat.isSymlink
          ? "symlink"
          : stat.isDirectory
          ? "directory"
          : "file",
        size: stat.size,
        modifiedAt: stat.mtime,
      };
    } catch {
      return null;
    }
  };
  const server = serve(async (request) => {
    const url = new URL(request.url);
    requests.push(`${request.method} ${url.pathname}`);
    const path = url.searchParams.get("path") ?? "";
    if (url.pathname === "/info") {
      const found = await info(path);
      return found
        ? Response.json(found)
        : Response.json({ code: "FILE_NOT_FOUND", message: `no ${path}` }, {
          status: 404,
        });
    }
    if (url.pathname === "/list") {
      const depth = Number(url.searchParams.get("depth"));
      if (!await info(path)) {
        return Response.json({ code: "FILE_NOT_FOUND", message: "gone" }, {
          status: 404,
        });
      }
      const out: FileInfo[] = [];
      const walk = async (dir: string, level: number) => {
        for await (const entry of Deno.readDir(local(dir))) {
          const child = `${dir}/${entry.name}`;
          out.push((await info(child))!);
          if (entry.isDirectory && level < depth) await walk(child, level + 1);
        }
      };
      await walk(path, 1);
      return Response.json(out.reverse()); // any order
    }
    if (url.pathname === "/download") {
      if (path === `${REMOTE_ROOT}/endless`) {
        return new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              endless.sent += 65536;
              controller.enqueue(new Uint8Array(65536).fill(97));
            },
            cancel() {
              endless.cancelled = true;
            },
          }),
        );
      }
      let data: Uint8Array;
      try {
        data = await Deno.readFile(local(path));
      } catch {
        return Response.json({ code: "FILE_NOT_FOUND", message: "gone" }, {
          status: 404,
        });
      }
      const range = /^bytes=(\d+)-$/.exec(request.headers.get("range") ?? "");
      const start = range ? Number(range[1]) : 0;
      const rest = data.subarray(start);
      const headers: Record<string, string> = range
        ? {
          "content-range": `bytes ${start}-${data.length - 1}/${data.length}`,
        }
        : { "content-length": String(data.length) };
      const drop = dropNext.after;
      dropNext.after = null;
      let sent = false;
      const body = drop === null ? rest : new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (!sent) {
            sent = true;
            controller.enqueue(rest.slice(0, drop));
            return;
          }
          await delay(30);
          controller.error(new Error("test server: reset on purpose"));
        },
      });
      return new Response(body as BodyInit, {
        status: range ? 206 : 200,
        headers,
      });
    }
    if (url.pathname === "/upload" && request.method === "POST") {
      const form = await request.formData();
      const metadata = form.getAll("metadata");
      const files = form.getAll("file");
      for (let i = 0; i < files.length; i++) {
        const meta = JSON.parse(
          await (metadata[i] as File).text(),
        ) as { path: string; mode?: number };
        const target = local(meta.path);
        await Deno.mkdir(hostPath.dirname(target), { recursive: true });
        await Deno.writeFile(
          target,
          new Uint8Array(await (files[i] as File).arrayBuffer()),
        );
      }
      return new Response(null, { status: 200 });
    }
    return new Response("404 page not found", { status: 404 });
  });
  const http = new HttpClient({ baseUrl: server.url, retryDelayMs: 1 });
  const ops: RemoteFileOps = {
    async stat(path, signal) {
      try {
        return await http.json<FileInfo>({
          method: "GET",
          path: "/info",
          query: { path },
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (
          error instanceof Error && "status" in error && error.status === 404
        ) {
          return null;
        }
        throw error;
      }
    },
    async list(path, options) {
      return await http.json<FileInfo[]>({
        method: "GET",
        path: "/list",
        query: { path, depth: String(options.depth) },
      });
    },
    open(path, options) {
      return http.request({
        method: "GET",
        path: "/download",
        query: { path },
        headers: options.offset > 0
          ? { range: `bytes=${options.offset}-` }
          : {},
        timeoutMs: null,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    },
    async upload(files, signal) {
      const { body, contentType } = multipartBody(
        files.flatMap((file) => [
          {
            name: "metadata",
            filename: "metadata",
            contentType: "application/json",
            content: JSON.stringify({ path: file.remotePath }),
          },
          { name: "file", filename: "file", content: file.content },
        ]),
        signal ? { signal } : {},
      );
      const response = await http.request({
        method: "POST",
        path: "/upload",
        body,
        headers: { "content-type": contentType },
        ...(signal ? { signal } : {}),
      });
      await response.body?.cancel();
    },
  };
  return {
    root,
    requests,
    ops,
    endless,
    dropNext,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      await Deno.remove(root, { recursive: true });
    },
  };
}

function fenced(ops: RemoteFileOps | (() => Promise<RemoteFileOps>)) {
  return new RemoteFileSystem(ops, {
    cwd: REMOTE_ROOT,
    fenceRoot: REMOTE_ROOT,
  });
}

Deno.test("RemoteFileSystem makes no request until real use, nor for a refused path", async () => {
  await using h = await harness();
  let started = 0;
  const fs = fenced(() => {
    started++;
    return Promise.resolve(h.ops);
  });
  for (
    const attempt of [
      () => fs.readText("../etc/passwd", { maxBytes: 10 }),
      () => fs.readBytes("/etc/passwd"),
      () => fs.writeText("/w2/x", "x"),
      () => fs.stat("a/../../x"),
      () => fs.list("/"),
      () => fs.readStream(".."),
      () => fs.download("/etc/shadow", hostPath.join(h.root, "x")),
    ]
  ) {
    const error = await assertRejects(attempt);
    assertInstanceOf(error, WorkspaceEscapeError);
    assertStringIncludes(error.message, 'outside the workspace "/w"');
  }
  await assertRejects(() => fs.stat("a\0b"), TypeError, "NUL");
  assertEquals(started, 0);
  assertEquals(h.requests, []);
  assertEquals(await fs.resolve("a/./b"), "/w/a/b");
  assertEquals(await fs.stat("missing.txt"), null);
  assertEquals(started, 1);
  assertEquals(h.requests, ["GET /info"]);
});

Deno.test("RemoteFileSystem retries a failed lazy start on the next call", async () => {
  await using h = await harness();
  let attempts = 0;
  const fs = fenced(() => {
    attempts++;
    return attempts === 1
      ? Promise.reject(new Error("sandbox not ready"))
      : Promise.resolve(h.ops);
  });
  await assertRejects(() => fs.stat("x"), Error, "sandbox not ready");
  assertEquals(await fs.stat("x"), null);
  assertEquals(await fs.stat("y"), null);
  assertEquals(attempts, 2);
});

Deno.test("RemoteFileSystem writes and reads text, creating parents, keeping a BOM", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  const text = "\uFEFFhé ☕\r\nline 2\n";
  await fs.writeText("deep/er/a.txt", text);
  assertEquals(
    await Deno.readTextFile(hostPath.join(h.root, "deep/er/a.txt")),
    text,
  );
  assertEquals(await fs.readText("/w/deep/er/a.txt", { maxBytes: 100 }), text);
  await assertRejects(
    () => fs.writeText("b.txt", 42 as unknown as string),
    TypeError,
    "not text",
  );
});

Deno.test("RemoteFileSystem caps text reads while streaming and cancels the rest", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  await Deno.writeFile(
    hostPath.join(h.root, "big.txt"),
    new Uint8Array(2 << 20),
  );
  const before = h.requests.length;
  await assertRejects(
    () => fs.readText("big.txt", { maxBytes: 1 << 20 }),
    RangeError,
    'Cannot read "big.txt": file is larger than the 1 MiB limit',
  );
  // One download, after the link check: the workspace root and the file,
  // looked at in parallel.
  assertEquals(h.requests.length, before + 3);
  // Without a Content-Length: the limit holds while streaming.
  await assertRejects(
    () => fs.readText("endless", { maxBytes: 1 << 20 }),
    RangeError,
    "larger than the 1 MiB limit",
  );
  for (let i = 0; i < 50 && !h.endless.cancelled; i++) await delay(20);
  assert(h.endless.cancelled, "the endless body was not cancelled");
  assertLess(h.endless.sent, 16 << 20);
  await assertRejects(
    () => fs.readBytes("endless", { maxBytes: 1000 }),
    RangeError,
    "larger than the 1000 bytes limit",
  );
  await assertRejects(
    () => fs.readText("big.txt", { maxBytes: -1 }),
    RangeError,
  );
});

Deno.test("RemoteFileSystem reads binary files byte-identical (bytes and stream)", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  const font = await Deno.readFile(FONT);
  await Deno.copyFile(FONT, hostPath.join(h.root, "font.ttf"));
  assertEquals(await fs.readBytes("font.ttf"), font);
  const stream = await fs.readStream("font.ttf");
  assertEquals(new Uint8Array(await new Response(stream).arrayBuffer()), font);
  await assertRejects(
    () => fs.readBytes("missing.bin"),
    Deno.errors.NotFound,
    'Cannot read "missing.bin": no such file',
  );
});

Deno.test("RemoteFileSystem stat: file, folder, missing", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  await Deno.mkdir(hostPath.join(h.root, "dir"));
  await Deno.writeTextFile(hostPath.join(h.root, "dir/f.txt"), "abc");
  const file = await fs.stat("dir/f.txt");
  assertEquals([file?.type, file?.size, file?.path], [
    "file",
    3,
    "/w/dir/f.txt",
  ]);
  assertEquals((await fs.stat("dir"))?.type, "directory");
  assertEquals(await fs.stat("dir/none"), null);
});

Deno.test("RemoteFileSystem list matches the local file system's order, depth, limit and filesOnly", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  for (
    const path of [
      "b.txt",
      "a/c.txt",
      "a/z/d.txt",
      "a.txt",
      "A/e.txt",
      "a/z/y/deep.txt",
    ]
  ) {
    const target = hostPath.join(h.root, path);
    await Deno.mkdir(hostPath.dirname(target), { recursive: true });
    await Deno.writeTextFile(target, path);
  }
  const localFs = new LocalFileSystem({ cwd: h.root });
  const rel = (p: string, base: string) => p.slice(base.length + 1);
  for (
    const options of [
      {},
      { depth: 2 },
      { depth: 3, filesOnly: true },
      { depth: 10, limit: 4 },
      { depth: 2, limit: 3, filesOnly: true },
    ]
  ) {
    const remote = await fs.list(".", options);
    const local = await localFs.list(".", options);
    assertEquals(
      remote.entries.map((e) => `${rel(e.path, REMOTE_ROOT)}:${e.type}`),
      local.entries.map((e) => `${rel(e.path, h.root)}:${e.type}`),
      JSON.stringify(options),
    );
    assertEquals(remote.truncated, local.truncated, JSON.stringify(options));
  }
  assertEquals(
    (await fs.list("a")).entries.map((e) => e.name),
    ["c.txt", "z"],
  );
  await assertRejects(
    () => fs.list("nope"),
    Deno.errors.NotFound,
    'Cannot list "nope": no such folder',
  );
  await assertRejects(() => fs.list(".", { depth: 0 }), RangeError);
});

Deno.test("RemoteFileSystem download resumes after a drop and leaves nothing on failure", async () => {
  await using h = await harness();
  const fs = fenced(h.ops);
  const font = await Deno.readFile(FONT);
  await Deno.copyFile(FONT, hostPath.join(h.root, "font.ttf"));
  const out = await Deno.makeTempDir({ prefix: "skillrun-remote-fs-out-" });
  try {
    h.dropNext.after = 50_000;
    const target = hostPath.join(out, "sub", "font.ttf");
    const result = await fs.download("font.ttf", target);
    assertEquals(result, { localPath: target, bytes: font.length });
    assertEquals(await sha256(await Deno.readFile(target)), await sha256(font));
    assertEquals(h.requests.filter((r) => r === "GET /download").length, 2);

    await assertRejects(
      () => fs.download("missing.ttf", hostPath.join(out, "missing.ttf")),
      Deno.errors.NotFound,
    );
    const controller = new AbortController();
    const pending = fs.download("endless", hostPath.join(out, "endless"), {
      signal: controller.signal,
    });
    setTimeout(
      () => controller.abort(new DOMException("stop", "AbortError")),
      100,
    );
    await assertRejects(() => pending, DOMException, "stop");
    const left: string[] = [];
    for await (const entry of Deno.readDir(hostPath.join(out, "sub"))) {
      left.push(entry.name);
    }
    assertEquals(left, ["font.ttf"]);
    const top: string[] = [];
    for await (const entry of Deno.readDir(out)) top.push(entry.name);
    assertEquals(top, ["sub"]);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("RemoteFileSystem without a fence resolves against its default directory", async () => {
  await using h = await harness();
  const fs = new RemoteFileSystem(h.ops, { cwd: "/w/skills" });
  assertEquals(fs.fenceRoot, undefined);
  assertEquals(await fs.resolve("pdf/SKILL.md"), "/w/skills/pdf/SKILL.md");
  assertEquals(await fs.resolve("../x"), "/w/x");
  assertEquals(await fs.resolve("/etc/hosts"), "/etc/hosts");
  let error: unknown;
  try {
    new RemoteFileSystem(h.ops, {
      cwd: "/other",
      fenceRoot: "/w",
    });
  } catch (e) {
    error = e;
  }
  assertInstanceOf(error, TypeError);
});
