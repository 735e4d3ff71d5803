import { assertEquals, assertThrows } from "../../tests/helpers/assert.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import {
  remoteJoin,
  RemotePathFence,
  resolveRemotePath,
  toRemoteRelative,
} from "./paths.ts";

Deno.test("toRemoteRelative turns Windows host paths into POSIX ones on any host", () => {
  assertEquals(toRemoteRelative("scripts\\run.py", "\\"), "scripts/run.py");
  assertEquals(toRemoteRelative("a\\b\\..\\c.txt", "\\"), "a/c.txt");
  assertEquals(toRemoteRelative("a/b\\c", "\\"), "a/b/c");
  assertEquals(toRemoteRelative("a/b", "/"), "a/b");
  // On POSIX hosts a backslash is part of a name and stays.
  assertEquals(toRemoteRelative("odd\\name", "/"), "odd\\name");
  assertThrows(() => toRemoteRelative("C:\\x", "\\"), TypeError, "drive");
  assertThrows(() => toRemoteRelative("\\x", "\\"), TypeError, "absolute");
  assertThrows(() => toRemoteRelative("/x", "/"), TypeError, "absolute");
  assertThrows(() => toRemoteRelative("..\\up", "\\"), TypeError, "leaves");
  assertThrows(() => toRemoteRelative("a\0b", "/"), TypeError, "NUL");
});

Deno.test("remote paths join and resolve with POSIX rules", () => {
  assertEquals(
    remoteJoin("/workspace", "skills", "pdf"),
    "/workspace/skills/pdf",
  );
  const relative = toRemoteRelative("scripts\\fill form.py", "\\");
  const joined = remoteJoin("/workspace/skills/pdf", relative);
  assertEquals(joined, "/workspace/skills/pdf/scripts/fill form.py");
  assertEquals(joined.includes("\\"), false);
  assertEquals(resolveRemotePath("/w", "a/./b/../c"), "/w/a/c");
  assertEquals(resolveRemotePath("/w", "/x/y/"), "/x/y");
  assertEquals(resolveRemotePath("/w", "/"), "/");
  assertEquals(resolveRemotePath("/w", "."), "/w");
  assertThrows(() => resolveRemotePath("/w", ""), TypeError, "empty");
  assertThrows(() => resolveRemotePath("/w", "a\0"), TypeError, "NUL");
  assertThrows(() => resolveRemotePath("w", "a"), TypeError, "absolute");
  assertThrows(() => resolveRemotePath("C:\\w", "a"), TypeError, "absolute");
});

Deno.test("RemotePathFence keeps paths in the workspace and names it when refusing", () => {
  const fence = new RemotePathFence("/workspace/conv-1/");
  assertEquals(fence.root, "/workspace/conv-1");
  assertEquals(fence.resolve("."), "/workspace/conv-1");
  assertEquals(fence.resolve("a/../b"), "/workspace/conv-1/b");
  assertEquals(fence.resolve("/workspace/conv-1/x/"), "/workspace/conv-1/x");
  assertEquals(fence.resolve("a\\..\\..\\b"), "/workspace/conv-1/a\\..\\..\\b");
  for (
    const path of [
      "..",
      "../conv-2",
      "a/../../x",
      "/etc/passwd",
      "/workspace/conv-10",
      "/workspace",
    ]
  ) {
    const error = assertThrows(() => fence.resolve(path), WorkspaceEscapeError);
    assertEquals(
      error.message,
      `Cannot use "${path}": path is outside the workspace "/workspace/conv-1"`,
    );
    assertEquals(error.workspace, "/workspace/conv-1");
    assertEquals(error.path, path);
  }
  assertThrows(() => fence.resolve("a\0b"), TypeError, "NUL");
  assertThrows(() => fence.resolve(""), TypeError, "empty");
  assertThrows(() => new RemotePathFence("/"), TypeError, "root");
  assertThrows(() => new RemotePathFence("rel"), TypeError);
  assertThrows(() => new RemotePathFence("C:\\ws"), TypeError);
});
