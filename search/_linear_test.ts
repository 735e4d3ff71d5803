import {
  assert,
  assertEquals,
  assertLess,
  assertThrows,
} from "../_internal/assert.ts";
import { compileLinear } from "./_linear.ts";
import { FIXTURE } from "./_test_suite.ts";
import { matchText } from "./_match.ts";
import { translateRegex } from "./regex.ts";
import { anthropicsCollection } from "../_internal/shared_data.ts";

/** What both engines have: `lastIndex` and `exec`. */
interface Execer {
  lastIndex: number;
  exec(text: string): { index: number; 0: string } | null;
}

/**
 * Every match through the text, restarting after each one (one code point
 * further after an empty match), as `matchText` does in multiline mode;
 * then from a few other starts (`lastIndex` inside a line, inside a pair).
 */
function allMatches(re: Execer, text: string): [number, number][] {
  const found: [number, number][] = [];
  re.lastIndex = 0;
  for (;;) {
    const m = re.exec(text);
    if (m === null) break;
    const start = m.index;
    const end = start + m[0].length;
    found.push([start, end]);
    if (end > start) {
      re.lastIndex = end;
    } else {
      if (start >= text.length) break;
      const code = text.charCodeAt(start);
      re.lastIndex = start + (code >= 0xd800 && code <= 0xdbff ? 2 : 1);
    }
  }
  for (const from of [1, 3, text.length >> 1, text.length, text.length + 1]) {
    re.lastIndex = from;
    const m = re.exec(text);
    found.push(m === null ? [-1, re.lastIndex] : [m.index, re.lastIndex]);
  }
  return found;
}

/** Whether `index` is between the two halves of a surrogate pair. */
function insidePair(text: string, index: number): boolean {
  const before = text.charCodeAt(index - 1);
  const at = text.charCodeAt(index);
  return before >= 0xd800 && before <= 0xdbff && at >= 0xdc00 && at <= 0xdfff;
}

/**
 * `RegExp` as the specification has it: V8 may try a start inside a
 * surrogate pair, where a look-around sees a lone surrogate (so `\B` can
 * match between the halves of an emoji). The specification, ripgrep and the
 * linear matcher only try code point boundaries: when V8 lands inside a pair,
 * the answer is found again with a sticky `RegExp` at each boundary.
 */
function specRegExp(source: string, flags: string): Execer {
  source = wrapClasses(source);
  const global = new RegExp(source, `${flags}g`);
  const sticky = new RegExp(source, `${flags}y`);
  const self: Execer = {
    lastIndex: 0,
    exec(text: string) {
      global.lastIndex = self.lastIndex;
      const m = global.exec(text);
      if (m === null || !insidePair(text, m.index)) {
        self.lastIndex = global.lastIndex;
        return m;
      }
      let p = self.lastIndex;
      if (insidePair(text, p)) p--;
      for (; p <= text.length; p += insidePair(text, p + 1) ? 2 : 1) {
        sticky.lastIndex = p;
        const found = sticky.exec(text);
        if (found !== null) {
          self.lastIndex = sticky.lastIndex;
          return found;
        }
      }
      self.lastIndex = 0;
      return null;
    },
  };
  return self;
}

/**
 * Wraps each top-level class in `(?:...)`: V8 (Deno 2.9.6, `v` flag) parses
 * a class right after a modifier group's `)` or after `|` with the group's
 * flags (`/(?i:x)[a-z]/v` matches "xB"), the linear matcher does not.
 */
function wrapClasses(source: string): string {
  let out = "";
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      out += c + (source[i + 1] ?? "");
      i++;
      continue;
    }
    if (c === "[") {
      if (depth === 0) out += "(?:";
      depth++;
      out += c;
      continue;
    }
    out += c;
    if (c === "]") {
      depth--;
      if (depth === 0) out += ")";
    }
  }
  return out;
}

/** Asserts that both engines find the same matches. */
function same(source: string, flags: string, texts: readonly string[]): void {
  const native = specRegExp(source, flags);
  const linear = compileLinear(source, `${flags}g`);
  for (const text of texts) {
    assertEquals(
      allMatches(linear, text),
      allMatches(native, text),
      `/${source}/${flags} on ${JSON.stringify(text.slice(0, 200))}`,
    );
  }
}

/** Same as {@linkcode same}, for a ripgrep pattern in every mode. */
function sameTranslated(pattern: string, texts: readonly string[]): number {
  let compared = 0;
  for (const caseInsensitive of [false, true]) {
    for (const multiline of [false, true]) {
      let t;
      try {
        t = translateRegex(pattern, { caseInsensitive, multiline });
      } catch {
        continue; // refused (e.g. a literal \n in line mode): not a regex
      }
      same(t.source, t.flags, texts);
      compared++;
    }
  }
  return compared;
}

