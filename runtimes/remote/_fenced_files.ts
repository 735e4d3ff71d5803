/**
 * The in-sandbox half of the remote workspace fence: one quoted shell
 * command that looks at what is really at a path (every folder from the
 * workspace root down, symbolic links not followed) and, in the same
 * invocation, does the work: writes a file by a temporary name in its own
 * folder and renames it over the target (so a hard link the sandbox made to
 * a file elsewhere loses its link, and the file elsewhere keeps its bytes),
 * or resolves a search root with `realpath`. Doing the check and the use in
 * one command leaves only the time between two shell tests and a `rename`
 * for a swap, instead of a round trip. Needs bash, GNU `chmod --reference`,
 * `base64` and `realpath` in the sandbox (as the in-sandbox search does).
 *
 * @module
 */
import { shellQuote } from "../../_internal/shell_quote.ts";
import { posix } from "../../_internal/std.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import type { FileInfo } from "../types.ts";
import { runChecked, type ShellRunner, statLine } from "./shell_files.ts";

/**
 * The largest content written by the one command itself (base64 in its
 * command line, well under Linux's 128 KiB limit of one argument); larger
 * content is uploaded to the temporary name between a check and the rename.
 */
export const INLINE_WRITE_BYTES = 32 * 1024;

/** The longest content literal put in the one command (escapes counted). */
const INLINE_LITERAL_CHARS = 64 * 1024;

/** What the script prints when it refuses (never with exit code 0 otherwise). */
const REFUSED = "skillrun-refused";

/** Why a fenced command refused, and at which step. */
type Refusal = "link" | "notdir" | "dir" | "special";

/**
 * The workspace root and every folder below it down to `path`, then `path`.
 *
 * @param root The fence root.
 * @param path An absolute path inside it (already lexically fenced).
 * @returns The steps.
 */
export function fenceSteps(root: string, path: string): string[] {
  const steps = [root];
  if (path !== root) {
    let at = root;
    for (const part of path.slice(root.length + 1).split("/")) {
      at = `${at}/${part}`;
      steps.push(at);
    }
  }
  return steps;
}

/**
 * The shell lines that refuse a symbolic link at any step, a step before
 * the last that is not a folder, and (with `lastIsFile`) a last step that is
 * not a regular file; a missing step ends the walk (nothing is below it).
 */
function checkLines(steps: readonly string[], lastIsFile: boolean): string {
  const last = steps.length - 1;
  return [
    `__r() { printf '${REFUSED} %s %s\\n' "$1" "$2"; exit 0; }`,
    `__i=0`,
    `for __p in ${steps.map(shellQuote).join(" ")}; do`,
    `  if [ -L "$__p" ]; then __r link $__i; fi`,
    `  if [ ! -e "$__p" ]; then break; fi`,
    `  if [ $__i -lt ${last} ] && [ ! -d "$__p" ]; then __r notdir $__i; fi`,
    ...(lastIsFile
      ? [
        `  if [ $__i -eq ${last} ] && [ ! -f "$__p" ]; then`,
        `    if [ -d "$__p" ]; then __r dir $__i; else __r special $__i; fi`,
        `  fi`,
      ]
      : []),
    `  __i=$((__i+1))`,
    `done`,
  ].join("\n");
}

/** Throws the error a refusal line names, as the stat-based check does. */
function throwRefusal(
  stdout: string,
  steps: readonly string[],
  given: string,
  use: string,
  workspace: string,
): void {
  const line = stdout.split("\n").find((l) => l.startsWith(`${REFUSED} `));
  if (line === undefined) return;
  const [, why, index] = line.split(" ") as [string, Refusal, string];
  const step = steps[Number(index)] ?? given;
  switch (why) {
    case "link":
      throw new WorkspaceEscapeError(
        `Cannot ${use} "${given}": "${step}" is a symbolic link, and the remote file tools never follow one`,
        { path: given, workspace },
      );
    case "notdir":
      throw new Deno.errors.NotFound(
        `Cannot ${use} "${given}": "${step}" is not a folder`,
      );
    case "dir":
      throw new TypeError(`Cannot ${use} "${given}": it is a folder`);
    default:
      throw new TypeError(
        `Cannot ${use} "${given}": it is not a regular file (a FIFO, a device or a socket)`,
      );
  }
}

