import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import {
  formatGlobResult,
  formatGrepResult,
  formatLsResult,
} from "./search_format.ts";
import type { GrepContentResult, GrepResultBase } from "../search/types.ts";

const base: GrepResultBase = {
  skipped: [],
  path: "/w",
  engine: "ripgrep",
  totalEntries: 3,
  offset: 0,
  headLimitReached: false,
  outputLimitReached: false,
};

Deno.test("formatGrepResult() prints content like ripgrep, with -- between groups", () => {
  const result: GrepContentResult = {
    ...base,
    mode: "content",
    lines: [
      { path: "/w/a.ts", lineNumber: 1, text: "x", match: false, cut: false },
      { path: "/w/a.ts", lineNumber: 2, text: "hit", match: true, cut: false },
      { path: "/w/a.ts", lineNumber: 9, text: "hit", match: true, cut: true },
    ],
  };
  assertEquals(
    formatGrepResult(result, { relativeTo: "/w" }),
    "a.ts-1-x\na.ts:2:hit\n--\na.ts:9:hit [… line cut]",
  );
  assertEquals(
    formatGrepResult(result, { lineNumbers: false }).split("\n")[1],
    "/w/a.ts:hit",
  );
});

Deno.test("formatGrepResult() says when nothing matched", () => {
  assertEquals(
    formatGrepResult({
      ...base,
      totalEntries: 0,
      mode: "files_with_matches",
      files: [],
    }),
    "No files found",
  );
  assertEquals(
    formatGrepResult({ ...base, totalEntries: 0, mode: "count", counts: [] }),
    "No matches found",
  );
});

Deno.test("formatGrepResult() adds notices for head limit, offset and output cap", () => {
  const text = formatGrepResult({
    ...base,
    mode: "count",
    totalEntries: 10,
    offset: 2,
    headLimitReached: true,
    outputLimitReached: false,
    counts: [{ path: "/w/a", count: 4 }, { path: "/w/b", count: 1 }],
  });
  assertStringIncludes(text, "/w/a:4\n/w/b:1");
  assertStringIncludes(
    text,
    "[Showing entries 3-4 of 10; use offset 4 to see more]",
  );
  const capped = formatGrepResult({
    ...base,
    mode: "files_with_matches",
    totalEntries: 3,
    outputLimitReached: true,
    files: ["/w/a"],
  });
  assertStringIncludes(capped, "[Output capped");
});

Deno.test("formatGrepResult() cuts text at the character cap with a notice", () => {
  const text = formatGrepResult({
    ...base,
    mode: "files_with_matches",
    totalEntries: 1000,
    files: Array.from({ length: 1000 }, (_, i) => `/w/file-${i}.txt`),
  }, { maxChars: 500 });
  assert(text.length < 700);
  assertStringIncludes(text, "[Output cut at 500 characters");
});

Deno.test("formatGlobResult() lists newest first with a notice when capped", () => {
  const text = formatGlobResult({
    path: "/w",
    engine: "fallback",
    totalFiles: 5,
    truncated: true,
    files: [{ path: "/w/b.ts", modifiedMs: 2 }, {
      path: "/w/a.ts",
      modifiedMs: 1,
    }],
  }, { relativeTo: "/w" });
  assertEquals(
    text,
    "b.ts\na.ts\n\n[Showing the 2 most recently modified of 5 files: use a more specific pattern or path]",
  );
  assertEquals(
    formatGlobResult({
      path: "/w",
      engine: "fallback",
      totalFiles: 0,
      truncated: false,
      files: [],
    }),
    "No files found",
  );
});

Deno.test("formatLsResult() marks folders, symlinks and heavy folders", () => {
  const text = formatLsResult({
    path: "/w",
    truncated: true,
    entries: [
      { path: "node_modules", type: "directory", size: 0, skipped: true },
      { path: "src", type: "directory", size: 0, skipped: false },
      { path: "link", type: "symlink", size: 0, skipped: false },
      { path: "a.md", type: "file", size: 1, skipped: false },
    ],
  });
  assertEquals(
    text,
    "/w:\nnode_modules/ (not listed: heavy folder)\nsrc/\nlink (symlink)\na.md\n\n[Listing stopped at 4 entries: list a sub-folder, lower the depth or raise the limit]",
  );
});
