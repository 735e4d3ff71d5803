/**
 * The `grep` pattern, checked once for every engine and compiled for the
 * engines that match in TypeScript with `re2js` (a port of RE2: linear time,
 * no backtracking, so no pattern runs away). ripgrep and `grep -E` get the
 * pattern as written; see `README.md` for what each engine accepts and where
 * answers can differ.
 *
 * @module
 */
import { RE2JS } from "re2js";
import type { TextMatcher } from "./_match.ts";

/** A `grep` pattern, checked. */
export interface SearchPattern {
  /** The pattern as the caller wrote it. */
  readonly pattern: string;
  /**
   * The pattern for ripgrep: escaped punctuation that Rust's regex refuses
   * and RE2 reads as the character (`\/`, `\"`, `\:`) written plain.
   */
  readonly ripgrepPattern: string;
  /** A fresh matcher for {@linkcode matchText} (`re2js`). */
  matcher(stop?: () => void): TextMatcher;
  /**
   * The pattern for a `grep -E` prefilter that finds at least every line the
   * pattern matches (the pattern itself when it keeps to the syntax both
   * read alike), or `null`.
   */
  readonly grepPattern: string | null;
}

/**
 * Checks a pattern and compiles it with `re2js`.
 *
 * @throws {TypeError} When the pattern is invalid or uses look-around,
 *   backreferences or (in line mode) a literal `\n`.
 */
export function checkPattern(
  pattern: string,
  options: { readonly caseInsensitive: boolean; readonly multiline: boolean },
): SearchPattern {
  if (typeof pattern !== "string") {
    throw new TypeError(`Invalid regex "${pattern}": expected a string`);
  }
  const invalid = (reason: string): TypeError =>
    new TypeError(`Invalid regex "${pattern}": ${reason}`);
  if (/\(\?<?[=!]/.test(pattern)) {
    throw invalid("look-around is not supported (no engine backtracks)");
  }
  if (/(^|[^\\])(\\\\)*\\[1-9]/.test(pattern)) {
    throw invalid("backreferences are not supported");
  }
  if (!options.multiline && /(^|[^\\])(\\\\)*\\n/.test(pattern)) {
    throw invalid(
      "the literal \\n is not allowed outside multiline mode (lines are matched one by one)",
    );
  }
  const flags = RE2JS.MULTILINE |
    (options.caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0) |
    (options.multiline ? RE2JS.DOTALL : 0);
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern, flags);
  } catch (error) {
    // re2js shows the pattern with the flags it was given, as `(?m)...`.
    const message = (error as Error).message
      .replace(/^error parsing regexp: /, "")
      .replace(/`\(\?[ims]+\)/, "`");
    throw invalid(message);
  }
  // `\A` and `\z` are line anchors in line mode (as in ripgrep): each line
  // is then matched alone.
  const window = options.multiline
    ? "text"
    : /(^|[^\\])(\\\\)*\\[Az]/.test(pattern)
    ? "line"
    : "lines";
  return {
    pattern,
    ripgrepPattern: pattern.replace(
      /\\([\s\S])/g,
      (escape, c: string) => /[!"%',/:;<=>@_`]/.test(c) ? c : escape,
    ),
    matcher: (stop = () => {}) => windowMatcher(re, window, stop),
    grepPattern: options.multiline ? null : grepSubset(pattern),
  };
}

/** Text matched at once between two checks of the time limit (line mode). */
const WINDOW_CHARS = 64 * 1024;

/**
 * Matches over windows of text: the whole text (multiline mode), 64 KiB of
 * whole lines (`stop` is called between windows), or one line at a time
 * (`\A`, `\z`). Outside multiline mode a match that spans a line break (a
 * class such as `[^a]` or `\s` may match `\n`) is looked for again within
 * its first line alone, as ripgrep matches lines.
 */
function windowMatcher(
  re: RE2JS,
  window: "text" | "lines" | "line",
  stop: () => void,
): TextMatcher {
  let text: string | null = null;
  let start = 0;
  let end = -1;
  let m: ReturnType<RE2JS["matcher"]> | null = null;
  const at = (found: typeof m, base: number) => ({
    index: base + found!.start(),
    0: text!.slice(base + found!.start(), base + found!.end()),
  });
  const matcher: TextMatcher = {
    lastIndex: 0,
    exec(input: string) {
      if (input !== text) {
        text = input;
        end = -1;
      }
      let lines = 0;
      for (let from = matcher.lastIndex; from <= input.length;) {
        if (window === "line" || from < start || from > end) {
          if (window !== "line" || ++lines % 1024 === 0) stop();
          start = from;
          const size = window === "lines" ? WINDOW_CHARS : 0;
          end = window === "text"
            ? input.length
            : input.indexOf("\n", Math.min(from + size, input.length));
          if (end === -1) end = input.length;
          m = re.matcher(input.slice(start, end));
        }
        if (!m!.find(from - start)) {
          if (end >= input.length) return null;
          from = end + 1;
          continue;
        }
        const found = at(m, start);
        if (window === "text" || !found[0].includes("\n")) return found;
        // Again within the match's first line alone.
        const lineStart = input.lastIndexOf("\n", found.index - 1) + 1;
        let lineEnd = input.indexOf("\n", found.index);
        if (lineEnd === -1) lineEnd = input.length;
        const line = re.matcher(input.slice(lineStart, lineEnd));
        if (line.find(0)) return at(line, lineStart);
        from = lineEnd + 1;
      }
      return null;
    },
  };
  return matcher;
}

/**
 * The pattern when `grep -E` (GNU, UTF-8 locale) matches at least what RE2
 * matches on every line: literals, escaped punctuation, `.`, `^`, `$`,
 * groups, alternation, greedy repetition, `\w` and `\s` (wider in GNU grep),
 * bracket expressions without a backslash or a `[:class:]`. Else `null`.
 */
function grepSubset(pattern: string): string | null {
  if (pattern === "" || /[^\x20-\x7e]/.test(pattern)) return null;
  let i = 0;
  let previous = "";
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      if (!/^[ws.*+?()[\]{}|^$\\\/-]$/.test(next)) return null;
      i += 2;
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + (pattern[i + 1] === "^" ? 3 : 2));
      const body = pattern.slice(i + 1, end);
      if (end === -1 || body.includes("\\") || body.includes("[")) return null;
      i = end + 1;
    } else if (c === "(" && pattern[i + 1] === "?") {
      return null;
    } else if ("*+?}".includes(previous) && c === "?" && previous !== "") {
      return null; // a lazy quantifier
    } else if (c === "{" && !/^\{\d+(,\d*)?\}/.test(pattern.slice(i))) {
      return null;
    } else {
      i++;
    }
    previous = c;
  }
  return pattern;
}