/** Options of {@linkcode fencedWrite}. */
export interface FencedWriteOptions {
  /** Runs one helper command in the sandbox. */
  readonly shell: ShellRunner;
  /** Uploads bytes to an absolute path with a mode (for large content). */
  readonly upload: (
    path: string,
    bytes: Uint8Array,
    signal?: AbortSignal,
  ) => Promise<void>;
  /** The fence root. */
  readonly root: string;
  /** The target (absolute, lexically inside the root). */
  readonly target: string;
  /** The path as the caller gave it (for messages). */
  readonly given: string;
  /** The bytes. */
  readonly bytes: Uint8Array;
  /** Stops it. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Writes a file in a fenced workspace by a temporary name in its folder and
 * a rename over the target, the check of every step done in the same
 * command: a new file gets 0644, a replaced one keeps its mode. Content up
 * to {@linkcode INLINE_WRITE_BYTES} travels in the one command; larger
 * content costs a check (with the folders made), an upload to the
 * temporary name, and the checked rename.
 *
 * @param options What to write where, and how to reach the sandbox.
 * @throws {WorkspaceEscapeError} A step is a symbolic link.
 * @throws {Deno.errors.NotFound} A step is not a folder.
 * @throws {TypeError} The target is a folder or not a regular file.
 * @throws {Error} The command failed.
 */
export async function fencedWrite(options: FencedWriteOptions): Promise<void> {
  const { shell, root, target, given, bytes, signal } = options;
  const steps = fenceSteps(root, target);
  const dir = posix.dirname(target);
  const tmp = `${dir}/.skillrun-write-${crypto.randomUUID()}`;
  const [d, t, f] = [dir, target, tmp].map(shellQuote) as [
    string,
    string,
    string,
  ];
  const check = checkLines(steps, true);
  const rename = [
    `if [ -f ${t} ]; then chmod --reference=${t} -- ${f} || { rm -f -- ${f}; exit 1; }; fi`,
    `mv -f -- ${f} ${t} || { rm -f -- ${f}; exit 1; }`,
  ].join("\n");
  const run = async (script: string): Promise<void> => {
    const result = await runChecked(shell, script, `write "${given}"`, signal);
    throwRefusal(result.stdout, steps, given, "write", root);
  };
  const literal = bytes.length <= INLINE_WRITE_BYTES
    ? bashLiteral(bytes)
    : undefined;
  if (literal !== undefined && literal.length <= INLINE_LITERAL_CHARS) {
    // bash's own printf writes the bytes: no process but chmod and mv.
    await run([
      check,
      `[ -d ${d} ] || mkdir -p -- ${d} || exit 1`,
      `umask 022; set -C`,
      `printf '%s' ${literal} > ${f} || { rm -f -- ${f}; exit 1; }`,
      rename,
    ].join("\n"));
    return;
  }
  await run([check, `mkdir -p -- ${d}`].join("\n"));
  try {
    await options.upload(tmp, bytes, signal);
    await run([
      `__gone() { rm -f -- ${f}; }`,
      check.replace(
        `__r() { printf`,
        `__r() { __gone; printf`,
      ),
      rename,
    ].join("\n"));
  } catch (error) {
    await shell(`rm -f -- ${f}`).catch(() => {});
    throw error;
  }
}

/**
 * The largest file {@linkcode fencedRead} brings back in its command's
 * output (base64); a larger one is read by a download after a check.
 */
export const INLINE_READ_BYTES = 192 * 1024;

/**
 * Reads a small file in a fenced workspace in one command that checks and
 * reads in the same invocation: every step looked at (a symbolic link, a
 * step that is not a folder, a file that is not a regular one refused),
 * the file opened, then the steps looked at again and the opened file
 * compared with the path (`-ef`: same device and inode), so that a swap
 * around the open is refused rather than read. For servers whose `stat` is
 * a command anyway (AIO, Vercel): the same cost, no window.
 *
 * @param shell Runs one helper command.
 * @param root The fence root.
 * @param target The file (absolute, lexically inside the root).
 * @param given The path as the caller gave it.
 * @param limit The most bytes wanted (the caller's limit + 1), if any.
 * @param signal Stops it.
 * @returns The bytes (at most `limit`), `null` when the file is missing, or
 * `"large"` when it is larger than {@linkcode INLINE_READ_BYTES} and the
 * caller wants more (checked: read it by download).
 * @throws {WorkspaceEscapeError} A step is a symbolic link.
 * @throws {TypeError} It is a folder or not a regular file.
 */
export async function fencedRead(
  shell: ShellRunner,
  root: string,
  target: string,
  given: string,
  limit: number | undefined,
  signal?: AbortSignal,
): Promise<Uint8Array | null | "large"> {
  const steps = fenceSteps(root, target);
  const t = shellQuote(target);
  const last = steps.length - 1;
  const take = Math.min(limit ?? Infinity, INLINE_READ_BYTES + 1);
  const check = checkLines(steps, true);
  const result = await runChecked(
    shell,
    [
      check,
      `if [ ! -e ${t} ]; then echo skillrun-missing; exit 0; fi`,
      `exec 3< ${t} || exit 1`,
      check.replace(/^__r\(\) \{[^\n]*\n/, ""),
      `[ ${t} -ef /proc/self/fd/3 ] || __r link ${last}`,
      `[ -f /proc/self/fd/3 ] || __r special ${last}`,
      `printf 'skillrun-bytes '; head -c ${take} <&3 | base64 -w0; echo`,
    ].join("\n"),
    `read "${given}"`,
    signal,
  );
  throwRefusal(result.stdout, steps, given, "read", root);
  const out = result.stdout.trim();
  if (out === "skillrun-missing") return null;
  if (!out.startsWith("skillrun-bytes")) {
    throw new Error(
      `Cannot read "${given}": the sandbox answered ${
        JSON.stringify(out.slice(0, 200))
      }`,
    );
  }
  const binary = atob(out.slice("skillrun-bytes".length).trim());
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  if (bytes.length > INLINE_READ_BYTES && (limit ?? Infinity) > bytes.length) {
    return "large";
  }
  return bytes;
}

/** What {@linkcode fencedOpen} found. */
export interface FencedOpened {
  /**
   * The facts (a regular file's as opened; a small file's are its type and
   * size alone: no `stat` is run for them).
   */
  readonly info: FileInfo;
  /**
   * A regular file's bytes when it has at most {@linkcode INLINE_READ_BYTES};
   * none for a larger one (checked: read it by download).
   */
  readonly bytes?: Uint8Array;
}

/**
 * Opens a file in one command and prints its facts, with its bytes when it
 * is small: {@linkcode fencedRead}'s checks with a fence root (every step
 * looked at, the opened file compared with the path); without one, the
 * file alone (symbolic links followed, as the local runtime does). A
 * folder or a special file is never opened: its facts come alone.
 *
 * @param shell Runs one helper command.
 * @param root The fence root, or `undefined` when there is no fence.
 * @param target The file (absolute; lexically inside the root).
 * @param given The path as the caller gave it.
 * @param signal Stops it.
 * @returns The facts and small bytes, or `null` when nothing is there.
 * @throws {WorkspaceEscapeError} With a root: a step is a symbolic link.
 * @throws {Deno.errors.NotFound} With a root: a step is not a folder.
 */
export async function fencedOpen(
  shell: ShellRunner,
  root: string | undefined,
  target: string,
  given: string,
  signal?: AbortSignal,
): Promise<FencedOpened | null> {
  const steps = root === undefined ? [target] : fenceSteps(root, target);
  const t = shellQuote(target);
  const last = steps.length - 1;
  const check = root === undefined
    ? `__r() { printf '${REFUSED} %s %s\\n' "$1" "$2"; exit 0; }`
    : checkLines(steps, false);
  const facts = `LC_ALL=C stat -L -c '%F|%s|%Y|%a'`;
  const result = await runChecked(
    shell,
    [
      check,
      `if [ ! -e ${t} ]; then echo skillrun-missing; exit 0; fi`,
      `if [ ! -f ${t} ]; then echo "skillrun-info $(${facts} -- ${t})"; exit 0; fi`,
      `exec 3< ${t} || exit 1`,
      ...(root === undefined ? [] : [
        check.replace(/^__r\(\) \{[^\n]*\n/, ""),
        `[ ${t} -ef /proc/self/fd/3 ] || __r link ${last}`,
      ]),
      `[ -f /proc/self/fd/3 ] || __r special ${last}`,
      // A small file's bytes say its size: no stat to run.
      `__b=$(head -c ${INLINE_READ_BYTES + 1} <&3 | base64 -w0) || exit 1`,
      `if [ \${#__b} -le ${base64Length(INLINE_READ_BYTES)} ]; then`,
      `  printf 'skillrun-bytes %s\\n' "$__b"; exit 0`,
      `fi`,
      `echo "skillrun-info $(${facts} /proc/self/fd/3)"`,
    ].join("\n"),
    `read "${given}"`,
    signal,
  );
  throwRefusal(result.stdout, steps, given, "read", root ?? "/");
  const out = result.stdout.trim();
  if (out === "skillrun-missing") return null;
  if (out.startsWith("skillrun-bytes")) {
    const encoded = out.slice("skillrun-bytes".length).trim();
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    const info: FileInfo = {
      path: target,
      name: posix.basename(target),
      type: "file",
      size: bytes.length,
      modifiedAt: null,
    };
    return { info, bytes };
  }
  const info = out.startsWith("skillrun-info ")
    ? statLine(target, out.slice("skillrun-info ".length))
    : null;
  if (info === null) {
    throw new Error(
      `Cannot read "${given}": the sandbox answered ${
        JSON.stringify(out.slice(0, 200))
      }`,
    );
  }
  return { info };
}

/** The length of `bytes` bytes in base64 (padded). */
function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/**
 * Resolves a path in a fenced workspace the way the local runtime does
 * before a search: `realpath -e` in the sandbox (links on the way followed),
 * a result outside the root's real path refused, and so is a root that is
 * itself a symbolic link. One command.
 *
 * @param shell Runs one helper command.
 * @param root The fence root.
 * @param path The absolute path (lexically inside the root).
 * @param given The path as the caller gave it.
 * @param signal Stops it.
 * @returns The real path (the path itself when no link is on the way), or
 * `null` when nothing is there.
 * @throws {WorkspaceEscapeError} It resolves outside the root.
 */
export async function fencedRealPath(
  shell: ShellRunner,
  root: string,
  path: string,
  given: string,
  signal?: AbortSignal,
): Promise<string | null> {
  const [q, r] = [shellQuote(path), shellQuote(root)];
  // base64 frames the paths (a name may hold a newline).
  const result = await runChecked(
    shell,
    `if [ -L ${r} ]; then echo root-link; elif [ ! -e ${q} ]; then echo missing; else printf 'real:%s:%s\n' "$(realpath -e -- ${r} | base64 -w0)" "$(realpath -e -- ${q} | base64 -w0)"; fi`,
    `resolve "${given}"`,
    signal,
  );
  const out = result.stdout.trim();
  if (out === "missing") return null;
  if (out === "root-link") {
    throw new WorkspaceEscapeError(
      `Cannot use "${given}": the workspace "${root}" is a symbolic link`,
      { path: given, workspace: root },
    );
  }
  const [tag, realRoot, real] = out.split(":").map((part, i) =>
    i === 0 ? part : fromBase64Line(part)
  );
  if (tag !== "real" || !realRoot || real === undefined) {
    throw new Error(
      `Cannot resolve "${given}": the sandbox answered ${
        JSON.stringify(out.slice(0, 200))
      }`,
    );
  }
  if (real === "") return null;
  if (
    real !== realRoot &&
    !real.startsWith(realRoot === "/" ? "/" : `${realRoot}/`)
  ) {
    throw new WorkspaceEscapeError(
      `Cannot use "${given}": it resolves outside the workspace "${root}"`,
      { path: given, workspace: root },
    );
  }
  // The same place, named from the root as the caller knows it.
  return realRoot === root ? real : root + real.slice(realRoot.length);
}

/** A path `realpath` printed (one trailing newline), framed in base64. */
function fromBase64Line(text: string): string {
  const binary = atob(text);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes).replace(/\n$/, "");
}

/**
 * Bytes as a bash `$'...'` literal (printable ASCII as is, the rest as
 * `\xHH`), or `undefined` when they hold a NUL byte (a bash string cannot).
 */
function bashLiteral(bytes: Uint8Array): string | undefined {
  let out = "$'";
  for (const byte of bytes) {
    if (byte === 0) return undefined;
    if (byte >= 0x20 && byte < 0x7f && byte !== 0x27 && byte !== 0x5c) {
      out += String.fromCharCode(byte);
    } else {
      out += `\\x${byte.toString(16).padStart(2, "0")}`;
    }
  }
  return `${out}'`;
}