/** The string literals after `key` in a test source file. */
async function patternsIn(file: string, key: RegExp): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(file, import.meta.url));
  const found: string[] = [];
  const re = new RegExp(`${key.source}\\s*("(?:[^"\\\\\\n]|\\\\.)*")`, "g");
  for (const m of text.matchAll(re)) found.push(JSON.parse(m[1]!));
  return [...new Set(found)];
}

const EDGE_TEXTS = [
  "",
  "a",
  "hello world\nHELLO again\r\nbeta hello\r\n",
  "naïve café Ωmega ſtraße K\n1234 ٣٤ x_y\n",
  "\u{1F600}a\u{1F600}\u{1F600}b \ud800 x\udc00y\n",
  "aaa\nab\nabab\n\nabc a+b (x)\n",
  "  def hello(): pass\nfunction foo() {}\n",
  "---\nname: x\ndescription: y\n---\n```python\nprint(1)\n```\n",
];

async function corpusTexts(): Promise<string[]> {
  // The real texts when ../shared is beside the clone (CI=true: required).
  const corpus = anthropicsCollection();
  if (!corpus.present) return [];
  const root = corpus.url;
  const texts: string[] = [];
  const walk = async (url: URL): Promise<void> => {
    for await (const entry of Deno.readDir(url)) {
      if (entry.isDirectory) {
        await walk(new URL(`${entry.name}/`, url));
      } else if (
        entry.isFile && /\.(?:md|py|js|txt|html)$/.test(entry.name) &&
        texts.length < 40
      ) {
        const text = await Deno.readTextFile(new URL(entry.name, url));
        if (text.length < 40_000) texts.push(text);
      }
    }
  };
  try {
    await walk(root);
  } catch {
    // No corpus: the fixture and edge texts only.
  }
  return texts;
}

