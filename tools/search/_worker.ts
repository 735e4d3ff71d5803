/**
 * The fallback engine's worker: lists folders and reads files (local mode),
 * matches file contents. Runs off the main thread so that a pathological
 * pattern can be stopped by terminating the worker.
 *
 * @module
 */
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { makeFilters, type WalkFilters } from "./_filter.ts";
import { matchText } from "./_match.ts";
import { isBinary } from "./rules.ts";
import type {
  FileOutcome,
  WorkerConfig,
  WorkerJob,
  WorkerReply,
} from "./_protocol.ts";

let config: WorkerConfig | null = null;
let regex: RegExp | null = null;
let filters: WalkFilters | null = null;
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
let buffer = new Uint8Array(1 << 20);

/** Reads a whole local file into the shared buffer; returns its bytes. */
function readLocal(path: string): Uint8Array | null {
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
}

function matchBytes(
  relativePath: string,
  bytes: Uint8Array,
): FileOutcome | null {
  if (isBinary(bytes)) return null;
  const c = config!;
  if (c.kind !== "grep") return null;
  const text = decoder.decode(bytes);
  const found = matchText(text, regex!, {
    multiline: c.multiline,
    mode: c.mode,
    before: c.before,
    after: c.after,
    maxLineChars: c.maxLineChars,
    maxLines: c.maxLinesPerFile,
  });
  if (!found) return null;
  return { path: relativePath, count: found.count, lines: found.lines };
}

function join(root: string, relativePath: string): string {
  if (relativePath === "") return root;
  return root.endsWith("/") ? root + relativePath : `${root}/${relativePath}`;
}

function handle(job: WorkerJob): WorkerReply {
  const c = config!;
  if (job.kind === "dir") {
    const dirs: string[] = [];
    const files: string[] = [];
    const outcomes: FileOutcome[] = [];
    const prefix = job.path === "" ? "" : `${job.path}/`;
    try {
      for (const entry of Deno.readDirSync(join(c.root, job.path))) {
        const relativePath = prefix + entry.name;
        if (entry.isDirectory) {
          if (filters!.descend(relativePath, entry.name)) {
            dirs.push(relativePath);
          }
        } else if (entry.isFile) {
          if (filters!.include(relativePath, entry.name)) {
            files.push(relativePath);
          }
        }
      }
    } catch {
      // Unreadable folder: skipped, as ripgrep does.
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
    if (files.length <= c.inlineFiles) {
      for (const file of files) {
        const bytes = readLocal(join(c.root, file));
        if (bytes === null) continue;
        const outcome = matchBytes(file, bytes);
        if (outcome) outcomes.push(outcome);
      }
      return { id: job.id, dirs, files: [], outcomes };
    }
    return { id: job.id, dirs, files, outcomes };
  }
  const outcomes: FileOutcome[] = [];
  for (let i = 0; i < job.files.length; i++) {
    const file = job.files[i]!;
    const bytes = job.bytes?.[i] ?? readLocal(join(c.root, file));
    if (bytes === null) continue;
    const outcome = matchBytes(file, bytes);
    if (outcome) outcomes.push(outcome);
  }
  return { id: job.id, dirs: [], files: [], outcomes };
}

self.onmessage = (event: MessageEvent<WorkerConfig | WorkerJob>): void => {
  const data = event.data;
  if (data.kind === "grep" || data.kind === "glob") {
    config = data;
    filters = makeFilters(data.filters);
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
      error: error instanceof Error ? error.message : String(error),
    });
  }
};
