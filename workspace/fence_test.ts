import { runDenoScript } from "../tests/helpers/testing.ts";
import {
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { WorkspaceEscapeError } from "./errors.ts";
import { PathFence } from "./fence.ts";

const POSIX = Deno.build.os !== "windows";

interface Layout {
  base: string;
  workspace: string;
  outside: string;
  fence: PathFence;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A temp folder with `ws/` (the workspace) and `outside/` beside it. */
async function layout(): Promise<Layout> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-fence-" }),
  );
  const workspace = hostPath.join(base, "ws");
  const outside = hostPath.join(base, "outside");
  await Deno.mkdir(hostPath.join(workspace, "inside-dir"), { recursive: true });
  await Deno.mkdir(outside);
  await Deno.writeTextFile(hostPath.join(workspace, "a.txt"), "a");
  await Deno.writeTextFile(hostPath.join(outside, "secret.txt"), "s");
  return {
    base,
    workspace,
    outside,
    fence: await PathFence.create(workspace),
    async [Symbol.asyncDispose]() {
      await Deno.remove(base, { recursive: true });
    },
  };
}

async function assertEscapes(
  fence: PathFence,
  path: string,
): Promise<void> {
  const error = await assertRejects(
    () => fence.resolve(path),
    WorkspaceEscapeError,
  );
  assertStringIncludes(error.message, `Cannot use "${path}"`);
  assertStringIncludes(error.message, `outside the workspace "${fence.root}"`);
  assertEquals(error.workspace, fence.root);
  assertEquals(error.path, path);
}

Deno.test("PathFence.resolve() resolves relative paths against the workspace", async () => {
  await using t = await layout();
  assertEquals(t.fence.root, t.workspace);
  assertEquals(
    await t.fence.resolve("a.txt"),
    hostPath.join(t.workspace, "a.txt"),
  );
  assertEquals(
    await t.fence.resolve("inside-dir/../a.txt"),
    hostPath.join(t.workspace, "a.txt"),
  );
  assertEquals(await t.fence.resolve("."), t.workspace);
  assertEquals(
    await t.fence.resolve("new/deeper/file.txt"),
    hostPath.join(t.workspace, "new", "deeper", "file.txt"),
  );
});

Deno.test("PathFence.resolve() accepts absolute paths inside the workspace", async () => {
  await using t = await layout();
  assertEquals(
    await t.fence.resolve(hostPath.join(t.workspace, "inside-dir") + "/"),
    hostPath.join(t.workspace, "inside-dir"),
  );
  assertEquals(await t.fence.resolve(t.workspace), t.workspace);
});

Deno.test("PathFence.resolve() refuses .. escapes and absolute paths outside", async () => {
  await using t = await layout();
  await assertEscapes(t.fence, "..");
  await assertEscapes(t.fence, "../outside/secret.txt");
  await assertEscapes(t.fence, "inside-dir/../../outside");
  await assertEscapes(t.fence, hostPath.join(t.outside, "secret.txt"));
  await assertEscapes(t.fence, t.base);
  // A sibling whose name starts like the workspace is outside.
  await assertEscapes(t.fence, `${t.workspace}-other/x`);
  if (POSIX) await assertEscapes(t.fence, "/etc/passwd");
});

Deno.test({
  name:
    "PathFence.resolve() refuses symlinks to outside files and folders, absolute and relative",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    const ws = t.workspace;
    await Deno.symlink(
      hostPath.join(t.outside, "secret.txt"),
      hostPath.join(ws, "abs-file"),
    );
    await Deno.symlink("../outside/secret.txt", hostPath.join(ws, "rel-file"));
    await Deno.symlink(t.outside, hostPath.join(ws, "abs-dir"));
    await Deno.symlink(
      "../../outside",
      hostPath.join(ws, "inside-dir/rel-dir"),
    );
    for (
      const path of [
        "abs-file",
        "rel-file",
        "abs-dir",
        "abs-dir/secret.txt",
        "inside-dir/rel-dir",
        "inside-dir/rel-dir/secret.txt",
        hostPath.join(ws, "abs-dir", "secret.txt"),
      ]
    ) {
      await assertEscapes(t.fence, path);
    }
  },
});

