/**
 * The walk and matching of the shell engine without rg (its `find` listing)
 * and of the engine over the file-system interface alone: folders listed a
 * level at a time, files read a batch at a time in path order and matched
 * with `re2js` (linear time: no pattern runs away). The time limit and the
 * caller's signal stop it between batches, and `re2js` between 64 KiB
 * windows of lines.
 *
 * @module
 */
import { findNames, makeFilters } from "./_filter.ts";
import { matchText } from "./_match.ts";
import {
  type GlobPlan,
  GrepCollector,
  type GrepPlan,
  num,
  planGrep,
  resolveFolder,
  runSearch,
  type SearchRoot,
  type SearchSlots,
} from "./_plan.ts";
import { comparePaths, HEAVY_FOLDERS, isBinary, joinPath } from "./rules.ts";
import {
  DEFAULT_LS_LIMIT,
  DEFAULT_SEARCH_TIMEOUT_MS,
  type FileType,
  type GlobFile,
  type GlobResult,
  type GrepRequest,
  type GrepResult,
  type LsRequest,
  type LsResult,
  type SearchEngineName,
  type SearchFileSystem,
  type SkipReason,
} from "./types.ts";

/** One listed path, relative to the search root (`""` for a root file). */
export interface Listed {
  readonly path: string;
  readonly name: string;
  readonly type: FileType;
  readonly size: number;
  readonly modifiedMs: number | null;
}

/** Lists one folder (relative to the root). */
export type ListFolder = (folder: string) => Promise<readonly Listed[]>;

/** Reads files (relative to the root): bytes, why one is left out, or `null` to ignore it. */
export type ReadFiles = (
  paths: readonly string[],
) => Promise<(Uint8Array | SkipReason | null)[]>;

/** How an engine lists folders and reads files. */
export interface FileSource {
  /** Folders listed at once. */
  readonly workers: number;
  /** The most files read in one batch. */
  readonly batchFiles: number;
  /** Lists the root's folders to `depth`; `names` may narrow the files (`find -name`). */
  listing(
    root: SearchRoot,
    depth: number,
    signal: AbortSignal,
    timeoutMs: number,
    names: readonly string[] | null,
  ): Promise<ListFolder>;
  /** The files (relative) that can match, or `null` for all. */
  candidates?(plan: GrepPlan, signal: AbortSignal): Promise<Set<string> | null>;
  /** Reads a search's files. */
  read(plan: GrepPlan, signal: AbortSignal): ReadFiles;
}

/** Greps through a file source: the listing (and the candidates, at once) walked. */
export async function grepFiles(
  fs: SearchFileSystem,
  request: GrepRequest,
  local: boolean,
  slots: SearchSlots,
  source: FileSource,
): Promise<GrepResult> {
  const plan = await planGrep(fs, request, local);
  const root = plan.root;
  const what = `Search for "${plan.regex.pattern}"`;
  return await runSearch(plan, what, slots, async (signal, stop) => {
    let files: Listed[] = [
      { path: "", name: "", type: "file", size: root.size, modifiedMs: null },
    ];
    if (!root.isFile) {
      const only = source.candidates?.(plan, signal) ?? null;
      only?.catch(() => {}); // awaited after the listing
      files = await walkFiles(source, plan, signal);
      const kept = await only;
      if (kept) {
        files = files.filter((f) => f.type !== "file" || kept.has(f.path));
      }
    }
    const read = source.read(plan, signal);
    // Too large or not regular files reported; the rest read a batch at a
    // time in path order (the next batch read while one is matched) until
    // the collector wants no more.
    const collector = new GrepCollector(plan);
    const wanted: Listed[] = [];
    for (const file of files) {
      if (file.type === "other") collector.skip(file.path, "not-regular");
      else if (file.size > plan.maxFileBytes) {
        collector.skip(file.path, "too-large", file.size);
      } else wanted.push(file);
    }
    let start = 0;
    const readNext = () => {
      const batch = takeBatch(
        wanted,
        start,
        (f) => plan.root.path.length + f.path.length + 4,
        (f) => f.size,
        source.batchFiles,
      ).map((f) => f.path);
      start += batch.length;
      if (batch.length === 0) return null;
      const reading = read(batch).then((bytes) => ({ batch, bytes }));
      reading.catch(() => {}); // awaited below, or abandoned once done
      return reading;
    };
    for (let next = readNext(); next !== null;) {
      const { batch, bytes } = await next;
      next = readNext();
      for (let i = 0; i < batch.length; i++) {
        const got = bytes[i];
        if (typeof got === "string") collector.skip(batch[i]!, got);
        if (!(got instanceof Uint8Array) || isBinary(got)) continue;
        const text = decoder.decode(got);
        const found = matchText(text, plan.regex.matcher(stop), plan);
        if (found && !collector.add({ path: batch[i]!, ...found })) {
          return collector.result("fallback");
        }
      }
    }
    return collector.result("fallback");
  });
}

