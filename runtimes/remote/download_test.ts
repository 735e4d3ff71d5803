import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { downloadToFile, type OpenAtOffset } from "./download.ts";
import { HttpClient } from "./http.ts";
import { RemoteHttpError } from "./errors.ts";
import {
  type RawRequest,
  serve,
  serveRaw,
  writeAll,
} from "../../tests/helpers/remote_servers.ts";
import { delay } from "../../_internal/async.ts";

const DATA = (() => {
  const bytes = new Uint8Array(3 * 1024 * 1024 + 17);
  for (let i = 0; i < bytes.length; i += 65536) {
    crypto.getRandomValues(
      bytes.subarray(i, Math.min(i + 65536, bytes.length)),
    );
  }
  return bytes;
})();

async function tempDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "skillrun-download-" });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true });
    },
  };
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out.sort();
}

function rangeStart(request: RawRequest | Request): number | null {
  const match = /^bytes=(\d+)-$/.exec(request.headers.get("range") ?? "");
  return match ? Number(match[1]) : null;
}

/** A body that sends `bytes`, then resets the connection. */
function dropAfter(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(bytes);
        return;
      }
      await delay(50);
      controller.error(new Error("test server: connection reset on purpose"));
    },
  });
}

/** Opens through fetch, with `Range: bytes=n-` past zero. */
function fetchOpen(url: string, seen: (number | null)[] = []): OpenAtOffset {
  return async (offset, signal) => {
    seen.push(offset);
    return await fetch(url, {
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
      signal: signal ?? null,
    });
  };
}

/**
 * A raw server for DATA: `plan(index, start)` says how many bytes of the
 * answer to send before closing (`Infinity`: all), whether to honour Range.
 */
function rawFileServer(
  plan: (index: number, start: number | null) => {
    send: number;
    ignoreRange?: boolean;
    wrongStart?: number;
    noContentRange?: boolean;
  },
) {
  const starts: (number | null)[] = [];
  const server = serveRaw(async (request, conn, index) => {
    const start = rangeStart(request);
    starts.push(start);
    const step = plan(index, start);
    let head: string;
    let from = 0;
    if (start !== null && !step.ignoreRange) {
      from = step.wrongStart ?? start;
      head = `HTTP/1.1 206 Partial Content\r\ncontent-length: ${
        DATA.length - from
      }\r\n${
        step.noContentRange
          ? ""
          : `content-range: bytes ${from}-${DATA.length - 1}/${DATA.length}\r\n`
      }`;
    } else {
      head = `HTTP/1.1 200 OK\r\ncontent-length: ${DATA.length}\r\n`;
    }
    await writeAll(conn, `${head}connection: close\r\n\r\n`);
    const end = Math.min(DATA.length, from + step.send);
    await writeAll(conn, DATA.subarray(from, end));
  });
  return { server, starts };
}

Deno.test("downloadToFile resumes with Range after dropped connections", async () => {
  await using dir = await tempDir();
  const { server, starts } = rawFileServer((index) => ({
    send: index < 2 ? 1_000_000 + index * 7 : Infinity,
  }));
  await using _ = server;
  const target = hostPath.join(dir.path, "out.bin");
  const result = await downloadToFile(fetchOpen(server.url), target);
  assertEquals(result, { localPath: target, bytes: DATA.length });
  assertEquals(await Deno.readFile(target), DATA);
  assertEquals(starts, [null, 1_000_000, 2_000_007]);
  assertEquals(await names(dir.path), ["out.bin"]);
});

Deno.test("downloadToFile starts over from zero when a server ignores Range", async () => {
  await using dir = await tempDir();
  const { server, starts } = rawFileServer((index) => ({
    send: index === 0 ? 1_234_567 : Infinity,
    ignoreRange: true,
  }));
  await using _ = server;
  const target = hostPath.join(dir.path, "out.bin");
  const result = await downloadToFile(fetchOpen(server.url), target);
  assertEquals(result.bytes, DATA.length);
  assertEquals(await Deno.readFile(target), DATA);
  assertEquals(starts, [null, 1_234_567]);
  assertEquals(await names(dir.path), ["out.bin"]);
});

Deno.test("downloadToFile gives up after maxResumes and leaves nothing", async () => {
  await using dir = await tempDir();
  for (const ignoreRange of [false, true]) {
    const { server } = rawFileServer(() => ({ send: 500_000, ignoreRange }));
    await using _ = server;
    const target = hostPath.join(dir.path, "out.bin");
    const error = await assertRejects(
      () =>
        downloadToFile(fetchOpen(server.url), target, {
          maxResumes: 2,
          source: "/w/big.bin",
        }),
      Error,
      "the connection dropped 3 times",
    );
    assertStringIncludes(
      error.message,
      `Cannot download "/w/big.bin" to "${target}"`,
    );
    assertEquals(server.count(), 3);
    assertEquals(await names(dir.path), []);
  }
});