Deno.test({
  name:
    "PathFence.resolve() refuses a new file under a symlinked folder that points outside",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    await Deno.symlink(t.outside, hostPath.join(t.workspace, "out-link"));
    await assertEscapes(t.fence, "out-link/new.txt");
    await assertEscapes(t.fence, "out-link/new-dir/deeper/new.txt");
    // A dangling link, whose target would be created by writing through it.
    await Deno.symlink(
      hostPath.join(t.outside, "not-yet"),
      hostPath.join(t.workspace, "dangling"),
    );
    await assertEscapes(t.fence, "dangling");
    await assertEscapes(t.fence, "dangling/child.txt");
    // A chain: inside link -> inside dangling link -> outside.
    await Deno.symlink("dangling", hostPath.join(t.workspace, "chain"));
    await assertEscapes(t.fence, "chain");
    // A loop is refused, not followed forever.
    await Deno.symlink("loop-b", hostPath.join(t.workspace, "loop-a"));
    await Deno.symlink("loop-a", hostPath.join(t.workspace, "loop-b"));
    await assertRejects(
      () => t.fence.resolve("loop-a/x"),
      Deno.errors.FilesystemLoop,
      'Cannot use "loop-a/x": too many levels of symbolic links',
    );
  },
});

Deno.test({
  name:
    "PathFence.resolve() refuses a dangling link whose target leaves through a symlink and ..",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    // `sub/up` -> the outside folder's `deep/` child; the dangling link's
    // target `sub/up/../new.txt` is read by the kernel as outside/new.txt,
    // while collapsing `up/..` lexically would give the inside `sub/new.txt`.
    await Deno.mkdir(hostPath.join(t.outside, "deep"));
    await Deno.mkdir(hostPath.join(t.workspace, "sub"));
    await Deno.symlink(
      hostPath.join(t.outside, "deep"),
      hostPath.join(t.workspace, "sub", "up"),
    );
    await Deno.symlink(
      "sub/up/../new.txt",
      hostPath.join(t.workspace, "trap"),
    );
    await assertEscapes(t.fence, "trap");
    // Same through an absolute target.
    await Deno.symlink(
      `${t.workspace}/sub/up/../abs.txt`, // not joined: join drops `up/..`
      hostPath.join(t.workspace, "trap-abs"),
    );
    await assertEscapes(t.fence, "trap-abs");
    // Writing through the link really would land outside.
    await Deno.writeTextFile(hostPath.join(t.workspace, "trap"), "x");
    assertEquals(
      await Deno.readTextFile(hostPath.join(t.outside, "new.txt")),
      "x",
    );
    // `..` through an inside link that stays inside is still accepted.
    await Deno.mkdir(hostPath.join(t.workspace, "inside-dir", "deeper"));
    await Deno.symlink(
      hostPath.join(t.workspace, "inside-dir", "deeper"),
      hostPath.join(t.workspace, "sub", "down"),
    );
    await Deno.symlink(
      "sub/down/../made.txt",
      hostPath.join(t.workspace, "fine"),
    );
    assertEquals(
      await t.fence.resolve("fine"),
      hostPath.join(t.fence.root, "fine"),
    );
  },
});

Deno.test({
  name: "PathFence.resolve() accepts symlinks whose target is inside",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    const ws = t.workspace;
    await Deno.symlink("a.txt", hostPath.join(ws, "to-a"));
    await Deno.symlink(
      hostPath.join(ws, "inside-dir"),
      hostPath.join(ws, "to-dir"),
    );
    await Deno.symlink("new-target.txt", hostPath.join(ws, "dangling-in"));
    // The symlink itself is kept in the answer (lstat still sees it).
    assertEquals(await t.fence.resolve("to-a"), hostPath.join(ws, "to-a"));
    assertEquals(
      await t.fence.resolve("to-dir/new.txt"),
      hostPath.join(ws, "to-dir", "new.txt"),
    );
    assertEquals(
      await t.fence.resolve("dangling-in"),
      hostPath.join(ws, "dangling-in"),
    );
  },
});