/** Globs through a file source. */
export function globFiles(
  plan: GlobPlan,
  slots: SearchSlots,
  source: FileSource,
  engine: SearchEngineName,
): Promise<GlobResult> {
  const what = `Glob "${plan.filters.glob}"`;
  return runSearch(plan, what, slots, async (signal) => {
    const files = await walkFiles(source, plan, signal);
    return finishGlob(
      plan,
      files.filter((f) => f.type === "file").map((f) => ({
        path: joinPath(plan.root.path, f.path),
        modifiedMs: f.modifiedMs,
      })),
      engine,
    );
  });
}

/** The file source over the file-system interface: 8 files read per folder listed at once. */
export function fsSource(fs: SearchFileSystem, workers: number): FileSource {
  return {
    workers,
    batchFiles: workers * 8,
    listing: (root, _depth, signal) =>
      Promise.resolve(async (folder) =>
        (await fs.list(joinPath(root.path, folder), {
          depth: 1,
          limit: Number.MAX_SAFE_INTEGER,
          signal,
        })).entries.map((e) => ({
          path: folder === "" ? e.name : `${folder}/${e.name}`,
          name: e.name,
          type: e.type,
          size: e.size,
          modifiedMs: e.modifiedAt?.getTime() ?? null,
        }))
      ),
    read: (plan, signal) => readThrough(fs, plan, signal),
  };
}

/** Reads files through the file-system interface, refusing large ones. */
export function readThrough(
  fs: SearchFileSystem,
  plan: GrepPlan,
  signal: AbortSignal,
): ReadFiles {
  const maxBytes = plan.maxFileBytes;
  return (paths) =>
    Promise.all(
      paths.map((path) =>
        fs.readBytes(joinPath(plan.root.path, path), { signal, maxBytes })
          .catch((error): SkipReason | null => {
            if (signal.aborted) throw error;
            if (error instanceof RangeError) return "too-large";
            return error instanceof TypeError &&
                /regular file/.test(error.message)
              ? "not-regular"
              : null;
          })
      ),
    );
}

/**
 * Walks breadth first, each folder's entries by name (so that a limit keeps
 * the shallow ones), `workers` folders listed at once. A folder that cannot
 * be listed is left out, as ripgrep does (the root too, unless `strict`).
 */
async function walk(
  list: ListFolder,
  options: {
    readonly depth: number;
    readonly limit: number;
    readonly workers: number;
    readonly signal: AbortSignal | undefined;
    readonly strict: boolean;
    descend(path: string, name: string): boolean;
  },
): Promise<{ entries: Listed[]; truncated: boolean }> {
  const entries: Listed[] = [];
  let level = [""];
  for (let depth = 1; depth <= options.depth && level.length > 0; depth++) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += options.workers) {
      options.signal?.throwIfAborted();
      const listed = await Promise.all(
        level.slice(i, i + options.workers).map((folder) =>
          list(folder).catch((error) => {
            if (options.signal?.aborted || (options.strict && folder === "")) {
              throw error;
            }
            return [];
          })
        ),
      );
      for (const folder of listed) {
        for (const entry of [...folder].sort(byName)) {
          if (entries.length >= options.limit) {
            return { entries, truncated: true };
          }
          entries.push(entry);
          if (
            entry.type === "directory" &&
            options.descend(entry.path, entry.name)
          ) next.push(entry.path);
        }
      }
    }
    level = next;
  }
  return { entries, truncated: false };
}

