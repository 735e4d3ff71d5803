/**
 * Matching of one file's text with ripgrep's line semantics: matches expanded to
 * whole lines, overlapping line ranges merged, counts of matching line groups,
 * context lines. Used by the engines that match in TypeScript.
 *
 * @module
 */
import type { GrepPlan } from "./_plan.ts";
import type { GrepLine } from "./types.ts";

/** One line of `content` output, without its file. */
export type MatchedLine = Omit<GrepLine, "path">;

/** What {@linkcode matchText} computes (a `grep` plan's fields). */
export type MatchTextOptions =
  & Pick<GrepPlan, "multiline" | "mode" | "before" | "after" | "maxLineChars">
  & { readonly maxLinesPerFile?: number };

/**
 * Cuts a line for output: drops one trailing `\r` and keeps at most `max`
 * characters (never splitting a surrogate pair).
 */
export function cutLine(
  line: string,
  max: number,
): { text: string; cut: boolean } {
  if (line.endsWith("\r")) line = line.slice(0, -1);
  if (line.length <= max) return { text: line, cut: false };
  let end = max;
  const code = line.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return { text: line.slice(0, end), cut: true };
}

/**
 * What {@linkcode matchText} uses of a pattern: a global `RegExp`, or the
 * `re2js` matcher of `_regex.ts`.
 */
export interface TextMatcher {
  /** Where the next `exec` starts. */
  lastIndex: number;
  /** The next match at or after `lastIndex`, or `null`. */
  exec(text: string): { readonly index: number; readonly 0: string } | null;
}

/**
 * Finds the matches of a global regular expression in a file's text, with
 * ripgrep's semantics.
 */
export function matchText(
  text: string,
  re: TextMatcher,
  options: MatchTextOptions,
): { count: number; lines: MatchedLine[] } | null {
  const length = text.length;
  const maxLines = options.mode === "content"
    ? options.maxLinesPerFile ?? Infinity
    : Infinity;
  const endsWithNewline = length === 0 || text.charCodeAt(length - 1) === 10;
  // Groups as pairs of offsets: start of the first line, end of the last
  // line (the offset of its `\n`, or the text's length).
  const groups: number[] = [];
  re.lastIndex = 0;
  for (;;) {
    const m = re.exec(text);
    if (m === null) break;
    const start = m.index;
    const end = start + m[0].length;
    if (start === length && endsWithNewline) break;
    const last = end > start ? end - 1 : start;
    let lineEnd = text.indexOf("\n", last);
    if (lineEnd === -1) lineEnd = length;
    const previousEnd = groups.at(-1) ?? -1;
    if (start <= previousEnd) {
      if (lineEnd > previousEnd) groups[groups.length - 1] = lineEnd;
    } else {
      const lineStart = start === 0 ? 0 : text.lastIndexOf("\n", start - 1) + 1;
      groups.push(lineStart, lineEnd);
      if (
        options.mode === "files_with_matches" || groups.length / 2 > maxLines
      ) break;
    }
    if (!options.multiline) {
      if (lineEnd >= length) break;
      re.lastIndex = lineEnd + 1;
    } else if (end > start) {
      re.lastIndex = end;
    } else {
      if (start >= length) break;
      const code = text.charCodeAt(start);
      re.lastIndex = start + (code >= 0xd800 && code <= 0xdbff ? 2 : 1);
    }
  }
  if (groups.length === 0) return null;
  const count = groups.length / 2;
  if (options.mode !== "content") return { count, lines: [] };

  // Line starts, to number lines and find context.
  const starts: number[] = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) {
    if (i + 1 < length) starts.push(i + 1);
  }
  const lineCount = length === 0 ? 0 : starts.length;
  const lineIndexOf = (offset: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const lineText = (index: number): string => {
    const s = starts[index]!;
    const e = index + 1 < starts.length ? starts[index + 1]! - 1 : (
      endsWithNewline && length > 0 ? length - 1 : length
    );
    return text.slice(s, e);
  };
  const lines: MatchedLine[] = [];
  let emittedUpTo = -1; // index of the last line emitted
  let pendingAfterUpTo = -1; // context after the previous group, up to this index
  const emit = (index: number, match: boolean): void => {
    if (lines.length >= maxLines) return;
    const { text: t, cut } = cutLine(lineText(index), options.maxLineChars);
    lines.push({ lineNumber: index + 1, text: t, match, cut });
    emittedUpTo = index;
  };
  for (let g = 0; g < groups.length && lines.length < maxLines; g += 2) {
    const first = lineIndexOf(groups[g]!);
    const lastLine = lineIndexOf(Math.min(groups[g + 1]!, length - 1));
    // Context between groups: up to `after` lines after the previous group
    // and `before` lines before this one.
    for (let i = emittedUpTo + 1; i < first; i++) {
      if (i <= pendingAfterUpTo || i >= first - options.before) emit(i, false);
    }
    for (let i = Math.max(first, emittedUpTo + 1); i <= lastLine; i++) {
      emit(i, true);
    }
    pendingAfterUpTo = Math.min(lastLine + options.after, lineCount - 1);
  }
  for (let i = emittedUpTo + 1; i <= pendingAfterUpTo; i++) emit(i, false);
  return { count, lines };
}