Deno.test({
  name:
    "PathFence accepts paths through the given workspace path when it is itself a symlink",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    const alias = hostPath.join(t.base, "alias");
    await Deno.symlink(t.workspace, alias);
    const fence = await PathFence.create(alias);
    assertEquals(fence.root, t.workspace);
    assertEquals(
      await fence.resolve(hostPath.join(alias, "a.txt")),
      hostPath.join(t.workspace, "a.txt"),
    );
    await assertEscapes(fence, hostPath.join(t.base, "outside"));
  },
});

Deno.test("PathFence.resolveDirectory() accepts an inside folder and refuses outside, missing and file paths", async () => {
  await using t = await layout();
  assertEquals(
    await t.fence.resolveDirectory("inside-dir"),
    hostPath.join(t.workspace, "inside-dir"),
  );
  assertEquals(await t.fence.resolveDirectory("."), t.workspace);
  const outside = await assertRejects(
    () => t.fence.resolveDirectory(t.outside),
    WorkspaceEscapeError,
  );
  assertStringIncludes(outside.message, `"${t.workspace}"`);
  await assertEscapes(t.fence, "../outside");
  await assertRejects(
    () => t.fence.resolveDirectory("missing"),
    Deno.errors.NotFound,
    'Cannot use "missing" as working directory: no such folder',
  );
  await assertRejects(
    () => t.fence.resolveDirectory("a.txt"),
    Deno.errors.NotADirectory,
    'Cannot use "a.txt" as working directory: it is not a folder',
  );
  if (POSIX) {
    await Deno.symlink(t.outside, hostPath.join(t.workspace, "out-dir"));
    await assertRejects(
      () => t.fence.resolveDirectory("out-dir"),
      WorkspaceEscapeError,
      "outside the workspace",
    );
  }
});

Deno.test("PathFence.create() refuses relative, missing and file workspaces", async () => {
  await using t = await layout();
  await assertRejects(
    () => PathFence.create("relative/ws"),
    TypeError,
    "must be an absolute path",
  );
  await assertRejects(
    () => PathFence.create(hostPath.join(t.base, "missing")),
    Deno.errors.NotFound,
    "no such folder",
  );
  await assertRejects(
    () => PathFence.create(hostPath.join(t.workspace, "a.txt")),
    Deno.errors.NotADirectory,
    "not a folder",
  );
});

Deno.test("PathFence.resolve() refuses empty paths and NUL characters", async () => {
  await using t = await layout();
  await assertRejects(() => t.fence.resolve(""), TypeError, "empty");
  const error = await assertRejects(
    () => t.fence.resolve("a\0b"),
    TypeError,
  );
  assertInstanceOf(error, TypeError);
});

Deno.test({
  name:
    "PathFence refuses an outside symlink target under narrowed --allow-read (real subprocess)",
  ignore: !POSIX,
  async fn() {
    await using t = await layout();
    await Deno.symlink(hostPath.join(t.outside, "gone"), `${t.workspace}/dl`);
    await Deno.symlink(t.outside, `${t.workspace}/dir-link`);
    const script = hostPath.join(t.base, "probe.ts");
    const module = new URL("./fence.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { PathFence } from ${JSON.stringify(module)};
const fence = await PathFence.create(${JSON.stringify(t.workspace)});
const out = [];
for (const p of ["dl", "dl/x", "dir-link/new.txt", "a.txt", "fresh/new.txt"]) {
  try { out.push([p, "ok", await fence.resolve(p)]); }
  catch (e) { out.push([p, e.name, e.message]); }
}
console.log(JSON.stringify(out));`,
    );
    const { code, stdout, stderr } = await runDenoScript(script, [
      `--allow-read=${t.workspace}`,
      `--allow-write=${t.workspace}`,
    ]);
    assertEquals(code, 0, stderr);
    const results = JSON.parse(stdout) as [
      string,
      string,
      string,
    ][];
    assertEquals(results.map(([p, kind]) => [p, kind]), [
      ["dl", "WorkspaceEscapeError"],
      ["dl/x", "WorkspaceEscapeError"],
      ["dir-link/new.txt", "WorkspaceEscapeError"],
      ["a.txt", "ok"],
      ["fresh/new.txt", "ok"],
    ]);
    for (const [, kind, message] of results) {
      if (kind !== "ok") {
        assertStringIncludes(message, `the workspace "${t.workspace}"`);
      }
    }
  },
});