const byName = (a: Listed, b: Listed): number => comparePaths(a.name, b.name);
const byPath = (a: Listed, b: Listed): number => comparePaths(a.path, b.path);

/** Every file (not folder) the filters keep, in path order. */
async function walkFiles(
  source: FileSource,
  plan: GrepPlan | GlobPlan,
  signal: AbortSignal,
): Promise<Listed[]> {
  const names = findNames(plan.filters);
  const { timeoutMs, root } = plan;
  const filters = makeFilters(plan.filters);
  const { entries } = await walk(
    await source.listing(root, Infinity, signal, timeoutMs, names),
    {
      depth: Infinity,
      limit: Infinity,
      workers: source.workers,
      signal,
      strict: false,
      descend: filters.descend,
    },
  );
  return entries.filter((e) =>
    e.type !== "directory" && e.type !== "symlink" &&
    filters.include(e.path, e.name)
  ).sort(byPath);
}

/** The longest command line sent at once (Linux caps one argument at 128 KiB). */
const MAX_COMMAND_CHARS = 64 * 1024;
/** The most bytes of files read by one batch. */
const READ_BATCH_BYTES = 4 * 1024 * 1024;

/** Items from `start` whose quoted size stays under one command line. */
export function takeBatch<T>(
  items: readonly T[],
  start: number,
  chars: (item: T) => number,
  bytes: (item: T) => number = () => 0,
  maxItems = Infinity,
): T[] {
  const batch: T[] = [];
  let total = 0;
  let read = 0;
  for (let i = start; i < items.length && batch.length < maxItems; i++) {
    const size = chars(items[i]!) + 4;
    const weight = bytes(items[i]!);
    if (
      batch.length > 0 &&
      (total + size > MAX_COMMAND_CHARS || read + weight > READ_BATCH_BYTES)
    ) break;
    batch.push(items[i]!);
    total += size;
    read += weight;
  }
  return batch;
}

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Sorts found files newest first (then by path) and applies the limit. */
export function finishGlob(
  plan: { readonly root: SearchRoot; readonly limit: number },
  files: GlobFile[],
  engine: SearchEngineName,
): GlobResult {
  files.sort((a, b) =>
    (b.modifiedMs ?? -Infinity) - (a.modifiedMs ?? -Infinity) ||
    comparePaths(a.path, b.path)
  );
  return {
    path: plan.root.path,
    engine,
    files: files.slice(0, plan.limit),
    totalFiles: files.length,
    truncated: files.length > plan.limit,
  };
}

/**
 * Lists a folder to a depth, folders first, heavy folders below the root
 * shown but not descended into.
 */
export async function listFolder(
  fs: SearchFileSystem,
  request: LsRequest,
  local: boolean,
  listing: FileSource["listing"],
): Promise<LsResult> {
  const depth = num("depth", request.depth, 1);
  const limit = num("limit", request.limit, DEFAULT_LS_LIMIT);
  request.signal?.throwIfAborted();
  const root = await resolveFolder(fs, request.path, local, "list");
  return await runSearch(
    { timeoutMs: DEFAULT_SEARCH_TIMEOUT_MS, signal: request.signal },
    `List "${request.path ?? "."}"`,
    null,
    async (signal) => {
      const { entries, truncated } = await walk(
        await listing(root, depth, signal, DEFAULT_SEARCH_TIMEOUT_MS, null),
        {
          depth,
          limit,
          workers: 8,
          signal,
          strict: true,
          descend: (_path, name) => !HEAVY_FOLDERS.has(name),
        },
      );
      return {
        path: root.path,
        entries: entries.map((e) => ({
          path: e.path,
          type: e.type,
          size: e.size,
          skipped: e.type === "directory" && HEAVY_FOLDERS.has(e.name) &&
            e.path.split("/").length < depth,
        })).sort((a, b) =>
          Number(a.type !== "directory") - Number(b.type !== "directory") ||
          comparePaths(a.path, b.path)
        ),
        truncated,
      };
    },
  );
}
