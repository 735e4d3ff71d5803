import { runDenoScript } from "../../tests/helpers/testing.ts";
import {
  assert,
  assertEquals,
  assertExists,
  assertLess,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { PathFence } from "../../workspace/fence.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import { LocalFileSystem } from "./fs.ts";

const POSIX = Deno.build.os !== "windows";
const MiB = 1024 * 1024;

interface Setup {
  base: string;
  root: string;
  outside: string;
  fs: LocalFileSystem;
  [Symbol.asyncDispose](): Promise<void>;
}

/** `base/ws` (the root) and `base/outside`. */
async function setup(options: { fenced?: boolean } = {}): Promise<Setup> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-fs-" }),
  );
  const root = hostPath.join(base, "ws");
  const outside = hostPath.join(base, "outside");
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(hostPath.join(outside, "secret.txt"), "secret");
  const fs = new LocalFileSystem(
    options.fenced
      ? { cwd: root, fence: await PathFence.create(root) }
      : { cwd: root },
  );
  return {
    base,
    root,
    outside,
    fs,
    async [Symbol.asyncDispose]() {
      await Deno.remove(base, { recursive: true });
    },
  };
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) out.push(entry.name);
  return out.sort();
}

Deno.test("readText() refuses a 1 GiB sparse file with a 1 MiB limit fast, naming the limit", async () => {
  await using t = await setup();
  const path = hostPath.join(t.root, "big.txt");
  const file = await Deno.open(path, { write: true, create: true });
  await file.truncate(1024 * MiB);
  file.close();
  const start = performance.now();
  const error = await assertRejects(
    () => t.fs.readText("big.txt", { maxBytes: MiB }),
    RangeError,
  );
  assertLess(performance.now() - start, 1000);
  assertEquals(
    error.message,
    'Cannot read "big.txt": file is larger than the 1 MiB limit',
  );
});

Deno.test({
  name:
    "readText(), readBytes() and readStream() refuse a device, also behind a symlink, at once",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    await Deno.symlink("/dev/zero", hostPath.join(t.root, "zero"));
    const start = performance.now();
    for (const path of ["/dev/zero", "zero"]) {
      await assertRejects(
        () => t.fs.readText(path, { maxBytes: 4 * MiB }),
        TypeError,
        `Cannot read "${path}": it is a device, not a regular file`,
      );
      await assertRejects(
        () => t.fs.readBytes(path, { maxBytes: 1000 }),
        TypeError,
        "it is a device",
      );
      await assertRejects(() => t.fs.readStream(path), TypeError, "device");
    }
    assertLess(performance.now() - start, 5000);
    // The control: a regular file behind a symlink reads.
    await Deno.writeTextFile(hostPath.join(t.root, "real.txt"), "ok");
    await Deno.symlink("real.txt", hostPath.join(t.root, "link.txt"));
    assertEquals(await t.fs.readText("link.txt", { maxBytes: 10 }), "ok");
  },
});

Deno.test({
  name:
    "readText(), readStream() and writeText() refuse a pipe without blocking, and write no pipe",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    const fifo = hostPath.join(t.root, "pipe");
    const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
    assert(made.success);
    await Deno.symlink("pipe", hostPath.join(t.root, "to-pipe"));
    for (const path of ["pipe", "to-pipe"]) {
      await assertRejects(
        () => t.fs.readText(path, { maxBytes: 10 }),
        TypeError,
        `Cannot read "${path}": it is a pipe, not a regular file`,
      );
      await assertRejects(() => t.fs.readStream(path), TypeError, "a pipe");
      await assertRejects(
        () => t.fs.writeText(path, "x"),
        TypeError,
        `Cannot write "${path}": it is a pipe, not a regular file`,
      );
    }
    assert((await Deno.lstat(fifo)).isFifo, "the pipe is still a pipe");
  },
});

Deno.test({
  name:
    "writeText() through a hard link replaces the link, never the other file",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    const other = hostPath.join(t.outside, "secret.txt");
    const before = await Deno.readTextFile(other);
    const link = hostPath.join(t.root, "linked.txt");
    await Deno.link(other, link);
    await t.fs.writeText("linked.txt", "new text");
    assertEquals(await Deno.readTextFile(other), before);
    assertEquals(await Deno.readTextFile(link), "new text");
    assertEquals((await Deno.stat(link)).nlink, 1);
    assertEquals((await Deno.stat(other)).nlink, 1);
  },
});

