/**
 * File calls done by one quoted shell command inside the sandbox, for the
 * paths a server's own file API cannot take: execd runs every path it
 * receives through Go's `os.Expand`, so a path holding `$` (`Outer$Inner.class`,
 * `cost $5.txt`, `f$1.txt`) is refused or rewritten there; inside a command
 * quoted with `shellQuote` it means itself. Needs GNU `stat`, `find -printf`
 * and `chmod --reference` in the sandbox (as the in-sandbox search does).
 *
 * @module
 */
import { shellQuote } from "../../_internal/shell_quote.ts";
import { posix } from "../../_internal/std.ts";
import type { ExecuteResult, FileInfo, FileType } from "../types.ts";
import type { RemoteCommand } from "./runtime.ts";
import type { RemoteFileOps } from "./fs.ts";

/**
 * What a helper command gives back: its output, exit code and how it ended
 * (a whole `ExecuteResult` is one; a runner over a one-shot exec endpoint
 * needs no byte counts).
 */
export type ShellResult = Pick<
  ExecuteResult,
  "stdout" | "stderr" | "exitCode" | "timedOut" | "aborted"
>;

/** Runs one helper command in the sandbox (never retried). */
export type ShellRunner = (
  command: string,
  signal?: AbortSignal,
) => Promise<ShellResult>;

/**
 * Whether a path must go through a shell command on a server that expands
 * `$` in paths (execd): any path that holds a `$`.
 *
 * @param path The absolute remote path.
 * @returns Whether it holds a `$`.
 */
export function needsShellPath(path: string): boolean {
  return path.includes("$");
}

/** The separator of the fields of a `stat`/`find` line: no `%F` word holds it. */
const SEP = "|";

/**
 * Runs a helper command and checks it succeeded.
 *
 * @param run The runner.
 * @param command The command line (values quoted).
 * @param what What it does, for the error (`stat "/p"`).
 * @param signal Stops it.
 * @returns The result.
 * @throws {Error} The command failed or timed out.
 */
export async function runChecked(
  run: ShellRunner,
  command: string,
  what: string,
  signal?: AbortSignal,
): Promise<ShellResult> {
  const result = await run(command, signal);
  if (result.aborted) signal?.throwIfAborted();
  if (result.exitCode !== 0 || result.timedOut || result.aborted) {
    const reason = result.timedOut
      ? "the command timed out"
      : result.stderr.trim().slice(0, 500) || `exit code ${result.exitCode}`;
    throw new Error(`Cannot ${what}: ${reason}`);
  }
  return result;
}

/**
 * Facts about a path (symlinks not followed) by `stat`, or `null` when
 * nothing is there.
 *
 * @param run The runner.
 * @param path The absolute path.
 * @param signal Stops it.
 * @returns The facts.
 */
export async function shellStat(
  run: ShellRunner,
  path: string,
  signal?: AbortSignal,
): Promise<FileInfo | null> {
  const q = shellQuote(path);
  const result = await runChecked(
    run,
    `if [ -e ${q} ] || [ -L ${q} ]; then LC_ALL=C stat -c '%F${SEP}%s${SEP}%Y${SEP}%a' -- ${q}; else echo missing; fi`,
    `stat "${path}"`,
    signal,
  );
  return statLine(path, result.stdout.trim());
}

/**
 * Facts about several paths (symlinks not followed) by one `stat` command,
 * in their order, `null` for each missing one.
 *
 * @param run The runner.
 * @param paths The absolute paths.
 * @param signal Stops it.
 * @returns The facts.
 */
export async function shellStatMany(
  run: ShellRunner,
  paths: readonly string[],
  signal?: AbortSignal,
): Promise<(FileInfo | null)[]> {
  if (paths.length === 0) return [];
  const result = await runChecked(
    run,
    `for __p in ${
      paths.map(shellQuote).join(" ")
    }; do if [ -e "$__p" ] || [ -L "$__p" ]; then LC_ALL=C stat -c '%F${SEP}%s${SEP}%Y${SEP}%a' -- "$__p"; else echo missing; fi; done`,
    `stat "${paths[paths.length - 1]}"`,
    signal,
  );
  const lines = result.stdout.split("\n");
  return paths.map((path, i) => statLine(path, (lines[i] ?? "").trim()));
}

