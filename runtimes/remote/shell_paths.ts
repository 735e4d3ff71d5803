/**
 * File calls for a server whose file API cannot take some paths (execd
 * runs every path it receives through Go's `os.Expand`, so a path holding
 * `$` is refused or rewritten there; inside a quoted shell command it means
 * itself): {@linkcode withShellPaths} sends such paths through helper
 * commands and the others to the server's own calls.
 *
 * @module
 */
import { posix } from "../../_internal/std.ts";
import { shellQuote } from "./shell.ts";
import type { RemoteFileOps, RemoteUploadFile } from "./fs.ts";
import {
  inChunks,
  needsShellPath,
  PATHS_PER_COMMAND,
  runChecked,
  shellList,
  shellMakeDirectories,
  type ShellRunner,
  shellStat,
  shellStatMany,
} from "./shell_files.ts";

/** A server's file calls with the folder call a session may give. */
export interface ServerFileOps extends RemoteFileOps {
  /** Makes folders and their parents. */
  makeDirectories(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void>;
}

/**
 * The server's file calls, with every path `needsShell` picks done by
 * helper commands instead: stat and list by `stat`/`find`, folders by
 * `mkdir -p`, a read through a symlink of a path the server can take
 * (removed once the server has opened the file), and an upload to such a
 * temporary path, moved into place by one quoted command (a file without a
 * mode keeps the mode of the one it replaces, else gets 0644).
 *
 * @example Paths without a `$` reach the server's own calls
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { withShellPaths } from "./shell_paths.ts";
 * const seen: string[] = [];
 * const ops = withShellPaths({
 *   stat: (path) => (seen.push(path), Promise.resolve(null)),
 *   list: () => Promise.resolve([]),
 *   open: () => Promise.resolve(new Response("")),
 *   upload: () => Promise.resolve(),
 *   makeDirectories: () => Promise.resolve(),
 * }, () => Promise.reject(new Error("no shell")));
 * assertEquals(await ops.stat("/w/a.txt"), null);
 * assertEquals(seen, ["/w/a.txt"]);
 * ```
 *
 * @param ops The server's own calls.
 * @param shell Runs a helper command in the sandbox.
 * @param needsShell Whether the server cannot take a path. Default: it
 * holds a `$`.
 * @returns The calls.
 */
export function withShellPaths(
  ops: ServerFileOps,
  shell: ShellRunner,
  needsShell: (path: string) => boolean = needsShellPath,
): ServerFileOps {
  return {
    stat: (path, signal) =>
      needsShell(path)
        ? shellStat(shell, path, signal)
        : ops.stat(path, signal),
    statMany: (paths, signal) =>
      paths.some(needsShell)
        ? shellStatMany(shell, paths, signal)
        : ops.statMany
        ? ops.statMany(paths, signal)
        : Promise.all(paths.map((path) => ops.stat(path, signal))),
    list: (path, options) =>
      needsShell(path)
        ? shellList(shell, path, options.depth, options.signal)
        : ops.list(path, options),
    async open(path, options) {
      if (!needsShell(path)) return await ops.open(path, options);
      const alias = `/tmp/.skillrun-link-${crypto.randomUUID()}`;
      await runChecked(
        shell,
        `ln -sfn -- ${shellQuote(path)} ${shellQuote(alias)}`,
        `read "${path}"`,
        options.signal,
      );
      try {
        return await ops.open(alias, options);
      } finally {
        await shell(`rm -f -- ${shellQuote(alias)}`).catch(() => {});
      }
    },
    upload: (files, signal) =>
      uploadStaged(ops, shell, needsShell, files, signal),
    async makeDirectories(paths, signal) {
      await shellMakeDirectories(shell, paths.filter(needsShell), signal);
      const plain = paths.filter((path) => !needsShell(path));
      if (plain.length > 0) await ops.makeDirectories(plain, signal);
    },
  };
}

/** An upload whose files the server cannot take go through a staging folder. */
async function uploadStaged(
  ops: ServerFileOps,
  shell: ShellRunner,
  needsShell: (path: string) => boolean,
  files: readonly RemoteUploadFile[],
  signal?: AbortSignal,
): Promise<void> {
  const moves: { from: string; to: string; keepMode: boolean }[] = [];
  const staging = `/tmp/.skillrun-upload-${crypto.randomUUID()}`;
  const sent = files.map((file) => {
    if (!needsShell(file.remotePath)) return file;
    const from = `${staging}/${moves.length}`;
    moves.push({
      from,
      to: file.remotePath,
      keepMode: file.mode === undefined,
    });
    return { ...file, remotePath: from, mode: file.mode ?? 0o644 };
  });
  await ops.upload(sent, signal);
  if (moves.length === 0) return;
  try {
    for (const chunk of inChunks(moves, PATHS_PER_COMMAND)) {
      await runChecked(
        shell,
        chunk.map(({ from, to, keepMode }) => {
          const [f, t] = [shellQuote(from), shellQuote(to)];
          return `mkdir -p -- ${shellQuote(posix.dirname(to))} && ${
            keepMode
              ? `{ [ ! -f ${t} ] || chmod --reference=${t} -- ${f}; } && `
              : ""
          }mv -f -- ${f} ${t}`;
        }).join(" && "),
        `upload "${chunk[0]!.to}"`,
        signal,
      );
    }
  } finally {
    await shell(`rm -rf -- ${shellQuote(staging)}`).catch(() => {});
  }
}
