/**
 * Text for the model from search results: one helper per tool (`grep`, `glob`,
 * `ls`), with notices when a limit left something out (they name the tools'
 * parameters: the tools own this text, the search engine only the results).
 *
 * @module
 */
import { DEFAULT_GREP_MAX_OUTPUT_CHARS } from "../search/types.ts";
import type {
  GlobResult,
  GrepResult,
  LsResult,
  SkippedFile,
} from "../search/types.ts";

/** Options of {@linkcode formatGrepResult}. */
export interface FormatGrepOptions {
  /** Show line numbers in content mode. Default `true`. */
  readonly lineNumbers?: boolean;
  /** Show paths relative to this folder when inside it. Default: absolute. */
  readonly relativeTo?: string;
  /** The most characters of text. Default 100 000. */
  readonly maxChars?: number;
}

/** Options of {@linkcode formatGlobResult}. */
export interface FormatGlobOptions {
  /** Show paths relative to this folder when inside it. Default: absolute. */
  readonly relativeTo?: string;
}

/** Options of {@linkcode formatLsResult}. */
export interface FormatLsOptions {
  /** Show the listed folder's path first. Default `true`. */
  readonly header?: boolean;
}

function displayPath(path: string, relativeTo: string | undefined): string {
  if (relativeTo === undefined) return path;
  const base = relativeTo.endsWith("/") ? relativeTo : `${relativeTo}/`;
  if (path.startsWith(base)) return path.slice(base.length);
  if (path === relativeTo) return path.split("/").at(-1) ?? path;
  return path;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Cuts text at a line boundary to `max` characters, with a notice. */
function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.lastIndexOf("\n", max);
  const kept = text.slice(0, cut > 0 ? cut : max);
  return `${kept}\n[Output cut at ${max} characters: narrow the search (path, glob, type) or page with head_limit and offset]`;
}

/**
 * Formats a `grep` result for the model: paths (files mode), `path:count`
 * (count mode) or ripgrep-like lines `path:12:text` for matches and
 * `path-13-text` for context, `--` between groups (content mode), then
 * notices for limits, all capped at 100 000 characters.
 *
 * @param result The result.
 * @param options Line numbers, relative paths, the cap.
 * @returns The text.
 *
 * Needs no permission.
 *
 * @example Formatting matching files
 * ```ts
 * import { assert } from "@std/assert";
 * import { formatGrepResult } from "@skillrun/skillrun/tools";
 * const text = formatGrepResult({
 *   mode: "files_with_matches", path: "/w", engine: "fallback",
 *   files: ["/w/a.ts"], totalEntries: 1, offset: 0,
 *   headLimitReached: false, outputLimitReached: false, skipped: [],
 * }, { relativeTo: "/w" });
 * assert(text === "Found 1 file\na.ts");
 * ```
 */
export function formatGrepResult(
  result: GrepResult,
  options: FormatGrepOptions = {},
): string {
  const text = formatEntries(result, options);
  // After the cap, so that it is never cut away.
  const skipped = skippedNotice(result.skipped ?? [], options.relativeTo);
  return skipped === "" ? text : `${text}\n\n${skipped}`;
}

/** How many skipped files are named before "and N more". */
const SKIPPED_NAMED = 20;

function skippedNotice(
  skipped: readonly SkippedFile[],
  rel: string | undefined,
): string {
  if (skipped.length === 0) return "";
  const named = skipped.slice(0, SKIPPED_NAMED).map((file) =>
    `  ${displayPath(file.path, rel) || file.path} (${
      file.reason === "too-large"
        ? `larger than the size limit${
          file.size === undefined ? "" : `: ${file.size} bytes`
        }`
        : "not a regular file: a pipe, a device or a socket"
    })`
  );
  const more = skipped.length > SKIPPED_NAMED
    ? [`  and ${skipped.length - SKIPPED_NAMED} more`]
    : [];
  return [
    `[Not searched: ${plural(skipped.length, "file")}]`,
    ...named,
    ...more,
  ].join("\n");
}