Deno.test("compileLinear() finds what RegExp finds for every pattern of the engine and parity suites", async () => {
  const patterns = [
    ...await patternsIn("./_parity_suite.ts", /pattern:/),
    ...await patternsIn("./_test_suite.ts", /pattern:/),
    ...await patternsIn("./regex_test.ts", /lines\(/),
  ];
  const texts = [
    ...EDGE_TEXTS,
    ...Object.values(FIXTURE).filter((v) => typeof v === "string"),
    ...await corpusTexts(),
  ];
  let compared = 0;
  for (const pattern of patterns) compared += sameTranslated(pattern, texts);
  assert(patterns.length > 60, `only ${patterns.length} patterns`);
  assert(compared > 150, `only ${compared} compared`);
});

Deno.test("compileLinear() agrees with RegExp on edge cases", () => {
  const texts = [
    ...EDGE_TEXTS,
    "abab",
    "ab",
    "xaaay",
    "aaaaaaaaaaaaaaaac",
    "\r\n\r\n",
    "é\u{1F600}é",
  ];
  const cases: [string, string][] = [
    // empty matches, anchors
    ["", "v"],
    ["(?:)", "v"],
    ["^", "v"],
    ["$", "v"],
    ["^", "vm"],
    ["$", "vm"],
    ["^$", "vm"],
    ["a*", "v"],
    ["a*?", "v"],
    ["(?:a|)*", "v"],
    ["(?:|a)+", "v"],
    ["(?:|a){0,2}", "v"],
    ["(?:a?)*?b", "v"],
    ["(?:a*)*", "v"],
    ["(?:a*)+b", "v"],
    ["(?:(?:a|)(?:b|))*", "v"],
    ["(?:a|\\b)*", "v"],
    // priority
    ["a|ab", "v"],
    ["ab|a", "v"],
    ["(?:a|ab)(?:c|bcd)", "v"],
    ["a+?b", "v"],
    ["a{2,}", "v"],
    ["a{2,}?", "v"],
    ["a{0}", "v"],
    ["(?:ab){0}c", "v"],
    ["a{1,3}", "v"],
    ["a{1,3}?", "v"],
    ["(?:a(?:b(?:c)?)?)+", "v"],
    ["x*a+?y?", "v"],
    // characters
    [".", "v"],
    [".", "vs"],
    [".+", "v"],
    ["\\u{1F600}+", "v"],
    ["[^a]", "v"],
    ["[\\p{L}--[a-z]]+", "v"],
    ["[\\p{L}&&\\p{Ll}]", "vi"],
    ["\\w+", "vi"],
    ["[^\\w]", "vi"],
    ["\\p{Lu}+", "vi"],
    ["\\P{Lu}+", "vi"],
    ["S", "vi"],
    ["k", "vi"],
    ["(?i:é)b", "v"],
    ["(?-i:A)b", "vi"],
    ["\\b", "v"],
    ["\\B", "v"],
    ["\\b", "vi"],
    ["\\bcaf\\u{e9}\\b", "v"],
    ["\\r\\n", "v"],
    ["\\r?$", "vm"],
    ["[\\s\\S]", "v"],
    ["\\ud83d\\ude00", "u"],
    ["(?<![a])b", "v"],
    ["(?<=\\n|^)a", "v"],
    ["a(?=$|b)", "v"],
    ["(?<name>a)b", "v"],
    ["(a)(b)?", "u"],
  ];
  for (const [source, flags] of cases) same(source, flags, texts);
});

Deno.test("compileLinear() agrees with RegExp on random patterns (seeded fuzz)", () => {
  let seed = 20_240_601;
  const random = (n: number): number => {
    // xorshift32
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;
  const atoms = [
    "a",
    "b",
    "A",
    "é",
    "😀",
    " ",
    ".",
    "[ab]",
    "[^a]",
    "\\w",
    "\\W",
    "\\d",
    "\\s",
    "\\b",
    "\\B",
    "^",
    "$",
    "\\p{Lu}",
    "[[:alpha:]]",
    "\\n",
    "ſ",
    "K",
  ];
  const quantifiers = [
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "??",
    "{0}",
    "{2}",
    "{2,}",
    "{1,3}",
    "{0,2}?",
  ];
  const pattern = (depth: number): string => {
    const parts: string[] = [];
    const n = 1 + random(3);
    for (let k = 0; k < n; k++) {
      let part: string;
      const r = random(10);
      if (depth < 3 && r < 3) {
        const inner = [pattern(depth + 1)];
        if (random(2) === 0) inner.push(depth < 2 ? pattern(depth + 1) : "");
        const open = pick(["(", "(?:", "(?i:", "(?-i:", "(?s:"]);
        part = `${open}${inner.join("|")})`;
      } else {
        part = pick(atoms);
      }
      if (random(3) === 0 && part !== "^" && part !== "$") {
        part += pick(quantifiers);
      }
      parts.push(part);
    }
    return parts.join(random(8) === 0 ? "|" : "");
  };
  const alphabet = [
    "a",
    "b",
    "A",
    "B",
    "é",
    "É",
    "😀",
    " ",
    "\n",
    "\r",
    "ſ",
    "K",
    "1",
  ];
  let cases = 0;
  for (let k = 0; k < 1200; k++) {
    const p = pattern(0);
    const texts: string[] = [];
    for (let j = 0; j < 4; j++) {
      let text = "";
      const length = random(9);
      for (let c = 0; c < length; c++) text += pick(alphabet);
      texts.push(text);
    }
    cases += sameTranslated(p, texts) * texts.length;
  }
  assert(cases > 4000, `only ${cases} cases`);
});

Deno.test("compileLinear() runs catastrophic patterns in linear time", () => {
  const long = `${"a".repeat(100_000)}b`;
  for (
    const [pattern, text] of <[string, string][]> [
      ["(a+)+$", long],
      ["(a|aa)*c", long],
      ["(.*a){12}", `${"a".repeat(100_000)}`],
      ["(.*a){12}x", `${"ab".repeat(50_000)}`],
      ["^(\\w+\\s?)*$", `${"word ".repeat(20_000)}!`],
    ]
  ) {
    for (const multiline of [false, true]) {
      const t = translateRegex(pattern, { multiline });
      const re = compileLinear(t.source, `${t.flags}g`);
      const start = performance.now();
      matchText(text, re, {
        multiline,
        mode: "count",
        before: 0,
        after: 0,
        maxLineChars: 100,
      });
      const ms = performance.now() - start;
      assertLess(ms, 1000, `${pattern} took ${ms.toFixed(0)} ms`);
    }
  }
});

Deno.test("compileLinear() keeps a class after a (?i:...) group case-sensitive, as ripgrep does (V8 does not)", () => {
  const t = translateRegex("(?i:x)[a-z]");
  const linear = compileLinear(t.source, `${t.flags}g`);
  assertEquals(linear.exec("xB"), null);
  assertEquals(linear.exec("Xb")?.[0], "Xb");
  // The V8 of Deno 2.9.6 matches: the reason the fallback's Workers are
  // closer to ripgrep than RegExp there.
  assert(new RegExp("(?i:x)[a-z]", "v").test("xB"));
  const either = compileLinear("(?i:x)|[a-z]", "vg");
  assertEquals(either.exec("B"), null);
});

Deno.test("compileLinear() refuses what it cannot match exactly, with the reason", () => {
  assertThrows(() => compileLinear("(a)\\1", "v"), TypeError, "backreferences");
  assertThrows(() => compileLinear("a(?=bc)", "v"), TypeError, "look-around");
  assertThrows(() => compileLinear("a", "g"), TypeError, "u or v flag");
  assertThrows(() => compileLinear("a(", "v"), TypeError, 'Invalid regex "a("');
  assertThrows(
    () => compileLinear("(?:(?:a{1000}){1000})", "v"),
    TypeError,
    "too large",
  );
});