/**
 * The stat calls of a server without a stat endpoint: `stat` and
 * `statMany` by one quoted shell command each ({@linkcode shellStat},
 * {@linkcode shellStatMany}), and `statsByCommand` saying so.
 *
 * @param run The runner.
 * @returns The calls, for a kind's `RemoteFileOps`.
 */
export function shellStats(
  run: ShellRunner,
): Pick<RemoteFileOps, "stat" | "statMany" | "statsByCommand"> {
  return {
    stat: (path, signal) => shellStat(run, path, signal),
    statMany: (paths, signal) => shellStatMany(run, paths, signal),
    statsByCommand: true,
  };
}

/** One `stat -c` line (or `missing`) as facts. */
export function statLine(path: string, line: string): FileInfo | null {
  if (line === "missing") return null;
  const [kind, size, mtime, mode] = line.split(SEP);
  if (mode === undefined) {
    throw new Error(
      `Cannot stat "${path}": the sandbox answered ${
        JSON.stringify(line.slice(0, 200))
      }`,
    );
  }
  const type: FileType = kind === "directory"
    ? "directory"
    : kind === "symbolic link"
    ? "symlink"
    : kind!.startsWith("regular")
    ? "file"
    : "other";
  return {
    path,
    name: posix.basename(path),
    type,
    size: type === "file" ? Number(size) : 0,
    modifiedAt: new Date(Number(mtime) * 1000),
    executable: (parseInt(mode, 8) & 0o100) !== 0,
  };
}

/**
 * The entries below a folder down to `depth` levels (`find -printf`),
 * symlinks not followed.
 *
 * @param run The runner.
 * @param path The absolute folder.
 * @param depth How deep.
 * @param signal Stops it.
 * @returns The entries (paths absolute).
 * @throws {Deno.errors.NotFound} The folder is missing.
 * @throws {Deno.errors.NotADirectory} It is not a folder.
 */
export async function shellList(
  run: ShellRunner,
  path: string,
  depth: number,
  signal?: AbortSignal,
): Promise<FileInfo[]> {
  const q = shellQuote(path);
  const result = await runChecked(
    run,
    `if [ ! -e ${q} ]; then echo missing; elif [ -L ${q} ] || [ ! -d ${q} ]; then echo not-a-folder; else LC_ALL=C find ${q} -mindepth 1 -maxdepth ${
      Math.max(1, Math.floor(depth))
    } -printf '%y${SEP}%s${SEP}%T@${SEP}%m${SEP}%p\\0'; fi`,
    `list "${path}"`,
    signal,
  );
  const out = result.stdout;
  if (out.trim() === "missing") {
    throw new Deno.errors.NotFound(`Cannot list "${path}": no such folder`);
  }
  if (out.trim() === "not-a-folder") {
    throw new Deno.errors.NotADirectory(
      `Cannot list "${path}": it is not a folder`,
    );
  }
  const entries: FileInfo[] = [];
  for (const record of out.split("\0")) {
    const fields = record.split(SEP);
    if (fields.length < 5) continue;
    const [kind, size, mtime, mode] = fields;
    const entryPath = fields.slice(4).join(SEP);
    const type: FileType = kind === "d"
      ? "directory"
      : kind === "l"
      ? "symlink"
      : kind === "f"
      ? "file"
      : "other";
    entries.push({
      path: entryPath,
      name: posix.basename(entryPath),
      type,
      size: type === "file" ? Number(size) : 0,
      modifiedAt: new Date(Math.trunc(Number(mtime) * 1000)),
      executable: (parseInt(mode!, 8) & 0o100) !== 0,
    });
  }
  return entries;
}

