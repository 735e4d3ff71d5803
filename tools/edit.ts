/**
 * The `edit` tool: replaces an exact string in a text file.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool, ToolResult } from "./types.ts";
import { withPathLock } from "./_path_lock.ts";
import {
  defineTool,
  formatBytes,
  numberLine,
  okResult,
  pathError,
} from "./_shared.ts";

/** Lines of context shown around a change. */
const SNIPPET_CONTEXT = 3;
/** The most lines of a snippet. */
const SNIPPET_MAX_LINES = 40;
/** How many times an edit is tried again when the file changed under it. */
const CONFLICT_RETRIES = 10;
const CONFLICT = Symbol("conflict");

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Characters of one snippet line before it is cut. */
const SNIPPET_LINE_CHARS = 500;

/**
 * Makes the `edit` tool: an exact, literal replacement of `old_string` by
 * `new_string` (regular-expression characters mean themselves). It refuses an
 * empty `old_string`, identical strings, no match, and several matches
 * without `replace_all` (saying how many). A file with CRLF line ends keeps
 * them even when the strings use LF; a UTF-8 byte order mark is kept. Files
 * over 8 MiB (`limits.editMaxBytes`), binary files and invalid UTF-8 are
 * refused. Returns a short numbered snippet around the first change.
 *
 * @example Replacing a word
 * ```ts
 * import { assert } from "@std/assert";
 * import { createEditTool } from "./edit.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const edit = createEditTool(createToolContext(runtime));
 * const file = await Deno.makeTempFile();
 * await Deno.writeTextFile(file, "hello world\n");
 * const result = await edit.execute({ file_path: file, old_string: "world", new_string: "there" });
 * assert(!result.isError && await Deno.readTextFile(file) === "hello there\n");
 * await Deno.remove(file);
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createEditTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  return defineTool(context, {
    name: "edit",
    timeoutMs: context.limits.fileTimeoutMs,
    description:
      `Edits a text file in the "${runtime.name}" runtime by replacing an exact string (no regular expressions; whitespace and indentation must match). ` +
      `old_string must occur exactly once unless replace_all is true; include enough surrounding text to make it unique. An empty new_string deletes old_string. ` +
      `The file's line endings are kept. Files up to ${
        formatBytes(limits.editMaxBytes)
      }. Relative paths are resolved against ${JSON.stringify(runtime.cwd)}.`,
    inputSchema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          minLength: 1,
          description:
            "The file to edit (absolute, or relative to the default working directory).",
        },
        old_string: {
          type: "string",
          description: "The exact text to replace (not empty).",
        },
        new_string: {
          type: "string",
          description: "The replacement (empty to delete old_string).",
        },
        replace_all: {
          type: "boolean",
          description:
            "Replace every occurrence instead of exactly one (default false).",
        },
      },
      required: ["file_path", "old_string", "new_string"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const given = input.file_path as string;
      const oldString = input.old_string as string;
      const newString = input.new_string as string;
      const replaceAll = (input.replace_all as boolean | undefined) ?? false;
      if (oldString === "") {
        return pathError(
          "edit",
          given,
          "old_string is empty; use write to create or replace a whole file",
        );
      }
      if (oldString === newString) {
        return pathError(
          "edit",
          given,
          "old_string and new_string are identical; nothing would change",
        );
      }
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      const info = await runtime.fs.stat(path, options);
      if (!info) {
        return pathError("edit", given, "no such file; use write to create it");
      }
      if (info.type === "directory") {
        return pathError("edit", given, "it is a folder");
      }
      if (info.type === "other") {
        return pathError("edit", given, "it is not a regular file");
      }
      if (info.size > limits.editMaxBytes) {
        return pathError(
          "edit",
          given,
          `file is larger than the ${formatBytes(limits.editMaxBytes)} limit`,
        );
      }
      return await withPathLock(runtime, path, async () => {
        for (let attempt = 1;; attempt++) {
          const result = await editOnce(
            path,
            { given, oldString, newString, replaceAll },
            options,
          );
          if (result !== CONFLICT) return result;
          if (attempt >= CONFLICT_RETRIES) {
            return pathError(
              "edit",
              given,
              `the file changed while it was being edited, ${CONFLICT_RETRIES} times; nothing was changed: read it and try again`,
            );
          }
          // Another writer is busy with this file: let it finish (a random,
          // growing pause keeps two instances from colliding in step).
          await new Promise((resolve) =>
            setTimeout(resolve, Math.random() * 5 * attempt)
          );
        }
      });
    },
  });

  async function editOnce(
    path: string,
    request: {
      given: string;
      oldString: string;
      newString: string;
      replaceAll: boolean;
    },
    options: { signal?: AbortSignal },
  ): Promise<ToolResult | typeof CONFLICT> {
    const { given, replaceAll } = request;
    let { oldString, newString } = request;
    const bytes = await runtime.fs.readBytes(path, {
      ...options,
      maxBytes: limits.editMaxBytes,
    });
    if (bytes.includes(0)) {
      return pathError("edit", given, "it is a binary file");
    }
    let content: string;
    try {
      content = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
        .decode(bytes);
    } catch {
      return pathError("edit", given, "it is not valid UTF-8 text");
    }

    // Keep the file's line ends: a CRLF file stays CRLF, an LF file stays LF.
    const crlf = countOf(content, "\r\n");
    const lf = countOf(content, "\n") - crlf;
    const style = crlf > lf ? "\r\n" : lf > 0 ? "\n" : undefined;
    if (style) {
      const oldStyled = withLineEnds(oldString, style);
      if (oldStyled !== oldString && countOf(content, oldStyled) > 0) {
        oldString = oldStyled;
        newString = withLineEnds(newString, style);
      } else if (oldStyled === oldString) {
        newString = withLineEnds(newString, style);
      }
    }

    const count = countOf(content, oldString);
    if (count === 0) {
      return pathError(
        "edit",
        given,
        "old_string was not found; read the file and copy the text exactly, including whitespace",
      );
    }
    if (count > 1 && !replaceAll) {
      return pathError(
        "edit",
        given,
        `old_string occurs ${count} times; add surrounding text to make it unique, or set replace_all to true`,
      );
    }
    const first = content.indexOf(oldString);
    const updated = replaceAll
      ? content.split(oldString).join(newString)
      : content.slice(0, first) + newString +
        content.slice(first + oldString.length);
    // Compare and swap: write only when the file still holds what was read
    // (another process or instance may have written it meanwhile); as one
    // locked step where the file system offers it.
    if (runtime.fs.writeTextIfUnchanged) {
      const written = await runtime.fs.writeTextIfUnchanged(
        path,
        bytes,
        updated,
        options,
      );
      if (!written) return CONFLICT;
    } else {
      const now = await runtime.fs.readBytes(path, {
        ...options,
        maxBytes: limits.editMaxBytes,
      }).catch(() => undefined);
      if (!now || !sameBytes(now, bytes)) return CONFLICT;
      await runtime.fs.writeText(path, updated, options);
    }

    const what = replaceAll
      ? `replaced ${count} occurrence${count === 1 ? "" : "s"}`
      : "replaced 1 occurrence";
    const snippet = snippetAround(updated, first, newString.length);
    return okResult(
      `Edited ${path}: ${what}${
        count > 1 ? " (the first is shown)" : ""
      }\n${snippet}`,
    );
  }
}

function countOf(text: string, part: string): number {
  if (part === "") return 0;
  let count = 0;
  let at = text.indexOf(part);
  while (at >= 0) {
    count++;
    at = text.indexOf(part, at + part.length);
  }
  return count;
}

function withLineEnds(text: string, style: "\n" | "\r\n"): string {
  const lf = text.replaceAll("\r\n", "\n");
  return style === "\n" ? lf : lf.replaceAll("\n", "\r\n");
}

function snippetAround(text: string, start: number, length: number): string {
  const firstLine = countOf(text.slice(0, start), "\n") + 1;
  const lastLine = firstLine +
    countOf(text.slice(start, start + length), "\n");
  const from = Math.max(1, firstLine - SNIPPET_CONTEXT);
  let to = lastLine + SNIPPET_CONTEXT;
  if (to - from + 1 > SNIPPET_MAX_LINES) to = from + SNIPPET_MAX_LINES - 1;
  // Find the start of line `from` without splitting the whole text.
  let at = 0;
  for (let line = 1; line < from; line++) at = text.indexOf("\n", at) + 1;
  const lines: string[] = [];
  for (let line = from; line <= to && at <= text.length; line++) {
    const end = text.indexOf("\n", at);
    let value = text.slice(at, end < 0 ? text.length : end);
    if (value.endsWith("\r")) value = value.slice(0, -1);
    // Shown like read shows it: without the byte order mark (kept in the file).
    if (line === 1 && value.startsWith("\uFEFF")) value = value.slice(1);
    if (value.length > SNIPPET_LINE_CHARS) {
      value = `${value.slice(0, SNIPPET_LINE_CHARS)} [… line cut]`;
    }
    if (end < 0 && value === "" && line > from) break;
    lines.push(numberLine(line, value));
    if (end < 0) break;
    at = end + 1;
  }
  const shownTo = from + lines.length - 1;
  return `Snippet (lines ${from}-${shownTo}):\n${lines.join("\n")}`;
}