Deno.test({
  name:
    "writeText() keeps the mode of the file it replaces, writes through a symlink, leaves no temporary file",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    const script = hostPath.join(t.root, "run.sh");
    await Deno.writeTextFile(script, "echo old\n");
    await Deno.chmod(script, 0o750);
    await Deno.symlink("run.sh", hostPath.join(t.root, "alias.sh"));
    await t.fs.writeText("alias.sh", "echo new\n");
    assert((await Deno.lstat(hostPath.join(t.root, "alias.sh"))).isSymlink);
    assertEquals(await Deno.readTextFile(script), "echo new\n");
    assertEquals((await Deno.stat(script)).mode! & 0o777, 0o750);
    assertEquals(
      (await names(t.root)).sort(),
      ["alias.sh", "run.sh"],
    );
  },
});

Deno.test("readText() reads up to the limit exactly, keeps a BOM, and refuses one byte more", async () => {
  await using t = await setup();
  await Deno.writeTextFile(hostPath.join(t.root, "ten.txt"), "0123456789");
  assertEquals(
    await t.fs.readText("ten.txt", { maxBytes: 10 }),
    "0123456789",
  );
  await assertRejects(
    () => t.fs.readText("ten.txt", { maxBytes: 9 }),
    RangeError,
    "file is larger than the 9 bytes limit",
  );
  await Deno.writeFile(
    hostPath.join(t.root, "bom.txt"),
    new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69]),
  );
  assertEquals(await t.fs.readText("bom.txt", { maxBytes: 10 }), "\uFEFFhi");
  await Deno.writeTextFile(hostPath.join(t.root, "empty.txt"), "");
  assertEquals(await t.fs.readText("empty.txt", { maxBytes: 0 }), "");
  for (const maxBytes of [-1, 1.5, NaN, undefined]) {
    await assertRejects(
      () => t.fs.readText("ten.txt", { maxBytes } as { maxBytes: number }),
      RangeError,
      "must be a non-negative integer",
    );
  }
});

Deno.test("readText() and readBytes() give clear errors for missing files and folders", async () => {
  await using t = await setup();
  await assertRejects(
    () => t.fs.readText("x", { maxBytes: 10 }),
    Deno.errors.NotFound,
    'Cannot read "x": no such file',
  );
  await assertRejects(
    () => t.fs.readBytes("missing-dir/x"),
    Deno.errors.NotFound,
    'Cannot read "missing-dir/x": no such file',
  );
  await Deno.mkdir(hostPath.join(t.root, "dir"));
  await assertRejects(
    () => t.fs.readText("dir", { maxBytes: 10 }),
    Deno.errors.IsADirectory,
    'Cannot read "dir": it is a folder',
  );
});

Deno.test("readBytes() returns binary content byte for byte, within or without a limit", async () => {
  await using t = await setup();
  const data = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 31) % 256);
  await Deno.writeFile(hostPath.join(t.root, "blob.bin"), data);
  assertEquals(await t.fs.readBytes("blob.bin"), data);
  assertEquals(await t.fs.readBytes("blob.bin", { maxBytes: 200_000 }), data);
  await assertRejects(
    () => t.fs.readBytes("blob.bin", { maxBytes: 199_999 }),
    RangeError,
  );
});

Deno.test("writeText() creates parents, overwrites, and refuses folders", async () => {
  await using t = await setup();
  await t.fs.writeText("a/b/c.txt", "first");
  assertEquals(
    await Deno.readTextFile(hostPath.join(t.root, "a/b/c.txt")),
    "first",
  );
  await t.fs.writeText("a/b/c.txt", "second");
  assertEquals(
    await Deno.readTextFile(hostPath.join(t.root, "a/b/c.txt")),
    "second",
  );
  await t.fs.writeText(hostPath.join(t.root, "abs.txt"), "absolute");
  assertEquals(
    await Deno.readTextFile(hostPath.join(t.root, "abs.txt")),
    "absolute",
  );
  await assertRejects(
    () => t.fs.writeText("a/b", "x"),
    Deno.errors.IsADirectory,
    'Cannot write "a/b": it is a folder',
  );
  await assertRejects(
    () => t.fs.writeText("a/b/c.txt/d.txt", "x"),
    Deno.errors.NotADirectory,
    'Cannot write "a/b/c.txt/d.txt": a parent is not a folder',
  );
});