/**
 * The stat and list calls of a session's file calls by shell commands
 * (`stat`, `find`; symlinks not followed), for a server with no file API of
 * its own for them: a kind adds its `open` and `upload`.
 *
 * @example A sandbox where nothing is there
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { shellFileCalls } from "./shell_files.ts";
 * const calls = shellFileCalls(() =>
 *   Promise.resolve({ stdout: "missing\n", stderr: "", exitCode: 0, timedOut: false, aborted: false })
 * );
 * assertEquals(await calls.stat("/none"), null);
 * ```
 *
 * @param run The runner of helper commands.
 * @returns `stat`, `statMany`, `statsByCommand` and `list`.
 */
export function shellFileCalls(
  run: ShellRunner,
): Pick<RemoteFileOps, "stat" | "statMany" | "statsByCommand" | "list"> {
  return {
    ...shellStats(run),
    list: (path, options) =>
      shellList(run, path, options.depth, options.signal),
  };
}

/** How many paths one helper command names at most. */
export const PATHS_PER_COMMAND = 200;

/**
 * Makes folders and their parents by `mkdir -p`, {@linkcode PATHS_PER_COMMAND}
 * to a command.
 *
 * @example The command it runs
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { shellMakeDirectories } from "./shell_files.ts";
 * const ran: string[] = [];
 * await shellMakeDirectories((command) => {
 *   ran.push(command);
 *   return Promise.resolve({ stdout: "", stderr: "", exitCode: 0, timedOut: false, aborted: false });
 * }, ["/w/a", "/w/it's"]);
 * assertEquals(ran, ["mkdir -p -- /w/a '/w/it'\\''s'"]);
 * ```
 *
 * @param run The runner.
 * @param paths Absolute folders.
 * @param signal Stops it.
 * @returns When done.
 */
export async function shellMakeDirectories(
  run: ShellRunner,
  paths: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  for (const chunk of inChunks(paths, PATHS_PER_COMMAND)) {
    await runChecked(
      run,
      `mkdir -p -- ${chunk.map(shellQuote).join(" ")}`,
      `make the folder "${chunk[0]}"`,
      signal,
    );
  }
}

/**
 * Deletes paths and what is below them by `rm -rf` (a missing path is fine),
 * {@linkcode PATHS_PER_COMMAND} to a command.
 *
 * @param run The runner.
 * @param paths Absolute paths other than `/`.
 * @param signal Stops it.
 * @returns When done.
 * @throws {TypeError} A path that is relative or `/`.
 */
export async function shellRemove(
  run: ShellRunner,
  paths: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  const bad = paths.find((path) => !path.startsWith("/") || path === "/");
  if (bad !== undefined) {
    throw new TypeError(
      `Cannot delete "${bad}": only absolute paths below / can be deleted`,
    );
  }
  for (const chunk of inChunks(paths, PATHS_PER_COMMAND)) {
    await runChecked(
      run,
      `rm -rf -- ${chunk.map(shellQuote).join(" ")}`,
      `delete "${chunk[0]}"`,
      signal,
    );
  }
}

/**
 * Sets the modes of uploaded files by one `chmod` per mode (and per
 * {@linkcode PATHS_PER_COMMAND} paths); files without a mode, or with the
 * mode `skip` (the server's own default), are left as they are.
 *
 * @example One `chmod` per mode
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { shellSetModes } from "./shell_files.ts";
 * const ran: string[] = [];
 * await shellSetModes((command) => {
 *   ran.push(command);
 *   return Promise.resolve({ stdout: "", stderr: "", exitCode: 0, timedOut: false, aborted: false });
 * }, [
 *   { remotePath: "/w/run.sh", mode: 0o755 },
 *   { remotePath: "/w/data.txt", mode: 0o644 },
 *   { remotePath: "/w/go.sh", mode: 0o755 },
 * ], { skip: 0o644 });
 * assertEquals(ran, ["chmod 0755 -- /w/run.sh /w/go.sh"]);
 * ```
 *
 * @param run The runner.
 * @param files The files' remote paths and modes.
 * @param options The mode to skip, and a signal that stops it.
 * @returns When done.
 */
