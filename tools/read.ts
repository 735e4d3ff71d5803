/**
 * The `read` tool: shows a window of a text file's lines, numbered like
 * `cat -n`.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool, ToolResult } from "./types.ts";
import { Redactor } from "../_internal/redact.ts";
import type {
  OpenFileResult,
  SignalOptions,
  SkillRuntimeFileSystem,
} from "../runtimes/types.ts";
import {
  defineTool,
  errorResult,
  formatBytes,
  numberLine,
  okResult,
  pathError,
} from "./_shared.ts";

/** How many bytes from the start of a file are checked for a NUL byte. */
const SNIFF_BYTES = 8192;

/** Extensions of files that are never shown as text. */
const BINARY_EXTENSIONS = new Set([
  "png",
  "jpg",
  "jpeg",
  "gif",
  "bmp",
  "ico",
  "webp",
  "tif",
  "tiff",
  "psd",
  "pdf",
  "zip",
  "gz",
  "tgz",
  "bz2",
  "xz",
  "zst",
  "7z",
  "rar",
  "tar",
  "jar",
  "war",
  "class",
  "so",
  "dll",
  "dylib",
  "exe",
  "bin",
  "o",
  "a",
  "obj",
  "wasm",
  "pyc",
  "pyo",
  "ttf",
  "otf",
  "woff",
  "woff2",
  "eot",
  "mp3",
  "mp4",
  "wav",
  "ogg",
  "flac",
  "avi",
  "mov",
  "mkv",
  "webm",
  "docx",
  "xlsx",
  "pptx",
  "odt",
  "ods",
  "odp",
  "sqlite",
  "db",
  "dat",
  "pkl",
  "npy",
  "parquet",
]);

/**
 * Makes the `read` tool.
 *
 * It streams the file and keeps only the lines it returns, so a window near
 * the end of a file of any size costs little memory. The 4 MiB limit
 * (`limits.readMaxBytes`) applies to the text returned by one call, not to the
 * file: past it the window stops early and says which `offset` continues.
 * Lines over 2000 characters are cut with a notice. A line longer than that
 * 4 MiB is not scanned to its end (a 1 TiB file without a newline would take
 * the whole time limit): the answer comes at once, saying that `read` cannot
 * reach past it and that bash can. A file with a NUL byte in
 * its first 8 KiB, or a known binary extension, is refused as binary.
 *
 * @example Reading a window of lines
 * ```ts
 * import { assert } from "@std/assert";
 * import { createReadTool } from "./read.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * const file = await Deno.makeTempFile();
 * await Deno.writeTextFile(file, "first\nsecond\nthird\n");
 * await using runtime = new LocalSkillRuntime();
 * const read = createReadTool(createToolContext(runtime));
 * const result = await read.execute({ file_path: file, offset: 2, limit: 1 });
 * assert(result.text.endsWith("(lines 2-2; more follow)\n     2\tsecond\n[More lines follow; continue with offset=3]"));
 * await Deno.remove(file);
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createReadTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  const publishable = context.publisher !== undefined;
  return defineTool(context, {
    name: "read",
    timeoutMs: context.limits.fileTimeoutMs,
    description:
      `Reads a text file from the "${runtime.name}" runtime and returns its lines numbered like cat -n, under a header naming the file and the line range. ` +
      `Reads ${limits.readDefaultLines} lines from the start by default; use offset (1-based line) and limit for other windows of large files. ` +
      `Lines longer than ${limits.readLineChars} characters are cut. Binary files are not shown. Relative paths are resolved against ${
        JSON.stringify(runtime.cwd)
      }.`,
    inputSchema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          minLength: 1,
          description:
            "The file to read (absolute, or relative to the default working directory).",
        },
        offset: {
          type: "integer",
          minimum: 1,
          description: "The first line to show, 1-based (default 1).",
        },
        limit: {
          type: "integer",
          minimum: 1,
          description:
            `How many lines to show (default ${limits.readDefaultLines}).`,
        },
      },
      required: ["file_path"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const given = input.file_path as string;
      const offset = (input.offset as number | undefined) ?? 1;
      const limit = (input.limit as number | undefined) ??
        limits.readDefaultLines;
      const options = signal ? { signal } : {};
      const opened = await openFile(runtime.fs, given, options);
      if (!opened) return pathError("read", given, "no such file");
      const { info } = opened;
      const path = info.path;
      const refusal = info.type === "directory"
        ? "it is a folder; list it with ls"
        : info.type === "other"
        ? "it is not a regular file"
        : undefined;
      const extension = /\.([^./]+)$/.exec(path)?.[1]?.toLowerCase();
      const binary = extension !== undefined &&
        BINARY_EXTENSIONS.has(extension);
      if (
        refusal || binary || (info.type === "file" && info.size === 0)
      ) {
        await opened.stream?.cancel().catch(() => {});
        return refusal
          ? pathError("read", given, refusal)
          : binary
          ? binaryResult(given, info.size, publishable)
          : okResult(`File: ${path} is empty (0 bytes)`);
      }
      const stream = opened.stream ??
        await runtime.fs.readStream(path, options);
      return await readWindow(stream, {
        given,
        path,
        size: info.size,
        offset,
        limit,
        lineChars: limits.readLineChars,
        maxBytes: limits.readMaxBytes,
        publishable,
        redactor: new Redactor(context.secrets()),
      });
    },
  });
}

/**
 * A file's facts, with its stream when the file system opens both in one
 * step (`openFile`: one walk of a fence, one request); otherwise `stat`
 * alone (the caller then calls `readStream`).
 */