Deno.test("stat() reports null for missing paths, and symlinks as symlinks", async () => {
  await using t = await setup();
  assertEquals(await t.fs.stat("missing"), null);
  assertEquals(await t.fs.stat("missing/deeper"), null);
  await Deno.writeTextFile(hostPath.join(t.root, "f.txt"), "12345");
  assertEquals(await t.fs.stat("f.txt/below"), null);
  const file = await t.fs.stat("f.txt");
  assertExists(file);
  assertEquals(file.type, "file");
  assertEquals(file.size, 5);
  assertEquals(file.name, "f.txt");
  assertEquals(file.path, hostPath.join(t.root, "f.txt"));
  assert(file.modifiedAt instanceof Date);
  assertEquals((await t.fs.stat("."))?.type, "directory");
  if (POSIX) {
    assertEquals(file.executable, false);
    await Deno.chmod(hostPath.join(t.root, "f.txt"), 0o755);
    assertEquals((await t.fs.stat("f.txt"))?.executable, true);
    await Deno.symlink("f.txt", hostPath.join(t.root, "link"));
    assertEquals((await t.fs.stat("link"))?.type, "symlink");
    assertEquals((await t.fs.stat("/dev/null"))?.type, "other");
  }
});

Deno.test("list() honours depth, limit and filesOnly in a stable depth-first order", async () => {
  await using t = await setup();
  for (
    const rel of ["b.txt", "a/x.txt", "a/deep/y.txt", "c/z.txt", "a.md"]
  ) {
    await t.fs.writeText(rel, rel);
  }
  const rel = (r: { entries: readonly { path: string }[] }) =>
    r.entries.map((e) => hostPath.relative(t.root, e.path));

  const one = await t.fs.list(".");
  assertEquals(rel(one), ["a", "a.md", "b.txt", "c"]);
  assertEquals(one.truncated, false);
  assertEquals(one.entries.map((e) => e.type), [
    "directory",
    "file",
    "file",
    "directory",
  ]);
  assertEquals(rel(await t.fs.list(".", { depth: 2 })), [
    "a",
    "a/deep",
    "a/x.txt",
    "a.md",
    "b.txt",
    "c",
    "c/z.txt",
  ]);
  assertEquals(rel(await t.fs.list(".", { depth: 3, filesOnly: true })), [
    "a/deep/y.txt",
    "a/x.txt",
    "a.md",
    "b.txt",
    "c/z.txt",
  ]);
  const cut = await t.fs.list(".", { depth: 3, limit: 3 });
  assertEquals(rel(cut), ["a", "a/deep", "a/deep/y.txt"]);
  assertEquals(cut.truncated, true);
  const exact = await t.fs.list("c", { limit: 1 });
  assertEquals(rel(exact), ["c/z.txt"]);
  assertEquals(exact.truncated, false);
  if (POSIX) {
    await Deno.symlink(t.outside, hostPath.join(t.root, "c/out-link"));
    const withLink = await t.fs.list("c", { depth: 5 });
    assertEquals(rel(withLink), ["c/out-link", "c/z.txt"]);
    assertEquals(withLink.entries[0]?.type, "symlink");
  }
  await assertRejects(
    () => t.fs.list("nope"),
    Deno.errors.NotFound,
    'Cannot list "nope": no such folder',
  );
  await assertRejects(
    () => t.fs.list("b.txt"),
    Deno.errors.NotADirectory,
    'Cannot list "b.txt": it is not a folder',
  );
  await assertRejects(() => t.fs.list(".", { depth: 0 }), RangeError, "depth");
  await assertRejects(() => t.fs.list(".", { limit: -1 }), RangeError, "limit");
});

Deno.test("readStream() streams the bytes and closes the file on cancel and abort", async () => {
  await using t = await setup();
  const data = Uint8Array.from({ length: 300_000 }, (_, i) => i % 253);
  await Deno.writeFile(hostPath.join(t.root, "s.bin"), data);
  const stream = await t.fs.readStream("s.bin");
  assertEquals(new Uint8Array(await new Response(stream).arrayBuffer()), data);

  const cancelled = await t.fs.readStream("s.bin");
  const reader = cancelled.getReader();
  await reader.read();
  await reader.cancel();

  const controller = new AbortController();
  const aborted = (await t.fs.readStream("s.bin", {
    signal: controller.signal,
  })).getReader();
  await aborted.read();
  controller.abort();
  await assertRejects(async () => {
    while (!(await aborted.read()).done) {
      // drain until the abort errors the stream
    }
  }, DOMException);
  await assertRejects(
    () => t.fs.readStream("missing.bin"),
    Deno.errors.NotFound,
    "no such file",
  );
});

