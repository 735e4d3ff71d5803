/**
 * A `find` listing taken in the sandbox, served as a file system to the
 * fallback engine by `ShellSearch` (`shell.ts`): listings come from the
 * snapshot, reads are batched into few commands.
 *
 * @module
 */
import { tooLargeError } from "../_internal/format.ts";
import type { SearchRoot } from "./_plan.ts";
import type {
  SearchFileInfo,
  SearchFileSystem,
  SearchListOptions,
} from "./types.ts";

/** The longest command line sent at once (Linux caps one argument at 128 KiB). */
const MAX_COMMAND_CHARS = 64 * 1024;
/** The most bytes of files read by one command of the `find` engine. */
const READ_BATCH_BYTES = 4 * 1024 * 1024;

/** A `find` listing served as a file system; reads batched into few commands. */
export class SnapshotFileSystem implements SearchFileSystem {
  readonly #base: SearchFileSystem;
  readonly #root: SearchRoot;
  readonly #dirs: Map<string, SearchFileInfo[]>;
  readonly #resolved: Map<string, string>;
  readonly #read: (
    paths: readonly string[],
    signal: AbortSignal | undefined,
  ) => Promise<(Uint8Array | null)[]>;
  #sizes: Map<string, number> | null = null;
  #pending: {
    path: string;
    signal: AbortSignal | undefined;
    resolve: (bytes: Uint8Array) => void;
    reject: (error: unknown) => void;
  }[] = [];
  #scheduled = false;

  constructor(
    base: SearchFileSystem,
    root: SearchRoot,
    dirs: Map<string, SearchFileInfo[]>,
    resolved: Map<string, string>,
    read: (
      paths: readonly string[],
      signal: AbortSignal | undefined,
    ) => Promise<(Uint8Array | null)[]>,
  ) {
    this.#base = base;
    this.#root = root;
    this.#dirs = dirs;
    this.#resolved = resolved;
    this.#read = read;
  }

  #relative(path: string): string | null {
    if (path === this.#root.path) return "";
    const prefix = this.#root.path.endsWith("/")
      ? this.#root.path
      : `${this.#root.path}/`;
    return path.startsWith(prefix) ? path.slice(prefix.length) : null;
  }

  resolve(path: string): Promise<string> {
    const known = this.#resolved.get(path);
    return known !== undefined
      ? Promise.resolve(known)
      : this.#base.resolve(path);
  }

  stat(
    path: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<SearchFileInfo | null> {
    const rel = this.#relative(path);
    if (rel === "") {
      const name = path.slice(path.lastIndexOf("/") + 1);
      return Promise.resolve({
        path,
        name,
        type: this.#root.isFile ? "file" : "directory",
        size: 0,
        modifiedAt: null,
      });
    }
    return this.#base.stat(path, options);
  }

  list(
    path: string,
    _options?: SearchListOptions,
  ): Promise<{ entries: readonly SearchFileInfo[]; truncated: boolean }> {
    const rel = this.#relative(path);
    const entries = rel === null ? undefined : this.#dirs.get(rel);
    if (!entries) {
      return Promise.reject(
        new Deno.errors.NotFound(`Cannot list "${path}": not in the listing`),
      );
    }
    return Promise.resolve({ entries, truncated: false });
  }

  readBytes(
    path: string,
    options?: { readonly signal?: AbortSignal; readonly maxBytes?: number },
  ): Promise<Uint8Array> {
    // A file over the caller's limit is refused from the listing's size,
    // never fetched.
    const maxBytes = options?.maxBytes;
    if (maxBytes !== undefined && this.#size(path) > maxBytes) {
      return Promise.reject(tooLargeError(path, maxBytes));
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ path, signal: options?.signal, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setTimeout(() => this.#flush(), 0);
      }
    });
  }

  #size(path: string): number {
    if (this.#sizes === null) {
      this.#sizes = new Map();
      for (const entries of this.#dirs.values()) {
        for (const entry of entries) this.#sizes.set(entry.path, entry.size);
      }
    }
    return this.#sizes.get(path) ?? 0;
  }

  #flush(): void {
    this.#scheduled = false;
    const pending = this.#pending;
    this.#pending = [];
    let index = 0;
    while (index < pending.length) {
      const batch = takeBatch(
        pending,
        index,
        (p) => p.path.length + 4,
        (p) => this.#size(p.path),
      );
      index += batch.length;
      this.#read(batch.map((p) => p.path), batch[0]!.signal).then(
        (contents) => {
          batch.forEach((p, i) => {
            const bytes = contents[i];
            if (bytes) p.resolve(bytes);
            else {
              p.reject(
                new Deno.errors.NotFound(`Cannot read "${p.path}"`),
              );
            }
          });
        },
        (error) => batch.forEach((p) => p.reject(error)),
      );
    }
  }
}

/** Items from `start` whose quoted size stays under one command line. */
export function takeBatch<T>(
  items: readonly T[],
  start: number,
  chars: (item: T) => number,
  bytes?: (item: T) => number,
): T[] {
  const batch: T[] = [];
  let total = 0;
  let read = 0;
  for (let i = start; i < items.length; i++) {
    const item = items[i]!;
    const size = chars(item) + 4;
    const weight = bytes ? bytes(item) : 0;
    if (
      batch.length > 0 &&
      (total + size > MAX_COMMAND_CHARS || read + weight > READ_BATCH_BYTES)
    ) break;
    batch.push(item);
    total += size;
    read += weight;
  }
  return batch;
}
