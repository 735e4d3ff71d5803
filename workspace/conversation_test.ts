import {
  assert,
  assertEquals,
  assertRejects,
  assertThrows,
} from "../tests/helpers/assert.ts";
import {
  ensureWorkspace,
  validateConversationId,
  validateConversationsRoot,
  workspacePath,
} from "./conversation.ts";

const VALID_IDS = [
  "a",
  "A",
  "0",
  "abc",
  "thread.2026-07",
  "user_42",
  "x-y_z.w",
  "a..",
  "a".repeat(128),
  "9" + "-".repeat(127),
];

const INVALID_IDS: [string, string][] = [
  ["", "empty"],
  [".", "must start with"],
  ["..", "must start with"],
  ["-x", "must start with"],
  ["_x", "must start with"],
  [".hidden", "must start with"],
  ["a/b", "only ASCII letters"],
  ["a\\b", "only ASCII letters"],
  ["a b", "only ASCII letters"],
  ["a\nb", "only ASCII letters"],
  ["a\0", "only ASCII letters"],
  ["café", "only ASCII letters"],
  ["对话", "only ASCII letters"],
  ["a".repeat(129), "more than 128"],
];

Deno.test("validateConversationId() accepts ids of 1-128 letters, digits, '.', '_' and '-'", () => {
  for (const id of VALID_IDS) assertEquals(validateConversationId(id), id);
});

Deno.test("validateConversationId() refuses empty, dot, leading punctuation, separators, unicode and 129 chars", () => {
  for (const [id, reason] of INVALID_IDS) {
    const error = assertThrows(
      () => validateConversationId(id),
      TypeError,
      reason,
    );
    assertEquals(
      error.message.startsWith("Cannot use conversation id"),
      true,
      error.message,
    );
  }
});

Deno.test("validateConversationId() refuses a non-string", () => {
  assertThrows(
    () => validateConversationId(42 as unknown as string),
    TypeError,
    "must be a string",
  );
});

Deno.test(
  {
    name:
      "validateConversationsRoot() normalises absolute roots and refuses relative roots and /",
    ignore: Deno.build.os === "windows",
  },
  () => {
    assertEquals(validateConversationsRoot("/srv/conv"), "/srv/conv");
    assertEquals(validateConversationsRoot("/srv/conv/"), "/srv/conv");
    assertEquals(validateConversationsRoot("/srv//conv///"), "/srv/conv");
    assertEquals(validateConversationsRoot("/srv/./a/../conv"), "/srv/conv");
    assertThrows(
      () => validateConversationsRoot("conv"),
      TypeError,
      "must be an absolute path",
    );
    assertThrows(
      () => validateConversationsRoot("./conv"),
      TypeError,
      "must be an absolute path",
    );
    assertThrows(() => validateConversationsRoot(""), TypeError, "non-empty");
    assertThrows(
      () => validateConversationsRoot("/"),
      TypeError,
      "file system's root",
    );
    assertThrows(
      () => validateConversationsRoot("//"),
      TypeError,
      "file system's root",
    );
    assertThrows(
      () => validateConversationsRoot("/srv/.."),
      TypeError,
      "file system's root",
    );
  },
);

Deno.test(
  {
    name: "workspacePath() joins the validated root and id",
    ignore: Deno.build.os === "windows",
  },
  () => {
    assertEquals(
      workspacePath("/srv/conv/", "thread.2026-07"),
      "/srv/conv/thread.2026-07",
    );
    assertThrows(() => workspacePath("/srv/conv", ".."), TypeError);
    assertThrows(() => workspacePath("srv", "abc"), TypeError);
  },
);

Deno.test("ensureWorkspace() creates a real folder and refuses one planted as a symlink", async () => {
  const base = await Deno.realPath(await Deno.makeTempDir());
  try {
    const root = `${base}/conversations`;
    const elsewhere = `${base}/elsewhere`;
    await Deno.mkdir(elsewhere);
    // The control: a new conversation gets a real folder with skills/.
    assertEquals(await ensureWorkspace(root, "fresh"), `${root}/fresh`);
    assert((await Deno.lstat(`${root}/fresh/skills`)).isDirectory);
    // Planted: a symlink to a folder elsewhere, absolute or relative.
    await Deno.symlink(elsewhere, `${root}/planted`);
    await Deno.symlink("../elsewhere", `${root}/relative`);
    for (const id of ["planted", "relative"]) {
      await assertRejects(
        () => ensureWorkspace(root, id),
        TypeError,
        "it is a symbolic link, not a folder",
      );
    }
    assertEquals([...Deno.readDirSync(elsewhere)], [], "nothing made there");
    // A file where the workspace should be.
    await Deno.writeTextFile(`${root}/file`, "x");
    await assertRejects(
      () => ensureWorkspace(root, "file"),
      Deno.errors.NotADirectory,
    );
    // A root reached through a symlink: the real root is used.
    await Deno.symlink(root, `${base}/root-link`);
    assertEquals(
      await ensureWorkspace(`${base}/root-link`, "fresh"),
      `${root}/fresh`,
    );
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