Deno.test("download() copies byte for byte and replaces an existing target", async () => {
  await using t = await setup();
  const data = Uint8Array.from({ length: 500_000 }, (_, i) => (i * 7) % 256);
  await Deno.writeFile(hostPath.join(t.root, "out.bin"), data);
  const local = hostPath.join(t.outside, "local.bin");
  await Deno.writeTextFile(local, "previous");
  const result = await t.fs.download("out.bin", local);
  assertEquals(result, { localPath: local, bytes: data.length });
  assertEquals(await Deno.readFile(local), data);
  assertEquals(await names(t.outside), ["local.bin", "secret.txt"]);
  await assertRejects(
    () => t.fs.download("out.bin", t.outside),
    Deno.errors.IsADirectory,
    "it is a folder",
  );
  await assertRejects(
    () => t.fs.download("missing", local),
    Deno.errors.NotFound,
    'Cannot read "missing": no such file',
  );
  assertEquals(await Deno.readFile(local), data);
});

Deno.test({
  name:
    "download() aborted midway leaves neither the target nor a temporary file",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    const local = hostPath.join(t.outside, "endless.bin");
    const controller = new AbortController();
    // A sparse 64 GiB file: the download runs until the abort.
    const sparse = await Deno.open(hostPath.join(t.root, "sparse.bin"), {
      write: true,
      create: true,
    });
    await sparse.truncate(64 * 1024 * MiB);
    sparse.close();
    const download = t.fs.download("sparse.bin", local, {
      signal: controller.signal,
    });
    for (let i = 0; i < 500; i++) {
      if ((await names(t.outside)).some((n) => n.endsWith(".part"))) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    controller.abort();
    const error = await assertRejects(() => download, DOMException);
    assertEquals(error.name, "AbortError");
    assertEquals(await names(t.outside), ["secret.txt"]);
  },
});

Deno.test("LocalFileSystem with a fence refuses paths outside the workspace, naming it", async () => {
  await using t = await setup({ fenced: true });
  for (
    const path of ["../outside/secret.txt", hostPath.join(t.outside, "x")]
  ) {
    const error = await assertRejects(
      () => t.fs.readText(path, { maxBytes: 100 }),
      WorkspaceEscapeError,
    );
    assertStringIncludes(
      error.message,
      `Cannot use "${path}": path is outside the workspace "${t.root}"`,
    );
  }
  await assertRejects(
    () => t.fs.writeText("../escape.txt", "x"),
    WorkspaceEscapeError,
  );
  await assertRejects(() => t.fs.list(".."), WorkspaceEscapeError);
  await assertRejects(() => t.fs.stat("../outside"), WorkspaceEscapeError);
  await assertRejects(
    () => t.fs.download("../outside/secret.txt", `${t.base}/copy.txt`),
    WorkspaceEscapeError,
  );
  if (POSIX) {
    await Deno.symlink(t.outside, hostPath.join(t.root, "link"));
    await assertRejects(
      () => t.fs.writeText("link/new.txt", "x"),
      WorkspaceEscapeError,
      `the workspace "${t.root}"`,
    );
    await assertRejects(
      () => t.fs.readText("link/secret.txt", { maxBytes: 100 }),
      WorkspaceEscapeError,
    );
    assertEquals(await names(t.outside), ["secret.txt"]);
  }
  // Inside paths work, and the download target (the host's) is not fenced.
  await t.fs.writeText("in/a.txt", "inside");
  assertEquals(await t.fs.readText("in/a.txt", { maxBytes: 100 }), "inside");
  await t.fs.download("in/a.txt", hostPath.join(t.outside, "a.txt"));
  assertEquals(
    await Deno.readTextFile(hostPath.join(t.outside, "a.txt")),
    "inside",
  );
});