function formatEntries(
  result: GrepResult,
  options: FormatGrepOptions,
): string {
  if (result.totalEntries === 0) {
    return result.mode === "files_with_matches"
      ? "No files found"
      : "No matches found";
  }
  const rel = options.relativeTo;
  let parts: string[];
  let shown: number;
  switch (result.mode) {
    case "files_with_matches":
      shown = result.files.length;
      parts = [
        `Found ${plural(result.totalEntries ?? shown, "file")}`,
        ...result.files.map((f) => displayPath(f, rel)),
      ];
      break;
    case "count": {
      shown = result.counts.length;
      const total = result.counts.reduce((n, c) => n + c.count, 0);
      parts = [
        ...result.counts.map((c) => `${displayPath(c.path, rel)}:${c.count}`),
        `\nFound ${plural(total, "matching line")} in ${plural(shown, "file")}${
          result.totalEntries !== shown ? " shown" : ""
        }`,
      ];
      break;
    }
    case "content": {
      shown = result.lines.length;
      parts = [];
      const lineNumbers = options.lineNumbers ?? true;
      const anyContext = result.lines.some((l) => !l.match);
      let previous: { path: string; lineNumber: number } | null = null;
      for (const line of result.lines) {
        if (
          anyContext && previous !== null &&
          (previous.path !== line.path ||
            previous.lineNumber + 1 !== line.lineNumber)
        ) parts.push("--");
        const sep = line.match ? ":" : "-";
        const number = lineNumbers ? `${line.lineNumber}${sep}` : "";
        parts.push(
          `${displayPath(line.path, rel)}${sep}${number}${line.text}${
            line.cut ? " [… line cut]" : ""
          }`,
        );
        previous = line;
      }
      break;
    }
  }
  const { offset, totalEntries } = result;
  const total = totalEntries === null ? "more" : String(totalEntries);
  const text = withNotices(
    parts,
    (result.headLimitReached || offset > 0) &&
      (shown === 0
        ? `[No entries after offset ${offset} (of ${total})]`
        : `[Showing entries ${offset + 1}-${offset + shown} of ${total}${
          result.headLimitReached
            ? `; use offset ${offset + shown} to see more`
            : ""
        }]`),
    result.outputLimitReached &&
      `[Output capped: more entries were found; narrow the search (path, glob, type) or page with head_limit and offset ${
        offset + shown
      }]`,
  );
  return capText(text, options.maxChars ?? DEFAULT_GREP_MAX_OUTPUT_CHARS);
}

/** The lines, then the notices that apply (not `false`) after an empty line. */
function withNotices(
  lines: readonly string[],
  ...notices: (string | false)[]
): string {
  const shown = notices.filter((n) => n !== false);
  return [...lines, ...(shown.length > 0 ? ["", ...shown] : [])].join("\n");
}

/**
 * Formats a `glob` result: paths newest first, then a notice when the limit
 * left files out.
 *
 * @param result The result.
 * @param options Relative paths.
 * @returns The text.
 *
 * Needs no permission.
 *
 * @example Formatting found files
 * ```ts
 * import { assert } from "@std/assert";
 * import { formatGlobResult } from "@skillrun/skillrun/tools";
 * const text = formatGlobResult({
 *   path: "/w", engine: "ripgrep", totalFiles: 3, truncated: true,
 *   files: [{ path: "/w/b.ts", modifiedMs: 2 }, { path: "/w/a.ts", modifiedMs: 1 }],
 * }, { relativeTo: "/w" });
 * assert(text.startsWith("b.ts\na.ts\n"));
 * ```
 */
export function formatGlobResult(
  result: GlobResult,
  options: FormatGlobOptions = {},
): string {
  if (result.files.length === 0) return "No files found";
  return withNotices(
    result.files.map((f) => displayPath(f.path, options.relativeTo)),
    result.truncated &&
      `[Showing the ${result.files.length} most recently modified of ${result.totalFiles} files: use a more specific pattern or path]`,
  );
}

/**
 * Formats an `ls` result: folders first (with a trailing `/`), then files,
 * relative paths, a notice when the limit was reached.
 *
 * @param result The result.
 * @param options Whether to show the folder's path first.
 * @returns The text.
 *
 * Needs no permission.
 *
 * @example Formatting a listing
 * ```ts
 * import { assert } from "@std/assert";
 * import { formatLsResult } from "@skillrun/skillrun/tools";
 * const text = formatLsResult({
 *   path: "/w", truncated: false,
 *   entries: [
 *     { path: "src", type: "directory", size: 0, skipped: false },
 *     { path: "a.md", type: "file", size: 3, skipped: false },
 *   ],
 * }, { header: false });
 * assert(text === "src/\na.md");
 * ```
 */
export function formatLsResult(
  result: LsResult,
  options: FormatLsOptions = {},
): string {
  const lines: string[] = [];
  if (options.header ?? true) lines.push(`${result.path}:`);
  if (result.entries.length === 0) lines.push("(empty folder)");
  for (const { path, type, skipped } of result.entries) {
    lines.push(
      type === "directory"
        ? `${path}/${skipped ? " (not listed: heavy folder)" : ""}`
        : type === "symlink"
        ? `${path} (symlink)`
        : path,
    );
  }
  return withNotices(
    lines,
    result.truncated &&
      `[Listing stopped at ${result.entries.length} entries: list a sub-folder, lower the depth or raise the limit]`,
  );
}
