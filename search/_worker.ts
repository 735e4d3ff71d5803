/**
 * The fallback engine's worker: lists folders and reads files (local mode),
 * matches file contents. It runs off the main thread so that a pathological
 * pattern can be stopped by terminating the worker.
 *
 * The worker's code is made from these functions' source into a `blob:` URL,
 * so that starting it needs no read permission for this module's files (a
 * runtime under `--allow-read=<workspace>` can still search).
 *
 * @module
 */
import { cutLine, matchText } from "./_match.ts";
import { BINARY_SNIFF_BYTES, isBinary } from "./rules.ts";
import type {
  FileOutcome,
  WorkerConfig,
  WorkerJob,
  WorkerReply,
} from "./_protocol.ts";

// Provided by the worker's source (see workerUrl), not imported there.
declare const self: {
  onmessage: ((event: MessageEvent<WorkerConfig | WorkerJob>) => void) | null;
  postMessage(message: WorkerReply): void;
};

/** The worker's body: self-contained but for matchText, cutLine and isBinary. */
function workerMain(): void {
  let config: WorkerConfig | null = null;
  let regex: RegExp | null = null;
  let globRegex: RegExp | null = null;
  let heavy = new Set<string>();
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let buffer = new Uint8Array(1 << 20);

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

  /** Reads a whole local file into the shared buffer; returns its bytes. */
  const readLocal = (path: string): Uint8Array | null => {
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(path);
    } catch {
      return null;
    }
    try {
      let length = 0;
      for (;;) {
        if (length === buffer.length) {
          const bigger = new Uint8Array(buffer.length * 2);
          bigger.set(buffer);
          buffer = bigger;
        }
        const n = file.readSync(buffer.subarray(length));
        if (n === null || n === 0) break;
        length += n;
      }
      return buffer.subarray(0, length);
    } catch {
      return null;
    } finally {
      file.close();
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
          : readLocal(join(c.root, file));
        if (bytes === null) continue;
        const outcome = matchBytes(file, bytes);
        if (outcome) outcomes.push(outcome);
      }
      return { id: job.id, dirs: [], files: [], outcomes };
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
      return { id: job.id, dirs, files, outcomes };
    }
    for (const file of files) {
      const bytes = readLocal(join(c.root, file));
      if (bytes === null) continue;
      const outcome = matchBytes(file, bytes);
      if (outcome) outcomes.push(outcome);
    }
    return { id: job.id, dirs, files: [], outcomes };
  };

  self.onmessage = (event): void => {
    const data = event.data;
    if (data.kind === "grep" || data.kind === "glob") {
      config = data;
      heavy = new Set(data.filters.heavy);
      const glob = data.filters.glob;
      globRegex = glob ? new RegExp(glob.source, glob.flags) : null;
      regex = data.kind === "grep"
        ? new RegExp(data.source, `${data.flags}g`)
        : null;
      return;
    }
    try {
      self.postMessage(handle(data));
    } catch (error) {
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

let url: string | null = null;

/**
 * The `blob:` URL of the worker's code (made once).
 *
 * @returns The URL.
 */
export function workerUrl(): string {
  url ??= URL.createObjectURL(
    new Blob([
      `const BINARY_SNIFF_BYTES = ${BINARY_SNIFF_BYTES};\n`,
      `${isBinary.toString()}\n`,
      `${cutLine.toString()}\n`,
      `${matchText.toString()}\n`,
      `(${workerMain.toString()})();\n`,
    ], { type: "text/javascript" }),
  );
  return url;
}
