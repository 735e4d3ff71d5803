import {
  assert,
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../_internal/assert.ts";
import { matchText } from "./_match.ts";
import { translateRegex } from "./regex.ts";
import { detectRipgrep } from "./ripgrep.ts";

function lines(
  pattern: string,
  text: string,
  options: { caseInsensitive?: boolean; multiline?: boolean } = {},
): string[] {
  const t = translateRegex(pattern, options);
  const found = matchText(text, new RegExp(t.source, `${t.flags}g`), {
    multiline: options.multiline ?? false,
    mode: "content",
    before: 0,
    after: 0,
    maxLineChars: 10_000,
  });
  return found?.lines.map((l) => `${l.lineNumber}:${l.text}`) ?? [];
}

Deno.test("translateRegex() makes \\d, \\w and \\b Unicode-aware as in Rust", () => {
  assertEquals(lines("\\d+", "abc\n٣٤\n"), ["2:٣٤"]);
  assertEquals(lines("^\\w+$", "naïve\nx-y\n"), ["1:naïve"]);
  assertEquals(lines("\\bcafé\\b", "un café noir\ncaféine\n"), [
    "1:un café noir",
  ]);
});

Deno.test("translateRegex() keeps . and classes off \\n in line mode", () => {
  assertEquals(lines("a.b", "a\nb\naxb\n"), ["3:axb"]);
  assertEquals(lines("a\\sb", "a\nb\na b\n"), ["3:a b"]);
  assertEquals(lines("[^x]+$", "xx\nab\n"), ["2:ab"]);
});

Deno.test("translateRegex() lets . match \\n in multiline mode", () => {
  assertEquals(lines("a.b", "a\nb\n", { multiline: true }), ["1:a", "2:b"]);
  assertEquals(lines("(?-s)a.b", "a\nb\n", { multiline: true }), []);
});

Deno.test("translateRegex() handles inline flags and case-insensitivity", () => {
  assertEquals(lines("(?i)hello", "HeLLo\n"), ["1:HeLLo"]);
  assertEquals(lines("a(?i)b|c", "aB\nC\nAb\n"), ["1:aB", "2:C"]);
  assertEquals(lines("(?-i:A)b", "ab\nAB\nAb\n", { caseInsensitive: true }), [
    "2:AB",
    "3:Ab",
  ]);
  assertEquals(lines("(?x) a b # comment", "ab\na b\n"), ["1:ab"]);
});

Deno.test("translateRegex() supports class set operations and ASCII classes", () => {
  assertEquals(lines("^[a-z--aeiou]+$", "xyz\nabc\n"), ["1:xyz"]);
  assertEquals(lines("^[\\w&&\\p{Greek}]+$", "αβγ\nabc\n"), ["1:αβγ"]);
  assertEquals(lines("^[[:upper:]][[:digit:]]$", "A1\na1\n"), ["1:A1"]);
});

Deno.test("translateRegex() reports the literal of a plain pattern", () => {
  assertEquals(translateRegex("hello world").literal, "hello world");
  assertEquals(translateRegex("a\\.b").literal, "a.b");
  assertEquals(translateRegex("a.b").literal, null);
  assertEquals(
    translateRegex("hello", { caseInsensitive: true }).literal,
    null,
  );
});

Deno.test("translateRegex() rewrites lenient escapes and (?<name>) for ripgrep", () => {
  assertEquals(translateRegex("a\\/b\\:c").ripgrepPattern, "a/b:c");
  assertEquals(translateRegex("(?<n>x)").ripgrepPattern, "(?P<n>x)");
  assertEquals(lines("a\\/b", "a/b\n"), ["1:a/b"]);
});

Deno.test("translateRegex() refuses what neither engine supports, with the pattern quoted", () => {
  for (
    const [pattern, reason] of [
      ["a(", "unclosed group"],
      ["a)", "unopened group"],
      ["(?=a)", "look-around"],
      ["(a)\\1", "backreferences"],
      ["*a", "missing expression"],
      ["[z-a]", "invalid range"],
      ["\\<foo", "\\b"],
      ["a{2,1}", "invalid repetition count"],
      ["[[:foo:]]", 'unknown ASCII class "foo"'],
      ["\\p{Nope}", 'unknown Unicode class "Nope"'],
      ["a\\nb", 'literal "\\n" is not allowed'],
      ["(?-u)x", '"-u"'],
    ] as const
  ) {
    const error = assertThrows(() => translateRegex(pattern), TypeError);
    assertStringIncludes(error.message, `Invalid regex "${pattern}": `);
    assertStringIncludes(error.message, reason);
  }
  // In multiline mode, \n is allowed.
  assert(translateRegex("a\\nb", { multiline: true }).source.length > 0);
});

const rg = await detectRipgrep();

Deno.test({
  name: "translateRegex() matches the same lines as ripgrep on tricky patterns",
  ignore: !rg,
  async fn() {
    const text = [
      "foo bar",
      "Baz qux",
      "",
      "function main() {",
      "  return 42;",
      "}",
      "naïve café Ωmega ΣΊΣΥΦΟΣ σίσυφος",
      "x_y z-w a.b a/b",
      "emoji 😀 here",
      "Kelvin K and k and \u212a, long s \u017f",
      "\u0342 greek perispomeni",
      "123 ٣٤٥ digits",
      "crlf line\r",
      "end",
    ].join("\n") + "\n";
    const patterns = [
      "foo",
      "^$",
      "^",
      "$",
      "\\bbar\\b",
      "\\Bar",
      "\\w+",
      "\\W+",
      "\\d+",
      "\\s+",
      "[^a-z]+",
      "[[:alpha:]]+",
      "[[:^space:]]+",
      "\\p{Greek}+",
      "\\pL",
      "\\P{L}",
      "(?i)baz",
      "(?i)k",
      "(?i)s",
      "(?i)σ",
      "ΣΊΣΥΦΟΣ",
      ".",
      "a.b",
      "a\\.b",
      "a\\/b",
      "x*",
      "(foo|bar)+",
      "(?P<n>main)",
      "fo{2}",
      "\\x41",
      "\\x{1F600}",
      "😀",
      ".{3}here",
      "(?s)r.Baz",
      "r\\s+B",
      "[^\\n]+",
      "\\Afoo",
      "end\\z",
      "42;$",
      "line$",
      "\\r$",
      "[a-c&&b]",
      "[\\w--_]+",
      "(?U)o+",
      "o+?",
      "\\p{Script=Latin}+",
      "[\\p{L}&&\\p{Lu}]+",
      "(?x)f o o",
      "^\\s*$",
      "[[:punct:]]",
      "\\p{sc=Greek}",
    ];
    const dir = await Deno.makeTempDir();
    try {
      const file = `${dir}/t.txt`;
      await Deno.writeTextFile(file, text);
      const mismatches: string[] = [];
      for (const multiline of [false, true]) {
        for (const pattern of patterns) {
          const t = translateRegex(pattern, { multiline });
          const args = ["-n", "--no-config", "-a", "-E", "none"];
          if (multiline) args.push("-U", "--multiline-dotall");
          const out = await new Deno.Command("rg", {
            args: [...args, "-e", t.ripgrepPattern, file],
            stdout: "piped",
            stderr: "piped",
          }).output();
          const expected = new TextDecoder().decode(out.stdout).split("\n")
            .filter((l) => l !== "").map((l) => l.replace(/\r$/, ""));
          const actual = lines(pattern, text, { multiline });
          if (JSON.stringify(actual) !== JSON.stringify(expected)) {
            mismatches.push(
              `${pattern} (multiline ${multiline}): rg ${
                JSON.stringify(expected)
              } ours ${JSON.stringify(actual)}`,
            );
          }
        }
      }
      assertEquals(mismatches, []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

if (!rg) {
  console.error(
    "regex_test.ts: ripgrep (rg) is not installed: the comparison with ripgrep is ignored; install ripgrep to run it",
  );
}
