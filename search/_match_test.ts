import { assertEquals } from "../tests/helpers/assert.ts";
import { cutLine, matchText, type MatchTextOptions } from "./_match.ts";

const content: MatchTextOptions = {
  multiline: false,
  mode: "content",
  before: 0,
  after: 0,
  maxLineChars: 1000,
};

function show(
  text: string,
  pattern: RegExp,
  options: Partial<MatchTextOptions> = {},
) {
  return matchText(text, pattern, { ...content, ...options });
}

Deno.test("matchText() counts matching lines, not matches", () => {
  assertEquals(show("aa a\nb\na\n", /a/gv, { mode: "count" })?.count, 2);
  assertEquals(show("b\n", /a/gv, { mode: "count" }), null);
});

Deno.test("matchText() merges a multiline match into one group of lines", () => {
  const found = show("foo\nbar\nfoo bar\n", /o[\s\S]b/gv, { multiline: true });
  assertEquals(found?.count, 2);
  assertEquals(found?.lines.map((l) => l.lineNumber), [1, 2, 3]);
  // A match continuing on the line where the previous one ended is merged.
  const merged = show("aXb\nc\nd\n", /X|b\nc/gv, { multiline: true });
  assertEquals(merged?.count, 1);
  assertEquals(merged?.lines.map((l) => l.lineNumber), [1, 2]);
});

Deno.test("matchText() ignores an empty match at the end of the text", () => {
  assertEquals(show("", /x*/gv, { mode: "count" }), null);
  assertEquals(show("a\nb\n", /x*/gv, { mode: "count" })?.count, 2);
  assertEquals(show("a\nb", /x*/gv, { mode: "count" })?.count, 2);
});

Deno.test("matchText() gives context lines without repeating any", () => {
  const text = Array.from({ length: 10 }, (_, i) => `l${i + 1}`).join("\n");
  const found = show(text, /l(?:3|5|10)(?=\n|$)/gv, { before: 1, after: 1 });
  assertEquals(
    found?.lines.map((l) => `${l.lineNumber}${l.match ? ":" : "-"}`),
    ["2-", "3:", "4-", "5:", "6-", "9-", "10:"],
  );
});

Deno.test("matchText() stops at maxLinesPerFile in content mode", () => {
  const found = show("a\na\na\na\n", /a/gv, { maxLinesPerFile: 2 });
  assertEquals(found?.lines.length, 2);
});

Deno.test("cutLine() drops one \\r and never splits a surrogate pair", () => {
  assertEquals(cutLine("abc\r", 10), { text: "abc", cut: false });
  assertEquals(cutLine("ab😀", 3), { text: "ab", cut: true });
  assertEquals(cutLine("abcdef", 3), { text: "abc", cut: true });
});