export async function shellSetModes(
  run: ShellRunner,
  files: readonly { readonly remotePath: string; readonly mode?: number }[],
  options: { readonly skip?: number; readonly signal?: AbortSignal } = {},
): Promise<void> {
  const byMode = new Map<number, string[]>();
  for (const file of files) {
    if (file.mode === undefined) continue;
    const mode = file.mode & 0o7777;
    if (mode === options.skip) continue;
    const list = byMode.get(mode) ?? [];
    list.push(file.remotePath);
    byMode.set(mode, list);
  }
  for (const [mode, paths] of byMode) {
    for (const chunk of inChunks(paths, PATHS_PER_COMMAND)) {
      await runChecked(
        run,
        `chmod ${mode.toString(8).padStart(4, "0")} -- ${
          chunk.map(shellQuote).join(" ")
        }`,
        `set the mode of "${chunk[0]}"`,
        options.signal,
      );
    }
  }
}

/**
 * The items in consecutive groups of at most `size`.
 *
 * @param items The items.
 * @param size The most items of a group.
 * @returns The groups.
 */
export function inChunks<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    chunks.push(items.slice(i, i + size));
  }
  return chunks;
}

/**
 * Calls `each` on every item, `concurrency` at a time, in order of start.
 * The first failure stops the others (their signal aborts with it) and is
 * thrown once all settled; an abort of `signal` is thrown as itself.
 *
 * @example Two at a time
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { eachConcurrently } from "./shell_files.ts";
 * let running = 0;
 * let most = 0;
 * await eachConcurrently([1, 2, 3, 4, 5], 2, async () => {
 *   most = Math.max(most, ++running);
 *   await new Promise((resolve) => setTimeout(resolve, 1));
 *   running--;
 * });
 * assertEquals(most, 2);
 * ```
 *
 * @param items The items (e.g. upload requests).
 * @param concurrency How many at once.
 * @param each The call, given the item and the signal to pass on.
 * @param signal Stops them all.
 * @returns When every call succeeded.
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  each: (item: T, signal: AbortSignal) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const shared = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      shared.throwIfAborted();
      try {
        await each(items[next++]!, shared);
      } catch (error) {
        stop.abort(error);
        throw error;
      }
    }
  };
  const settled = await Promise.allSettled(
    Array.from({ length: Math.min(concurrency, items.length) }, worker),
  );
  signal?.throwIfAborted();
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw stop.signal.reason ?? failed.reason;
}

/**
 * A {@linkcode ShellRunner} of a kind's helper commands (file calls, modes,
 * markers): each runs in `/` with no variables of its own, never retried.
 *
 * @param run Runs a resolved command (e.g. `runRemoteCommand` on the
 * session's commands).
 * @param limits The deadline (default 120 s) and the output kept per stream
 * (default 64 MiB: a listing).
 * @returns The runner (a {@linkcode ShellRunner} whose results are whole
 * `ExecuteResult`s).
 *
 * @example What a helper command is run with
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { helperShell } from "./shell_files.ts";
 * const shell = helperShell((command) =>
 *   Promise.resolve({
 *     stdout: `${command.command} in ${command.cwd}\n`, stderr: "", exitCode: 0,
 *     timedOut: false, aborted: false, stdoutBytes: 0, stderrBytes: 0,
 *     stdoutTruncated: false, stderrTruncated: false, durationMs: 0,
 *   })
 * );
 * assertEquals((await shell("pwd")).stdout, "pwd in /\n");
 * ```
 */
export function helperShell(
  run: (command: RemoteCommand) => Promise<ExecuteResult>,
  limits: { readonly timeoutMs?: number; readonly maxOutputBytes?: number } =
    {},
): (command: string, signal?: AbortSignal) => Promise<ExecuteResult> {
  return (command, signal) =>
    run({
      command,
      cwd: "/",
      env: {},
      timeoutMs: limits.timeoutMs ?? 120_000,
      maxOutputBytes: limits.maxOutputBytes ?? 64 * 1024 * 1024,
      ...(signal ? { signal } : {}),
    });
}