Deno.test({
  name:
    "LocalFileSystem under narrowed --allow-read/--allow-write reports RuntimePermissionError (real subprocess)",
  ignore: !POSIX,
  async fn() {
    await using t = await setup();
    await Deno.symlink(t.outside, hostPath.join(t.root, "link"));
    const module = new URL("./fs.ts", import.meta.url).href;
    const fenceModule = new URL("../../workspace/fence.ts", import.meta.url)
      .href;
    const script = hostPath.join(t.base, "probe.ts");
    await Deno.writeTextFile(
      script,
      `import { LocalFileSystem } from ${JSON.stringify(module)};
import { PathFence } from ${JSON.stringify(fenceModule)};
const root = ${JSON.stringify(t.root)};
const plain = new LocalFileSystem({ cwd: root });
const fenced = new LocalFileSystem({ cwd: root, fence: await PathFence.create(root) });
const out = {};
async function probe(name, fn) {
  try { await fn(); out[name] = { ok: true }; }
  catch (e) { out[name] = { name: e.name, message: e.message, permission: e.permission, source: e.source }; }
}
await probe("write", () => plain.writeText(${
        JSON.stringify(hostPath.join(t.outside, "x.txt"))
      }, "x"));
await probe("read", () => plain.readText("/etc/hostname", { maxBytes: 1000 }));
await probe("download", async () => {
  await plain.writeText("in.txt", "data");
  await plain.download("in.txt", ${
        JSON.stringify(hostPath.join(t.outside, "dl.txt"))
      });
});
await probe("fencedLink", () => fenced.writeText("link/x.txt", "x"));
await probe("plainLink", () => plain.writeText("link/through.txt", "x"));
await probe("inside", () => fenced.writeText("sub/ok.txt", "ok"));
console.log(JSON.stringify(out));`,
    );
    const { code, stdout, stderr } = await runDenoScript(script, [
      `--allow-read=${t.root}`,
      `--allow-write=${t.root}`,
    ]);
    assertEquals(code, 0, stderr);
    const report = JSON.parse(
      stdout,
    ) as Record<
      string,
      {
        ok?: boolean;
        name?: string;
        message?: string;
        permission?: string;
        source?: string;
      }
    >;
    assertEquals(report.write?.name, "RuntimePermissionError");
    assertEquals(report.write?.permission, "write");
    assertEquals(report.write?.source, "deno");
    assertStringIncludes(
      report.write!.message!,
      `Cannot write "${
        hostPath.join(t.outside, "x.txt")
      }": Deno denies write access`,
    );
    assertStringIncludes(report.write!.message!, `--allow-write=${t.outside}`);

    assertEquals(report.read?.name, "RuntimePermissionError");
    assertEquals(report.read?.permission, "read");
    assertStringIncludes(
      report.read!.message!,
      'Cannot read "/etc/hostname": Deno denies read access; run with --allow-read=/etc/hostname',
    );

    assertEquals(report.download?.name, "RuntimePermissionError");
    assertEquals(report.download?.permission, "write");

    // The flags do not see through symlinks; the fence does.
    assertEquals(report.fencedLink?.name, "WorkspaceEscapeError");
    assertEquals(report.plainLink?.ok, true);
    assertEquals(report.inside?.ok, true);
    assertEquals(await names(t.outside), ["secret.txt", "through.txt"]);
  },
});

Deno.test({
  name:
    "openFile() gives a file's facts with its stream, a folder's or a pipe's facts alone (without blocking), null when missing, and refuses a link leading out",
  ignore: !POSIX,
  async fn() {
    await using t = await setup({ fenced: true });
    await Deno.writeTextFile(hostPath.join(t.root, "a.txt"), "opened");
    await Deno.chmod(hostPath.join(t.root, "a.txt"), 0o755);
    await Deno.symlink("a.txt", hostPath.join(t.root, "to-a"));
    await Deno.mkdir(hostPath.join(t.root, "dir"));
    const fifo = hostPath.join(t.root, "pipe");
    assert(
      (await new Deno.Command("mkfifo", { args: [fifo] }).output()).success,
    );
    await Deno.symlink(
      hostPath.join(t.outside, "secret.txt"),
      hostPath.join(t.root, "out"),
    );

    const file = await t.fs.openFile("a.txt");
    assertEquals(
      [
        file?.info.path,
        file?.info.type,
        file?.info.size,
        file?.info.executable,
      ],
      [hostPath.join(t.root, "a.txt"), "file", 6, true],
    );
    assertEquals(await new Response(file?.stream).text(), "opened");
    // A link inside is followed: its target's facts, under the link's path.
    const linked = await t.fs.openFile("to-a");
    assertEquals(
      [linked?.info.path, linked?.info.type, linked?.info.size],
      [hostPath.join(t.root, "to-a"), "file", 6],
    );
    await linked?.stream?.cancel();
    const dir = await t.fs.openFile("dir");
    assertEquals([dir?.info.type, dir?.stream], ["directory", undefined]);
    const pipe = await t.fs.openFile("pipe");
    assertEquals([pipe?.info.type, pipe?.stream], ["other", undefined]);
    assertEquals(await t.fs.openFile("missing.txt"), null);
    assertEquals(await t.fs.openFile("dir/missing/deeper.txt"), null);
    await assertRejects(() => t.fs.openFile("out"), WorkspaceEscapeError);
    await assertRejects(
      () => t.fs.openFile("../outside/secret.txt"),
      WorkspaceEscapeError,
    );
  },
});
