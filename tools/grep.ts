/**
 * The `grep` tool: searches file contents with a regular expression,
 * ripgrep-like.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import {
  DEFAULT_GREP_MAX_LINE_CHARS,
  type GrepOutputMode,
  type GrepResult,
} from "../search/types.ts";
import { cutLine } from "../search/_match.ts";
import { Redactor } from "../_internal/redact.ts";
import { formatGrepResult } from "./search_format.ts";
import { defineTool, errorResult, okResult, pathError } from "./_shared.ts";
import { engineOf } from "./_search.ts";

/**
 * Makes the `grep` tool, a thin wrapper over the search engine (ripgrep when
 * present, else a TypeScript engine with the same answers). Output modes:
 * `files_with_matches` (default: matching files, one per line), `count`
 * (`path:count`), `content` (ripgrep's format: `path:line:text` for matches,
 * `path-line-text` for context lines, `--` between separate groups). Binary
 * files and heavy folders below the searched folder are skipped. `head_limit`
 * and `offset` page through the entries; the output is capped at
 * `limits.grepOutputChars` (100 000) with a notice; a bad regular expression
 * is a clear error.
 *
 * @example Files that mention TODO
 * ```ts
 * import { assert } from "@std/assert";
 * import { createGrepTool } from "./grep.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.ts`, "// TODO: test\n");
 * await using runtime = new LocalSkillRuntime({ cwd: dir });
 * const grep = createGrepTool(createToolContext(runtime));
 * const result = await grep.execute({ pattern: "TODO", glob: "*.ts", output_mode: "content" });
 * assert(result.text.endsWith("/a.ts:1:// TODO: test"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createGrepTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  return defineTool(context, {
    name: "grep",
    timeoutMs: context.limits.searchTimeoutMs,
    description:
      `Searches file contents in the "${runtime.name}" runtime with a regular expression (ripgrep syntax, e.g. "log.*Error", "function\\s+\\w+"). ` +
      `Where ripgrep is missing the pattern is read as RE2 (the same for common patterns; there \\w, \\d, \\s and \\b are ASCII only). Look-around and backreferences are refused; lines are matched one by one unless multiline is set. ` +
      `output_mode: "files_with_matches" (default) lists matching files, "count" gives matching lines per file, "content" shows matching lines (path:line:text) with optional context lines. ` +
      `Filter files with glob (e.g. "*.{ts,tsx}") or type (e.g. "py"). Binary files and folders such as node_modules and .git are skipped. ` +
      `path defaults to ${
        JSON.stringify(runtime.cwd)
      }. Page through long results with head_limit and offset; output over ${limits.grepOutputChars} characters is cut.`,
    inputSchema: {
      type: "object",
      properties: {
        pattern: {
          type: "string",
          minLength: 1,
          description: "The regular expression to search for.",
        },
        path: {
          type: "string",
          minLength: 1,
          description:
            "The file or folder to search (default: the default working directory).",
        },
        glob: {
          type: "string",
          minLength: 1,
          description:
            'Only files matching this glob, e.g. "*.md" or "src/**/*.ts"; a leading ! excludes.',
        },
        type: {
          type: "string",
          minLength: 1,
          description:
            'Only files of this type, e.g. "ts", "py", "md", "json".',
        },
        output_mode: {
          type: "string",
          enum: ["files_with_matches", "content", "count"],
          description: 'What to show (default "files_with_matches").',
        },
        context_before: {
          type: "integer",
          minimum: 0,
          maximum: 100,
          description:
            'Lines to show before each match (output_mode "content").',
        },
        context_after: {
          type: "integer",
          minimum: 0,
          maximum: 100,
          description:
            'Lines to show after each match (output_mode "content").',
        },
        context: {
          type: "integer",
          minimum: 0,
          maximum: 100,
          description:
            'Lines to show before and after each match (output_mode "content").',
        },
        line_numbers: {
          type: "boolean",
          description:
            'Show line numbers (output_mode "content"; default true).',
        },
        case_insensitive: {
          type: "boolean",
          description: "Ignore letter case (default false).",
        },
        multiline: {
          type: "boolean",
          description:
            "Let a match span lines; . then matches line ends (default false).",
        },
        head_limit: {
          type: "integer",
          minimum: 1,
          description:
            "Show at most this many entries (lines, files or counts).",
        },
        offset: {
          type: "integer",
          minimum: 0,
          description: "Skip this many entries first (default 0).",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const pattern = input.pattern as string;
      const given = (input.path as string | undefined) ?? ".";
      const mode = (input.output_mode as GrepOutputMode | undefined) ??
        "files_with_matches";
      const contextKeys = ["context_before", "context_after", "context"]
        .filter((key) => input[key] !== undefined);
      if (mode !== "content" && contextKeys.length > 0) {
        return errorResult(
          `Invalid input: ${
            contextKeys.map((k) => `"${k}"`).join(", ")
          } only appl${
            contextKeys.length === 1 ? "ies" : "y"
          } to output_mode "content"`,
        );
      }
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      const info = await runtime.fs.stat(path, options);
      if (!info) return pathError("search", given, "no such file or folder");
      const redactor = new Redactor(context.secrets());
      // Lines come back long enough to hold a secret that straddles the cut,
      // so it is redacted whole before the line is cut (see redactResult).
      const pad = redactor.longest;
      const result = await engineOf(context).grep({
        pattern,
        path,
        outputMode: mode,
        timeoutMs: limits.searchTimeoutMs,
        maxOutputChars: limits.grepOutputChars,
        maxLineChars: DEFAULT_GREP_MAX_LINE_CHARS + pad,
        ...optional("glob", input.glob as string | undefined),
        ...optional("type", input.type as string | undefined),
        ...optional("before", input.context_before as number | undefined),
        ...optional("after", input.context_after as number | undefined),
        ...optional("context", input.context as number | undefined),
        ...optional(
          "caseInsensitive",
          input.case_insensitive as boolean | undefined,
        ),
        ...optional("multiline", input.multiline as boolean | undefined),
        ...optional("headLimit", input.head_limit as number | undefined),
        ...optional("offset", input.offset as number | undefined),
        ...options,
      });
      return okResult(
        formatGrepResult(redactResult(result, redactor), {
          lineNumbers: (input.line_numbers as boolean | undefined) ?? true,
          maxChars: limits.grepOutputChars,
        }),
      );
    },
  });
}

