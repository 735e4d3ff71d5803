/**
 * The fallback engine's worker: lists folders and reads files (local mode),
 * matches file contents. It runs off the main thread so that a pathological
 * pattern can be stopped by terminating the worker.
 *
 * The same code runs in two hosts. In a child Deno process (see
 * {@linkcode workerProcessSource}) it matches with V8's `RegExp` (fast) and
 * can be killed. In a `Worker` ({@linkcode workerUrl}: without the permission
 * to start a process, and over a file system interface) it matches with the
 * linear-time matcher of `_linear.ts`, which never backtracks and checks a
 * stop flag shared with the pool: `Worker.terminate()` alone stops neither a
 * worker busy in a regular expression nor one in a JavaScript loop (measured
 * with Deno 2.9.6: the core kept burning after it). Either way the code is made from these
 * functions' source, so that starting it needs no read permission for this
 * module's files (a runtime under `--allow-read=<workspace>` can still
 * search).
 *
 * Only entries the walk saw as regular files are opened, and the opened handle
 * is checked again: a pipe, a device or a socket is never read, a file over
 * the size limit is never read whole; both are reported as skipped. In a
 * Worker files are opened without blocking (`node:fs`, `O_NONBLOCK`); in a
 * process with `Deno` calls (half the start-up CPU), where a pipe swapped in
 * between the walk and the open can only hold the process until it is killed
 * at the time limit.
 *
 * @module
 */
import { cutLine, matchText, type TextMatcher } from "./_match.ts";
import { compileLinear } from "./_linear.ts";
import { BINARY_SNIFF_BYTES, isBinary } from "./rules.ts";
import type {
  FileOutcome,
  WorkerConfig,
  WorkerJob,
  WorkerReply,
  WorkerSkip,
} from "./_protocol.ts";

/** The part of `node:fs` the worker uses. */
interface WorkerFs {
  readonly constants: {
    readonly O_RDONLY: number;
    readonly O_NONBLOCK?: number;
    readonly O_NOCTTY?: number;
  };
  openSync(path: string, flags: number): number;
  fstatSync(fd: number): { isFile(): boolean; size: number };
  readSync(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: null,
  ): number;
  closeSync(fd: number): void;
}

// Provided by the worker's source (see workerUrl), not imported there.
declare const self: {
  onmessage: ((event: MessageEvent<WorkerConfig | WorkerJob>) => void) | null;
  postMessage(message: WorkerReply): void;
};

/**
 * The worker's body: self-contained but for matchText, cutLine, isBinary and
 * (when `linear`) compileLinear.
 */
