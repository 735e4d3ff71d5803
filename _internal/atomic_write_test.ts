import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { writeStreamAtomically } from "./atomic_write.ts";

const POSIX = Deno.build.os !== "windows";

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out.sort();
}

async function tempDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "skillrun-atomic-" });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true });
    },
  };
}

/** A stream whose chunks the test releases one by one. */
function controlledStream(): {
  stream: ReadableStream<Uint8Array>;
  push(bytes: Uint8Array): void;
  fail(error: Error): void;
  end(): void;
  cancelled: Promise<unknown>;
} {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let onCancel!: (reason: unknown) => void;
  const cancelled = new Promise<unknown>((resolve) => onCancel = resolve);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel(reason) {
      onCancel(reason);
    },
  }, { highWaterMark: 0 });
  return {
    stream,
    push: (bytes) => controller.enqueue(bytes),
    fail: (error) => controller.error(error),
    end: () => controller.close(),
    cancelled,
  };
}

/** Waits until `dir` holds a `.part` file (the write has started). */
async function waitForPart(dir: string): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const part = (await names(dir)).find((n) => n.endsWith(".part"));
    if (part) return part;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("no .part file appeared");
}

Deno.test("writeStreamAtomically() writes every byte, creates parents and leaves no temporary file", async () => {
  await using dir = await tempDir();
  const data = Uint8Array.from({ length: 300_000 }, (_, i) => i % 251);
  const chunks = [
    data.subarray(0, 1),
    data.subarray(1, 70_000),
    data.subarray(
      70_000,
    ),
  ];
  const target = `${dir.path}/a/b/out.bin`;
  const bytes = await writeStreamAtomically(
    ReadableStream.from(chunks),
    target,
  );
  assertEquals(bytes, data.length);
  assertEquals(await Deno.readFile(target), data);
  assertEquals(await names(`${dir.path}/a/b`), ["out.bin"]);
  if (POSIX) assertEquals((await Deno.stat(target)).mode! & 0o777, 0o644);
});

Deno.test("writeStreamAtomically() replaces an existing target only when complete, keeping its mode", async () => {
  await using dir = await tempDir();
  const target = `${dir.path}/report.txt`;
  await Deno.writeTextFile(target, "old");
  if (POSIX) await Deno.chmod(target, 0o600);
  const source = controlledStream();
  const writing = writeStreamAtomically(source.stream, target);
  source.push(new TextEncoder().encode("new "));
  const part = await waitForPart(dir.path);
  assert(part.startsWith(".skillrun-"), part);
  assertEquals(await Deno.readTextFile(target), "old", "untouched meanwhile");
  source.push(new TextEncoder().encode("content"));
  source.end();
  assertEquals(await writing, 11);
  assertEquals(await Deno.readTextFile(target), "new content");
  assertEquals(await names(dir.path), ["report.txt"]);
  if (POSIX) assertEquals((await Deno.stat(target)).mode! & 0o777, 0o600);
});

Deno.test("writeStreamAtomically() leaves neither target nor temporary file when the stream fails midway", async () => {
  await using dir = await tempDir();
  const target = `${dir.path}/out.bin`;
  const source = controlledStream();
  const writing = writeStreamAtomically(source.stream, target);
  source.push(new Uint8Array(100_000).fill(7));
  await waitForPart(dir.path);
  source.fail(new Error("connection reset"));
  const error = await assertRejects(() => writing, Error);
  assertStringIncludes(
    error.message,
    `Cannot write "${target}": the source stream failed: connection reset`,
  );
  assertEquals(await names(dir.path), []);

  // With an existing target: it stays as it was.
  await Deno.writeTextFile(target, "previous");
  const again = controlledStream();
  const second = writeStreamAtomically(again.stream, target);
  again.push(new Uint8Array(10));
  await waitForPart(dir.path);
  again.fail(new Error("boom"));
  await assertRejects(() => second, Error, "boom");
  assertEquals(await names(dir.path), ["out.bin"]);
  assertEquals(await Deno.readTextFile(target), "previous");
});

Deno.test("writeStreamAtomically() stops on abort mid-stream, cancels the source and leaves nothing", async () => {
  await using dir = await tempDir();
  const target = `${dir.path}/out.bin`;
  const source = controlledStream();
  const controller = new AbortController();
  const writing = writeStreamAtomically(source.stream, target, {
    signal: controller.signal,
  });
  source.push(new Uint8Array(50_000));
  await waitForPart(dir.path);
  controller.abort();
  const error = await assertRejects(() => writing, DOMException);
  assertEquals(error.name, "AbortError");
  assertEquals(await names(dir.path), []);
  assertEquals(await source.cancelled, controller.signal.reason);

  await assertRejects(
    () =>
      writeStreamAtomically(ReadableStream.from([new Uint8Array(1)]), target, {
        signal: AbortSignal.abort(),
      }),
    DOMException,
  );
  assertEquals(await names(dir.path), []);
});

Deno.test("writeStreamAtomically() refuses a folder as target and leaves it as it was", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/folder`);
  await Deno.writeTextFile(`${dir.path}/folder/inside.txt`, "x");
  await assertRejects(
    () =>
      writeStreamAtomically(
        ReadableStream.from([new Uint8Array(3)]),
        `${dir.path}/folder`,
      ),
    Deno.errors.IsADirectory,
    "it is a folder",
  );
  assertEquals(await names(dir.path), ["folder"]);
  assertEquals(await names(`${dir.path}/folder`), ["inside.txt"]);
});

Deno.test("writeStreamAtomically() writes a target whatever characters or length its name has", async () => {
  await using dir = await tempDir();
  const odd = `report "final" v2: a*b?.txt`;
  const long = `${"x".repeat(250)}.txt`; // 254 bytes: a name built on it would be too long
  for (const name of POSIX ? [odd, long, "\\back<slash>|.txt"] : [long]) {
    const target = `${dir.path}/${name}`;
    const bytes = await writeStreamAtomically(
      ReadableStream.from([new TextEncoder().encode("content")]),
      target,
    );
    assertEquals(bytes, 7);
    assertEquals(await Deno.readTextFile(target), "content");
  }
  assertEquals((await names(dir.path)).some((n) => n.endsWith(".part")), false);
});