/**
 * Redacts configured values from every path and content line, then cuts each
 * line at the usual length: a secret that straddles a cut (of a line, or of
 * the whole output when it is formatted) leaves no fragment behind.
 */
function redactResult(result: GrepResult, redactor: Redactor): GrepResult {
  if (redactor.empty) return result;
  const path = redactor.redact(result.path);
  const skipped = result.skipped.map((file) => ({
    ...file,
    path: redactor.redact(file.path),
  }));
  switch (result.mode) {
    case "files_with_matches":
      return {
        ...result,
        path,
        skipped,
        files: result.files.map((file) => redactor.redact(file)),
      };
    case "count":
      return {
        ...result,
        path,
        skipped,
        counts: result.counts.map((entry) => ({
          ...entry,
          path: redactor.redact(entry.path),
        })),
      };
    case "content":
      return {
        ...result,
        path,
        skipped,
        lines: result.lines.map((line) => {
          // A line the engine cut may end in a piece of a secret: it goes
          // too, before the cut below (which earlier redactions move).
          const { text, cut } = cutLine(
            line.cut
              ? redactor.redactCutEnd(line.text)
              : redactor.redact(line.text),
            DEFAULT_GREP_MAX_LINE_CHARS,
          );
          return {
            ...line,
            path: redactor.redact(line.path),
            text,
            cut: cut || line.cut,
          };
        }),
      };
  }
}

function optional<K extends string, V>(
  key: K,
  value: V | undefined,
): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