Deno.test("downloadToFile refuses a 206 from the wrong byte or without Content-Range", async () => {
  await using dir = await tempDir();
  for (
    const [step, message] of [
      [
        { wrongStart: 0 },
        "the server answered bytes from 0 when asked from 1000",
      ],
      [{ noContentRange: true }, "without a valid Content-Range"],
    ] as const
  ) {
    const { server } = rawFileServer((index) => ({
      send: index === 0 ? 1000 : Infinity,
      ...step,
    }));
    await using _ = server;
    const target = hostPath.join(dir.path, "out.bin");
    await assertRejects(
      () => downloadToFile(fetchOpen(server.url), target),
      Error,
      message,
    );
    assertEquals(await names(dir.path), []);
  }
});

Deno.test("downloadToFile: a size mismatch is an error and leaves nothing", async () => {
  await using dir = await tempDir();
  await using server = serve((request) => {
    const path = new URL(request.url).pathname;
    if (path === "/chunked") {
      // no Content-Length: only the expected size can catch extra bytes
      return new Response(ReadableStream.from([DATA.subarray(0, 2000)]));
    }
    if (path === "/bad-total") {
      const start = rangeStart(request);
      if (start === null) {
        return new Response(dropAfter(DATA.subarray(0, 100)), {
          headers: { "content-length": "1000" },
        });
      }
      return new Response(DATA.subarray(start, 1000), {
        status: 206,
        headers: { "content-range": `bytes ${start}-999/999999` },
      });
    }
    return new Response(DATA.subarray(0, 1000));
  });
  const target = hostPath.join(dir.path, "out.bin");
  await assertRejects(
    () =>
      downloadToFile(fetchOpen(`${server.url}/plain`), target, {
        expectedSize: 999,
      }),
    Error,
    "size mismatch: the Content-Length says 1000 bytes, the expected size 999",
  );
  await assertRejects(
    () =>
      downloadToFile(fetchOpen(`${server.url}/chunked`), target, {
        expectedSize: 1500,
      }),
    Error,
    "size mismatch: the server sent more than the 1500 bytes",
  );
  await assertRejects(
    () =>
      downloadToFile(fetchOpen(`${server.url}/chunked`), target, {
        expectedSize: 2500,
      }),
    Error,
    "the connection dropped",
  );
  await assertRejects(
    () => downloadToFile(fetchOpen(`${server.url}/bad-total`), target),
    Error,
    "size mismatch: the Content-Range total says 999999 bytes, the Content-Length 1000",
  );
  assertEquals(await names(dir.path), []);
});

Deno.test("downloadToFile: a truncated Content-Length resumes, then fails cleanly when it stays short", async () => {
  await using dir = await tempDir();
  // Each answer promises the rest of the file but sends half of it.
  await using server = serveRaw(async (request, conn) => {
    const start = rangeStart(request) ?? 0;
    const rest = DATA.length - start;
    const status = start === 0
      ? "200 OK"
      : `206 Partial Content\r\ncontent-range: bytes ${start}-${
        DATA.length - 1
      }/${DATA.length}`;
    await writeAll(
      conn,
      `HTTP/1.1 ${status}\r\ncontent-length: ${rest}\r\nconnection: close\r\n\r\n`,
    );
    await writeAll(conn, DATA.subarray(start, start + Math.ceil(rest / 2)));
  });
  const target = hostPath.join(dir.path, "out.bin");
  await Deno.writeTextFile(target, "previous content");
  await assertRejects(
    () => downloadToFile(fetchOpen(server.url), target, { maxResumes: 3 }),
    Error,
    "the connection dropped 4 times",
  );
  assertEquals(server.count(), 4);
  assertEquals(await Deno.readTextFile(target), "previous content");
  assertEquals(await names(dir.path), ["out.bin"]);
});

Deno.test("downloadToFile: abort in the middle leaves no file and no temporary file", async () => {
  await using dir = await tempDir();
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          await delay(5);
          controller.enqueue(new Uint8Array(64 * 1024));
        },
      }),
    )
  );
  const target = hostPath.join(dir.path, "out.bin");
  const controller = new AbortController();
  setTimeout(
    () => controller.abort(new DOMException("stop", "AbortError")),
    150,
  );
  await assertRejects(
    () =>
      downloadToFile(fetchOpen(server.url), target, {
        signal: controller.signal,
      }),
    DOMException,
    "stop",
  );
  assertEquals(await names(dir.path), []);
  const aborted = new AbortController();
  aborted.abort();
  await assertRejects(() =>
    downloadToFile(fetchOpen(server.url), target, { signal: aborted.signal })
  );
  assertEquals(await names(dir.path), []);
});

