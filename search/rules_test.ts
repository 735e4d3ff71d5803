import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import {
  comparePaths,
  extensionsOfType,
  FILE_TYPES,
  HEAVY_FOLDERS,
  isBinary,
  joinPath,
} from "./rules.ts";

Deno.test("comparePaths() orders like a walk with sorted folders (rg --sort path)", () => {
  const paths = [
    "a.txt",
    "a/b.txt",
    "a-b.txt",
    "B.txt",
    "é.txt",
    "z.txt",
    "a/a/c",
  ];
  assertEquals(paths.sort(comparePaths), [
    "B.txt",
    "a/a/c",
    "a/b.txt",
    "a-b.txt",
    "a.txt",
    "z.txt",
    "é.txt",
  ]);
  // Astral characters sort after the rest of the BMP, as in UTF-8.
  assert(comparePaths("\uffff", "😀") < 0);
  assertEquals(comparePaths("same", "same"), 0);
});

Deno.test("isBinary() looks for a NUL byte in the first 8 KiB only", () => {
  assert(isBinary(new Uint8Array([65, 0, 66])));
  assertFalse(isBinary(new TextEncoder().encode("plain text\n")));
  const late = new Uint8Array(9000).fill(65);
  late[8500] = 0;
  assertFalse(isBinary(late));
});

Deno.test("extensionsOfType() knows the brief's types and aliases, and refuses others", () => {
  for (
    const type of [
      "js",
      "ts",
      "py",
      "md",
      "json",
      "yaml",
      "sh",
      "html",
      "css",
      "go",
      "rust",
      "java",
      "txt",
    ]
  ) {
    assert(extensionsOfType(type).length > 0, type);
  }
  assertEquals(extensionsOfType("TypeScript"), FILE_TYPES.ts);
  assertEquals(extensionsOfType("yml"), ["yaml", "yml"]);
  const error = assertThrows(() => extensionsOfType("cobol"), TypeError);
  assertStringIncludes(
    error.message,
    'Unknown file type "cobol": expected one of',
  );
});

Deno.test("HEAVY_FOLDERS holds the usual heavy folders", () => {
  for (
    const name of [
      ".git",
      "node_modules",
      ".venv",
      "venv",
      "__pycache__",
      "dist",
      "build",
      "target",
    ]
  ) {
    assert(HEAVY_FOLDERS.has(name), name);
  }
});

Deno.test("joinPath() joins with one slash", () => {
  assertEquals(joinPath("/a", "b/c"), "/a/b/c");
  assertEquals(joinPath("/", "b"), "/b");
  assertEquals(joinPath("/a", ""), "/a");
});