function workerMain(fs: WorkerFs, linear: boolean): void {
  let config: WorkerConfig | null = null;
  let regex: TextMatcher | null = null;
  let globRegex: RegExp | null = null;
  let heavy = new Set<string>();
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let buffer = new Uint8Array(1 << 20);
  const flags = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) |
    (fs.constants.O_NOCTTY ?? 0);
  let skipped: WorkerSkip[] = [];

  const join = (root: string, relativePath: string): string => {
    if (relativePath === "") return root;
    return root.endsWith("/") ? root + relativePath : `${root}/${relativePath}`;
  };

  const descend = (relativePath: string, name: string): boolean => {
    if (heavy.has(name)) return false;
    const glob = config!.filters.glob;
    if (glob && glob.negated && globRegex!.test(relativePath)) return false;
    return true;
  };

  const include = (relativePath: string, name: string): boolean => {
    const { glob, suffixes } = config!.filters;
    if (glob) {
      const matched = !glob.dirOnly && globRegex!.test(relativePath);
      if (glob.negated ? matched : !matched) return false;
    }
    if (suffixes && !suffixes.some((s) => name.endsWith(s))) return false;
    return true;
  };

  /**
   * Reads a whole local file into the shared buffer; returns its bytes, or
   * `null` when it is unreadable or skipped (recorded in `skipped`).
   */
  const readLocal = (path: string, relativePath: string): Uint8Array | null => {
    const max = config!.kind === "grep" ? config!.maxFileBytes : Infinity;
    let fd: number;
    try {
      // Never blocks (a pipe opens at once); the opened file is checked.
      fd = fs.openSync(path, flags);
    } catch {
      return null;
    }
    try {
      const info = fs.fstatSync(fd);
      if (!info.isFile()) {
        skipped.push({ path: relativePath, reason: "not-regular" });
        return null;
      }
      if (info.size > max) {
        skipped.push({
          path: relativePath,
          reason: "too-large",
          size: info.size,
        });
        return null;
      }
      let length = 0;
      for (;;) {
        if (length === buffer.length) {
          if (length > max) {
            skipped.push({
              path: relativePath,
              reason: "too-large",
              size: length,
            });
            return null;
          }
          const bigger = new Uint8Array(buffer.length * 2);
          bigger.set(buffer);
          buffer = bigger;
        }
        const n = fs.readSync(fd, buffer, length, buffer.length - length, null);
        if (n === 0) break;
        length += n;
      }
      if (length > max) {
        skipped.push({ path: relativePath, reason: "too-large", size: length });
        return null;
      }
      return buffer.subarray(0, length);
    } catch {
      return null;
    } finally {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    }
  };

  const matchBytes = (
    relativePath: string,
    bytes: Uint8Array,
  ): FileOutcome | null => {
    const c = config!;
    if (c.kind !== "grep" || isBinary(bytes)) return null;
    const found = matchText(decoder.decode(bytes), regex!, {
      multiline: c.multiline,
      mode: c.mode,
      before: c.before,
      after: c.after,
      maxLineChars: c.maxLineChars,
      maxLines: c.maxLinesPerFile,
    });
    if (!found) return null;
    return { path: relativePath, count: found.count, lines: found.lines };
  };

  const handle = (job: WorkerJob): WorkerReply => {
    const c = config!;
    const outcomes: FileOutcome[] = [];
    if (job.kind === "files") {
      for (let i = 0; i < job.files.length; i++) {
        const file = job.files[i]!;
        const bytes = job.bytes
          ? job.bytes[i] ?? null
          : readLocal(join(c.root, file), file);
        if (bytes === null) continue;
        const outcome = matchBytes(file, bytes);
        if (outcome) outcomes.push(outcome);
      }
      return { id: job.id, dirs: [], files: [], outcomes, skipped: take() };
    }
    const dirs: string[] = [];
    const files: string[] = [];
    const prefix = job.path === "" ? "" : `${job.path}/`;
    try {
      for (const entry of Deno.readDirSync(join(c.root, job.path))) {
        const relativePath = prefix + entry.name;
        if (entry.isDirectory) {
          if (descend(relativePath, entry.name)) dirs.push(relativePath);
        } else if (entry.isFile && include(relativePath, entry.name)) {
          files.push(relativePath);
        } else if (
          c.kind === "grep" && !entry.isFile && !entry.isSymlink &&
          include(relativePath, entry.name)
        ) {
          // A pipe, a device or a socket: never opened, said in the result.
          skipped.push({ path: relativePath, reason: "not-regular" });
        }
      }
    } catch {
      // An unreadable folder is skipped, as ripgrep does.
    }
    if (c.kind === "glob") {
      for (const file of files) {
        try {
          const info = Deno.statSync(join(c.root, file));
          outcomes.push({
            path: file,
            count: 0,
            lines: [],
            modifiedMs: info.mtime?.getTime() ?? null,
          });
        } catch {
          // Vanished: skipped.
        }
      }
      return { id: job.id, dirs, files: [], outcomes };
    }
    if (files.length > c.inlineFiles) {
      return { id: job.id, dirs, files, outcomes, skipped: take() };
    }
    for (const file of files) {
      const bytes = readLocal(join(c.root, file), file);
      if (bytes === null) continue;
      const outcome = matchBytes(file, bytes);
      if (outcome) outcomes.push(outcome);
    }
    return { id: job.id, dirs, files: [], outcomes, skipped: take() };
  };

  const take = (): WorkerSkip[] => {
    const taken = skipped;
    skipped = [];
    return taken;
  };

  self.onmessage = (event): void => {
    const data = event.data;
    if (data.kind === "grep" || data.kind === "glob") {
      config = data;
      heavy = new Set(data.filters.heavy);
      const glob = data.filters.glob;
      globRegex = glob ? new RegExp(glob.source, glob.flags) : null;
      regex = data.kind !== "grep" ? null : linear
        ? compileLinear(
          data.source,
          `${data.flags}g`,
          data.stop ? { stop: data.stop } : {},
        )
        : new RegExp(data.source, `${data.flags}g`);
      return;
    }
    try {
      self.postMessage(handle(data));
    } catch (error) {
      skipped = [];
      self.postMessage({
        id: data.id,
        dirs: [],
        files: [],
        outcomes: [],
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };
}

/** The worker's code, without its host (a `Worker` or a process). */
function workerCode(): string {
  return [
    `const BINARY_SNIFF_BYTES = ${BINARY_SNIFF_BYTES};\n`,
    `${isBinary.toString()}\n`,
    `${cutLine.toString()}\n`,
    `${matchText.toString()}\n`,
  ].join("");
}

let url: string | null = null;

/**
 * The `blob:` URL of the worker's code for a `Worker` (made once).
 *
 * @returns The URL.
 */
export function workerUrl(): string {
  url ??= URL.createObjectURL(
    new Blob([
      `import __fs from "node:fs";\n`,
      workerCode(),
      `${compileLinear.toString()}\n`,
      `(${workerMain.toString()})(__fs, true);\n`,
    ], { type: "text/javascript" }),
  );
  return url;
}

/**
 * The code of a child process that runs the worker: messages come on stdin
 * and replies go to stdout, one JSON text per line; a job's bytes (remote
 * mode) travel as base64.
 */
function processHost(): void {
  const encoder = new TextEncoder();
  const host = {
    onmessage: null as ((event: { data: unknown }) => void) | null,
    postMessage(message: unknown): void {
      const bytes = encoder.encode(`${JSON.stringify(message)}\n`);
      for (let offset = 0; offset < bytes.length;) {
        offset += Deno.stdout.writeSync(bytes.subarray(offset));
      }
    },
  };
  (globalThis as unknown as { __host: typeof host }).__host = host;
  (async () => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of Deno.stdin.readable) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const data = JSON.parse(line);
        if (Array.isArray(data.bytes64)) {
          data.bytes = data.bytes64.map((b: string | null) =>
            b === null ? null : Uint8Array.from(atob(b), (c) => c.charCodeAt(0))
          );
          delete data.bytes64;
        }
        host.onmessage?.({ data });
      }
    }
    Deno.exit(0);
  })();
}