Deno.test("downloadToFile through HttpClient: resume after a mid-body reset; 404 passes through", async () => {
  await using dir = await tempDir();
  const starts: (number | null)[] = [];
  await using server = serve((request) => {
    if (new URL(request.url).pathname === "/missing") {
      return Response.json(
        { code: "FILE_NOT_FOUND", message: "no such file" },
        {
          status: 404,
        },
      );
    }
    const start = rangeStart(request);
    starts.push(start);
    const from = start ?? 0;
    const body = starts.length < 3
      ? dropAfter(DATA.subarray(from, from + 700_000))
      : ReadableStream.from([DATA.subarray(from)]);
    return start === null
      ? new Response(body, {
        headers: { "content-length": String(DATA.length) },
      })
      : new Response(body, {
        status: 206,
        headers: {
          "content-range": `bytes ${start}-${DATA.length - 1}/${DATA.length}`,
        },
      });
  });
  const http = new HttpClient({ baseUrl: server.url, timeoutMs: 5000 });
  const open = (path: string): OpenAtOffset => (offset, signal) =>
    http.request({
      method: "GET",
      path,
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
      timeoutMs: null,
      idleTimeoutMs: 5000,
      ...(signal ? { signal } : {}),
    });
  const target = hostPath.join(dir.path, "out.bin");
  const result = await downloadToFile(open("/file"), target, {
    expectedSize: DATA.length,
  });
  assertEquals(result.bytes, DATA.length);
  assertEquals(await Deno.readFile(target), DATA);
  assertEquals(starts.length, 3);
  assert(starts[1]! > 0 && starts[2]! > starts[1]!);

  const error = await assertRejects(() =>
    downloadToFile(open("/missing"), hostPath.join(dir.path, "missing.bin"))
  );
  assertInstanceOf(error, RemoteHttpError);
  assertEquals(error.status, 404);
  assertEquals(await names(dir.path), ["out.bin"]);
});

Deno.test("downloadToFile refuses bad options", async () => {
  const open: OpenAtOffset = () => Promise.resolve(new Response("x"));
  await assertRejects(
    () => downloadToFile(open, "/tmp/x", { maxResumes: -1 }),
    RangeError,
  );
  await assertRejects(
    () => downloadToFile(open, "/tmp/x", { expectedSize: 1.5 }),
    RangeError,
  );
  await assertRejects(() => downloadToFile(open, ""), TypeError);
});

Deno.test("downloadToFile: a drop after the last byte, then 416 bytes */<size on disk>, is done without reading again", async () => {
  await using dir = await tempDir();
  const small = DATA.subarray(0, 100_000);
  const seen: (number | null)[] = [];
  // A chunked answer (no Content-Length) whose every byte arrives, but whose
  // connection drops before the last chunk: the client cannot know it had all.
  const server = serveRaw(async (request, conn) => {
    const start = rangeStart(request);
    seen.push(start);
    if (start === null) {
      await writeAll(
        conn,
        `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${
          small.length.toString(16)
        }\r\n`,
      );
      await writeAll(conn, small);
      await writeAll(conn, "\r\n");
      return; // closed without the last chunk
    }
    await writeAll(
      conn,
      `HTTP/1.1 416 Requested Range Not Satisfiable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-range: bytes */${
        start === small.length ? small.length : small.length + 1
      }\r\ncontent-length: 33\r\nconnection: close\r\n\r\ninvalid range: failed to overlap\n`,
    );
  });
  await using _ = server;
  const http = new HttpClient({ baseUrl: server.url, timeoutMs: 5000 });
  const open: OpenAtOffset = (offset, signal) =>
    http.request({
      method: "GET",
      path: "/file",
      ...(offset > 0
        ? { headers: { range: `bytes=${offset}-` }, acceptStatuses: [416] }
        : {}),
      timeoutMs: null,
      ...(signal ? { signal } : {}),
    });
  const target = hostPath.join(dir.path, "out.bin");
  const result = await downloadToFile(open, target);
  assertEquals(result.bytes, small.length);
  assertEquals(await Deno.readFile(target), small);
  assertEquals(seen, [null, small.length], "one answer and one check, no more");

  // A 416 whose size is not what is on disk is an error, and leaves nothing.
  const other = serveRaw(async (request, conn) => {
    const start = rangeStart(request);
    if (start === null) {
      await writeAll(
        conn,
        `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n10\r\n0123456789abcdef\r\n`,
      );
      return;
    }
    await writeAll(
      conn,
      `HTTP/1.1 416 Requested Range Not Satisfiable\r\ncontent-range: bytes */99\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
    );
  });
  await using __ = other;
  const http2 = new HttpClient({ baseUrl: other.url, timeoutMs: 5000 });
  const error = await assertRejects(() =>
    downloadToFile(
      (offset, signal) =>
        http2.request({
          method: "GET",
          path: "/file",
          ...(offset > 0
            ? { headers: { range: `bytes=${offset}-` }, acceptStatuses: [416] }
            : {}),
          timeoutMs: null,
          ...(signal ? { signal } : {}),
        }),
      hostPath.join(dir.path, "other.bin"),
      { maxResumes: 1 },
    )
  );
  assertStringIncludes(String(error), "416");
  assertEquals(await names(dir.path), ["out.bin"]);
});