async function openFile(
  fs: SkillRuntimeFileSystem,
  given: string,
  options: SignalOptions,
): Promise<OpenFileResult | null> {
  if (fs.openFile) return await fs.openFile(given, options);
  const path = await fs.resolve(given);
  const info = await fs.stat(path, options);
  return info && { info: { ...info, path } };
}

interface WindowOptions {
  readonly given: string;
  readonly path: string;
  readonly size: number;
  readonly offset: number;
  readonly limit: number;
  readonly lineChars: number;
  readonly maxBytes: number;
  /** Whether a publisher is there to share the file with. */
  readonly publishable: boolean;
  /** Removes configured values from each line before it is cut. */
  readonly redactor: Redactor;
}

function binaryResult(
  given: string,
  size: number,
  publishable: boolean,
): ToolResult {
  const share = publishable ? " or share it with publish_file" : "";
  return pathError(
    "read",
    given,
    `it is a binary file (${
      formatBytes(size)
    }); inspect it with bash (e.g. file, xxd)${share}`,
  );
}

/**
 * Streams a file and returns the requested window of lines. Only the lines
 * returned are kept; bytes before the window are scanned for line ends only.
 */
async function readWindow(
  stream: ReadableStream<Uint8Array>,
  options: WindowOptions,
): Promise<ToolResult> {
  const { offset, limit, lineChars, maxBytes } = options;
  const last = offset + limit - 1;
  // Enough bytes to hold `lineChars` characters of any UTF-8 text.
  const keepBytes = lineChars * 4;
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  const lines: string[] = [];
  let lineNo = 1; // the line being scanned
  let lineBytes = 0; // bytes of the current line so far
  let kept: Uint8Array[] = [];
  let keptBytes = 0;
  let lastByte = -1;
  let sniffed = 0;
  let outBytes = 0;
  let cutLines = 0;
  let more = false; // the file has lines after the window
  let stoppedByCap = false;
  let done = false;
  let longLine = 0; // a line longer than maxBytes, whose end was not sought

  const finishLine = (): boolean => {
    // Returns false when the output cap stops the window.
    if (lineNo >= offset && lineNo <= last) {
      let bytes = concat(kept, keptBytes);
      if (lineBytes >= 0 && lineBytes <= keepBytes && lastByte === 13) {
        bytes = bytes.subarray(0, bytes.length - 1);
      }
      // Redact before cutting, so a cut never leaves part of a secret behind.
      let text = options.redactor.redact(decoder.decode(bytes));
      if (lineBytes < 0) {
        text = `${text.slice(0, lineChars)} [… line cut: it has more than ${
          formatBytes(maxBytes)
        }; the first ${lineChars} characters are shown]`;
        cutLines++;
      } else if (lineBytes > keepBytes || text.length > lineChars) {
        text = `${
          text.slice(0, lineChars)
        } [… line cut: it has ${lineBytes} bytes; the first ${lineChars} characters are shown]`;
        cutLines++;
      }
      const size = utf8Length(text) + 1;
      if (outBytes + size > maxBytes && lines.length > 0) {
        stoppedByCap = true;
        return false;
      }
      outBytes += size;
      lines.push(numberLine(lineNo, text));
    }
    lineNo++;
    lineBytes = 0;
    kept = [];
    keptBytes = 0;
    return true;
  };

  try {
    outer: while (true) {
      const { value: chunk, done: ended } = await reader.read();
      if (ended) {
        done = true;
        break;
      }
      if (sniffed < SNIFF_BYTES) {
        const head = chunk.subarray(0, SNIFF_BYTES - sniffed);
        sniffed += head.length;
        if (head.includes(0)) {
          return binaryResult(options.given, options.size, options.publishable);
        }
      }
      let pos = 0;
      while (pos < chunk.length) {
        if (lineNo > last) {
          more = true;
          break outer;
        }
        const newline = chunk.indexOf(10, pos);
        const end = newline < 0 ? chunk.length : newline;
        if (lineNo >= offset) {
          if (keptBytes < keepBytes && end > pos) {
            const take = chunk.subarray(
              pos,
              Math.min(end, pos + keepBytes + 1 - keptBytes),
            );
            kept.push(take.slice());
            keptBytes += take.length;
          }
        }
        if (end > pos) lastByte = chunk[end - 1]!;
        lineBytes += end - pos;
        if (lineBytes > maxBytes) {
          // One line longer than a whole read: finding its end could mean
          // reading the file to its end (a 1 TiB file without a newline).
          longLine = lineNo;
          break outer;
        }
        if (newline < 0) break;
        pos = newline + 1;
        if (!finishLine()) {
          more = true;
          break outer;
        }
      }
    }
    if (done && lineBytes > 0) {
      // The last line has no line end.
      if (!finishLine()) more = true;
    }
    if (longLine > 0 && lineNo >= offset && lineNo <= last) {
      // Shown cut, its length unknown; nothing after it can be reached.
      lineBytes = -1;
      finishLine();
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }

  const total = lineNo - 1;
  const beyond = longLine > 0
    ? `line ${longLine} is longer than the ${
      formatBytes(maxBytes)
    } limit of one read, so read cannot find where it ends; inspect the file with bash (e.g. head -c, tail -c, cut -c)`
    : "";
  if (longLine > 0 && lines.length === 0) {
    return errorResult(
      `Cannot read ${
        JSON.stringify(options.given)
      } from line ${offset}: ${beyond}`,
    );
  }
  if (lines.length === 0) {
    return errorResult(
      `Cannot read ${
        JSON.stringify(options.given)
      } from line ${offset}: the file has only ${total} line${
        total === 1 ? "" : "s"
      }`,
    );
  }
  const first = offset;
  const lastShown = offset + lines.length - 1;
  const range = longLine > 0
    ? `lines ${first}-${lastShown}`
    : more
    ? `lines ${first}-${lastShown}; more follow`
    : `lines ${first}-${lastShown} of ${total}`;
  const parts = [`File: ${options.path} (${range})`, ...lines];
  if (cutLines > 0) {
    parts.push(
      `[${cutLines} line${
        cutLines === 1 ? " was" : "s were"
      } longer than ${lineChars} characters and cut]`,
    );
  }
  if (longLine > 0) {
    parts.push(`[Stopped: ${beyond}]`);
  } else if (stoppedByCap) {
    parts.push(
      `[Output reached the ${
        formatBytes(maxBytes)
      } limit of one read; continue with offset=${lastShown + 1}]`,
    );
  } else if (more) {
    parts.push(`[More lines follow; continue with offset=${lastShown + 1}]`);
  }
  return okResult(parts.join("\n"));
}

function concat(parts: readonly Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
