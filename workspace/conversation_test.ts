import { assertEquals, assertThrows } from "../_internal/assert.ts";
import {
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
