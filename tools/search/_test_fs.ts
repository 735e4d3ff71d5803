/**
 * A minimal {@linkcode SkillRuntimeFileSystem} over `Deno.*` for the search
 * tests and benchmark (until the runtime's own local file system is used).
 *
 * @module
 */
import type {
  DownloadResult,
  FileInfo,
  FileType,
  ListOptions,
  ListResult,
  ReadTextOptions,
  SignalOptions,
  SkillRuntimeFileSystem,
} from "../../runtimes/types.ts";
import { hostPath } from "../../_internal/std.ts";

function typeOf(info: Deno.FileInfo): FileType {
  return info.isSymlink
    ? "symlink"
    : info.isDirectory
    ? "directory"
    : info.isFile
    ? "file"
    : "other";
}

function infoOf(path: string, info: Deno.FileInfo): FileInfo {
  return {
    path,
    name: hostPath.basename(path),
    type: typeOf(info),
    size: info.size,
    modifiedAt: info.mtime,
  };
}

/**
 * Makes a file system over local paths; relative paths resolve against `cwd`.
 *
 * @param cwd The default working folder. Default `Deno.cwd()`.
 * @returns The file system.
 */
export function createTestFileSystem(cwd?: string): SkillRuntimeFileSystem {
  const base = cwd ?? Deno.cwd();
  return {
    resolve(path: string): Promise<string> {
      return Promise.resolve(hostPath.resolve(base, path));
    },
    async readText(path: string, options: ReadTextOptions): Promise<string> {
      const bytes = await Deno.readFile(path);
      if (bytes.length > options.maxBytes) {
        throw new RangeError(`Cannot read "${path}": file is too large`);
      }
      return new TextDecoder().decode(bytes);
    },
    async readBytes(
      path: string,
      options?: SignalOptions & { maxBytes?: number },
    ): Promise<Uint8Array> {
      const bytes = await Deno.readFile(path);
      if (options?.maxBytes !== undefined && bytes.length > options.maxBytes) {
        throw new RangeError(`Cannot read "${path}": file is too large`);
      }
      return bytes;
    },
    async writeText(path: string, content: string): Promise<void> {
      await Deno.mkdir(hostPath.dirname(path), { recursive: true });
      await Deno.writeTextFile(path, content);
    },
    async stat(path: string): Promise<FileInfo | null> {
      try {
        return infoOf(path, await Deno.lstat(path));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return null;
        throw error;
      }
    },
    async list(path: string, options?: ListOptions): Promise<ListResult> {
      const depth = options?.depth ?? 1;
      const limit = options?.limit ?? 1000;
      const entries: FileInfo[] = [];
      let truncated = false;
      const visit = async (dir: string, level: number): Promise<void> => {
        const names: string[] = [];
        for await (const entry of Deno.readDir(dir)) names.push(entry.name);
        names.sort();
        for (const name of names) {
          if (entries.length >= limit) {
            truncated = true;
            return;
          }
          const full = hostPath.join(dir, name);
          const info = infoOf(full, await Deno.lstat(full));
          if (!(options?.filesOnly && info.type === "directory")) {
            entries.push(info);
          }
          if (info.type === "directory" && level < depth) {
            await visit(full, level + 1);
          }
        }
      };
      await visit(path, 1);
      return { entries, truncated };
    },
    async readStream(path: string): Promise<ReadableStream<Uint8Array>> {
      return (await Deno.open(path)).readable;
    },
    async download(path: string, localPath: string): Promise<DownloadResult> {
      await Deno.copyFile(path, localPath);
      return { localPath, bytes: (await Deno.stat(localPath)).size };
    },
  };
}