/**
 * The worker's file calls over `Deno` in a child process: `node:fs` costs the
 * child's start twice the CPU. An open there may block on a pipe swapped in
 * after the walk saw a file; the process is killed at the time limit.
 */
function denoFs(): WorkerFs {
  const files = new Map<number, Deno.FsFile>();
  let next = 3;
  const file = (fd: number): Deno.FsFile => {
    const found = files.get(fd);
    if (!found) throw new Error(`bad file descriptor ${fd}`);
    return found;
  };
  return {
    constants: { O_RDONLY: 0 },
    openSync(path: string): number {
      const fd = next++;
      files.set(fd, Deno.openSync(path));
      return fd;
    },
    fstatSync(fd: number) {
      const info = file(fd).statSync();
      return { isFile: () => info.isFile, size: info.size };
    },
    readSync(fd, buffer, offset, length) {
      return file(fd).readSync(buffer.subarray(offset, offset + length)) ?? 0;
    },
    closeSync(fd: number): void {
      files.get(fd)?.close();
      files.delete(fd);
    },
  };
}

let processSource: string | null = null;

/**
 * The source of the worker as the main module of a child Deno process (made
 * once): `self` is a host that speaks JSON lines over stdin and stdout.
 *
 * @returns The JavaScript source.
 */
export function workerProcessSource(): string {
  processSource ??= [
    `const __fs = (${denoFs.toString()})();\n`,
    `(${processHost.toString()})();\n`,
    `const self = globalThis.__host;\n`,
    workerCode(),
    `(${workerMain.toString()})(__fs, false);\n`,
  ].join("");
  return processSource;
}
