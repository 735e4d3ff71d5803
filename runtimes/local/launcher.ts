/**
 * The process launcher seam of the local runtime: how one shell command
 * becomes a process and an {@linkcode ExecuteResult}. The plain launcher runs
 * `bash -c` through `Deno.Command`; an isolated launcher (bubblewrap) wraps the
 * argument vector and reuses {@linkcode runProcessGroup} for everything else
 * (process group, timeout, abort, draining, bounded collection).
 *
 * @module
 */
import { checkNumber } from "../../_internal/check_number.ts";
import { collectStream, OutputCollector } from "../../_internal/collector.ts";
import {
  type CheckedTimeoutMs,
  checkTimeoutMs,
  CommandRun,
} from "../command_core.ts";
import { RuntimePermissionError } from "../errors.ts";
import type { ExecuteResult } from "../types.ts";

/** The default grace period between SIGTERM and SIGKILL: 750 ms. */
export const DEFAULT_GRACE_MS = 750;

/** What a {@linkcode ProcessLauncher} runs. Every field is already resolved. */
export interface LaunchRequest {
  /** The shell command. */
  readonly command: string;
  /** The working directory (absolute, existing). */
  readonly cwd: string;
  /**
   * Variables set on top of the inherited environment (already merged in
   * the documented order).
   */
  readonly env: Readonly<Record<string, string>>;
  /**
   * How long it may run, in ms: checked once, by `checkExecuteRequest` (or
   * `checkTimeoutMs`); the launcher does not check it again.
   */
  readonly timeoutMs: CheckedTimeoutMs;
  /** Stops the command and everything it started. */
  readonly signal?: AbortSignal;
  /** The most bytes of each stream kept in memory; the rest is counted. */
  readonly maxOutputBytes: number;
  /** Receives stdout as it comes (see `ExecuteStreams`). */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives stderr as it comes. */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** The command's standard input (default: closed). */
  readonly stdin?: ReadableStream<Uint8Array>;
  /**
   * The folders the command may write: the conversation's workspace, or the
   * plain runtime's folder and its prepared skills. A sandboxing launcher
   * mounts exactly these read-write (default: the working directory); the
   * plain launcher ignores them.
   */
  readonly writablePaths?: readonly string[];
}

/**
 * Turns a shell command into a finished process's result. The local runtime
 * holds one; the plain one is {@linkcode DenoCommandLauncher}.
 */
export interface ProcessLauncher {
  /** A short name, e.g. `plain` or `bubblewrap`. */
  readonly name: string;
  /**
   * Whether commands get the process's environment below the request's
   * variables (default `true`). A launcher that starts from an empty one
   * (`false`) gets only the runtime's variables, without the inherited
   * `PATH`.
   */
  readonly inheritsEnvironment?: boolean;
  /**
   * Runs the command to its end, its timeout, or its signal. Never throws for
   * a failing command: the result says what happened.
   */
  launch(request: LaunchRequest): Promise<ExecuteResult>;
}

/** How the process group is signalled on Unix. */
export type GroupSignalMethod = "auto" | "deno" | "shell";

/** Options of {@linkcode signalProcessGroup}. */
export interface SignalProcessGroupOptions {
  /**
   * `deno`: `Deno.kill(-pgid)` (needs unscoped `--allow-run`); `shell`: runs
   * `<shell> -c 'kill -s <SIG> -- -<pgid>'` (needs `--allow-run=<shell>`);
   * `auto` (default): `deno`, and `shell` from the first `NotCapable` on.
   */
  readonly method?: GroupSignalMethod;
  /** The shell for the `shell` method. Default {@linkcode defaultShell}. */
  readonly shell?: string;
}

/** Set once `Deno.kill(-pgid)` was refused: later calls go straight to the shell. */
let denoKillRefused = false;

/**
 * Sends a signal to every process of a process group (Unix). A group that no
 * longer exists is not an error.
 *
 * `Deno.kill(-pgid)` needs unscoped `--allow-run`; under
 * `--allow-run=bash` it throws `NotCapable`, and the `auto` method then
 * signals the group with bash's own `kill` builtin, which `--allow-run=bash`
 * allows.
 *
 * @example Stopping a background job with its parent
 * ```ts
 * import { assert } from "@std/assert";
 * import { signalProcessGroup } from "./launcher.ts";
 *
 * const child = new Deno.Command("bash", {
 *   args: ["-c", "sleep 30 & sleep 30; wait"],
 *   detached: true, // the child leads its own process group
 *   stdin: "null", stdout: "null", stderr: "null",
 * }).spawn();
 * await signalProcessGroup(child.pid, "SIGKILL");
 * const status = await child.status;
 * assert(status.signal === "SIGKILL");
 * ```
 *
 * @param pgid The group's id (the pid of a child started with `detached: true`).
 * @param signal `SIGTERM` or `SIGKILL`.
 * @param options Which method to use.
 * @returns When the signal was sent.
 * @throws {RangeError} `pgid` is not an integer above 1.
 * @throws {RuntimePermissionError} Neither method is allowed.
 * Permissions: unscoped `--allow-run`, or `--allow-run=<shell>`.
 */
export async function signalProcessGroup(
  pgid: number,
  signal: "SIGTERM" | "SIGKILL",
  options: SignalProcessGroupOptions = {},
): Promise<void> {
  if (!Number.isSafeInteger(pgid) || pgid <= 1) {
    throw new RangeError(
      `Cannot signal process group "${pgid}": it must be an integer above 1`,
    );
  }
  const method = options.method ?? "auto";
  if (method === "deno" || (method === "auto" && !denoKillRefused)) {
    try {
      Deno.kill(-pgid, signal);
      return;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return; // ESRCH: all gone
      if (!(error instanceof Deno.errors.NotCapable) || method === "deno") {
        if (error instanceof Deno.errors.NotCapable) {
          throw new RuntimePermissionError(
            `Cannot signal process group "${pgid}": Deno denies run access; run with unscoped --allow-run`,
            { permission: "run", source: "deno", cause: error },
          );
        }
        throw error;
      }
      denoKillRefused = true;
    }
  }
  const shell = options.shell ?? defaultShell();
  try {
    await new Deno.Command(shell, {
      args: ["-c", `kill -s ${signal.slice(3)} -- -${pgid} 2>/dev/null`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) {
      throw new RuntimePermissionError(
        `Cannot signal process group "${pgid}": Deno denies run access to "${shell}"; run with --allow-run=${shell}`,
        { permission: "run", path: shell, source: "deno", cause: error },
      );
    }
    throw error;
  }
}

/**
 * The shell the plain launcher runs on this system: on Windows `cmd.exe`; on
 * Unix `bash` looked up on `PATH` (what `--allow-run=bash` allows), or
 * `/bin/bash` when only that path is allowed. Deno compares `--allow-run`
 * entries with the path as given, without resolving symlinks: where `/bin` is
 * a link to `/usr/bin`, `--allow-run=bash` allows `/usr/bin/bash` but not
 * `/bin/bash`.
 *
 * @example Choosing the shell
 * ```ts
 * import { assert } from "@std/assert";
 * import { defaultShell } from "./launcher.ts";
 * const shell = defaultShell();
 * assert(shell === "bash" || shell === "/bin/bash" || shell === "cmd.exe");
 * ```
 *
 * @returns The shell's name or path. Needs no permission (it only queries).
 */
export function defaultShell(): string {
  if (Deno.build.os === "windows") return "cmd.exe";
  const granted = (command: string) =>
    Deno.permissions.querySync({ name: "run", command }).state === "granted";
  if (granted("bash")) return "bash";
  if (granted("/bin/bash")) return "/bin/bash";
  return "bash";
}

/** What {@linkcode runProcessGroup} runs. */
export interface ProcessGroupRequest {
  /** The program (e.g. `bash`, or `bwrap` for an isolated launcher). */
  readonly program: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** The working directory. */
  readonly cwd: string;
  /** Variables set on top of the inherited environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Whether to start from an empty environment instead of the inherited one. */
  readonly clearEnv?: boolean;
  /** How long it may run, in ms (> 0). */
  readonly timeoutMs: number;
  /** Stops it and everything it started. */
  readonly signal?: AbortSignal;
  /** The most bytes of each stream kept in memory. */
  readonly maxOutputBytes: number;
  /** Time between SIGTERM and SIGKILL, in ms. Default {@linkcode DEFAULT_GRACE_MS}. */
  readonly graceMs?: number;
  /** How the group is signalled. Default `auto`. */
  readonly groupSignal?: GroupSignalMethod;
  /** The shell used to signal the group when `Deno.kill` is refused. */
  readonly shell?: string;
  /** Receives stdout as it comes (see `ExecuteStreams`). */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives stderr as it comes. */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** The program's standard input (default: closed). */
  readonly stdin?: ReadableStream<Uint8Array>;
}

/**
 * Runs a program as the leader of its own process group (`detached: true`),
 * with stdin closed (or fed from `stdin`), stdout and stderr drained in
 * parallel into bounded {@linkcode OutputCollector}s (and handed to
 * `onStdout`/`onStderr` as they come), and returns its result.
 *
 * At the timeout, or when the signal aborts, the whole group gets SIGTERM,
 * then SIGKILL after the grace period; the result says `timedOut` or
 * `aborted` (never both) with `exitCode: -1`. When a stopped run ends before
 * the grace period is over, the group gets SIGKILL at once, so a process that
 * ignores SIGTERM and closed its pipes does not survive. A process that
 * escaped the group (`setsid`) and keeps a pipe open cannot hold the call:
 * reading stops one grace period after SIGKILL.
 *
 * A run that ends by itself leaves background jobs alone (e.g.
 * `server > log 2>&1 &`); but a background job that keeps stdout or stderr
 * open makes the call wait for it, up to the timeout. A process killed by a
 * signal reports `exitCode: -1` (bash's own `128 + n` is reported when bash
 * survives its child).
 *
 * @example Running bash in its own process group
 * ```ts
 * import { assert } from "@std/assert";
 * import { runProcessGroup } from "./launcher.ts";
 *
 * const result = await runProcessGroup({
 *   program: "bash",
 *   args: ["-c", "echo out; echo err >&2; exit 3"],
 *   cwd: Deno.cwd(),
 *   env: {},
 *   timeoutMs: 10_000,
 *   maxOutputBytes: 1024,
 * });
 * assert(result.stdout === "out\n" && result.stderr === "err\n");
 * assert(result.exitCode === 3 && !result.timedOut);
 * ```
 *
 * @param request What to run and how to bound it.
 * @returns The result.
 * @throws {RangeError} A bad timeout, grace period or output cap.
 * @throws {RuntimePermissionError} Deno refuses to run the program.
 * @throws {Deno.errors.NotFound} The program or the working directory is missing.
 * Permissions: `--allow-run=<program>` (and see {@linkcode signalProcessGroup}).
 */
export function runProcessGroup(
  request: ProcessGroupRequest,
): Promise<ExecuteResult> {
  try {
    return runCheckedGroup({
      ...request,
      timeoutMs: checkTimeoutMs(request.timeoutMs),
    });
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * {@linkcode runProcessGroup} of a launcher's request, whose timeout was
 * checked once before it reached the launcher: not checked again.
 *
 * @param request What to run, its timeout checked.
 * @returns The result.
 */
export async function runCheckedGroup(
  request: ProcessGroupRequest & { readonly timeoutMs: CheckedTimeoutMs },
): Promise<ExecuteResult> {
  const graceMs = request.graceMs ?? DEFAULT_GRACE_MS;
  checkNumber(graceMs, "graceMs", "non-negative number", "run a command with");
  const outCollector = new OutputCollector({
    maxBytes: request.maxOutputBytes,
  });
  const errCollector = new OutputCollector({
    maxBytes: request.maxOutputBytes,
  });
  using run = CommandRun.checked({
    timeoutMs: request.timeoutMs,
    signal: request.signal,
    graceMs,
  });
  if (run.reason) return run.result(-1, outCollector, errCollector);

  let child: Deno.ChildProcess;
  const viaSetsid = setsidUsable(request.program);
  try {
    child = new Deno.Command(viaSetsid ? SETSID : request.program, {
      args: viaSetsid ? [request.program, ...request.args] : [...request.args],
      cwd: request.cwd,
      env: { ...request.env },
      clearEnv: request.clearEnv ?? false,
      stdin: request.stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      detached: !viaSetsid && Deno.build.os !== "windows",
    }).spawn();
  } catch (error) {
    if (
      viaSetsid && error instanceof Deno.errors.NotFound &&
      !error.message.includes("cwd")
    ) {
      // No setsid here after all (or no such folder): the detached way.
      setsidMissing = true;
      return await runCheckedGroup(request);
    }
    throw spawnError(error, request.program, request.cwd);
  }

  const drainStop = new AbortController();
  const drained = Promise.all([
    collectStream(child.stdout, outCollector, {
      signal: drainStop.signal,
      ...(request.onStdout ? { onChunk: request.onStdout } : {}),
    }).catch(() => 0),
    collectStream(child.stderr, errCollector, {
      signal: drainStop.signal,
      ...(request.onStderr ? { onChunk: request.onStderr } : {}),
    }).catch(() => 0),
  ]);
  // Input is fed until it ends, the program stops reading (a closed pipe) or
  // the program is gone.
  const feedStop = new AbortController();
  const fed = request.stdin
    ? request.stdin.pipeTo(child.stdin, { signal: feedStop.signal })
      .catch(() => {})
    : Promise.resolve();

  const pid = child.pid;
  const groupOptions: SignalProcessGroupOptions = {
    ...(request.groupSignal ? { method: request.groupSignal } : {}),
    ...(request.shell ? { shell: request.shell } : {}),
  };
  let killed = false;
  let drainTimer: ReturnType<typeof setTimeout> | undefined;
  const kill = (sig: "SIGTERM" | "SIGKILL"): Promise<void> => {
    if (Deno.build.os === "windows") {
      try {
        child.kill(sig);
      } catch {
        // Already gone.
      }
      return Promise.resolve();
    }
    return signalProcessGroup(pid, sig, groupOptions).catch(() => {
      // Last resort: at least the leader.
      try {
        child.kill(sig);
      } catch {
        // Already gone.
      }
    });
  };
  const pending: Promise<void>[] = [];
  // Stop: SIGTERM; the grace period over: SIGKILL, and one more grace period
  // later reading stops (a process that escaped the group may hold a pipe).
  run.onStop(() => pending.push(kill("SIGTERM")));
  run.onGraceOver(() => {
    killed = true;
    pending.push(kill("SIGKILL"));
    drainTimer = setTimeout(() => drainStop.abort(), graceMs);
  });

  let status: Deno.CommandStatus;
  try {
    [status] = await Promise.all([child.status, drained]);
  } finally {
    feedStop.abort();
    run[Symbol.dispose]();
    clearTimeout(drainTimer);
  }
  if (run.reason && !killed) pending.push(kill("SIGKILL"));
  await Promise.all([...pending, fed]);
  if (
    viaSetsid && status.code === 127 &&
    errCollector.text().startsWith("setsid: failed to execute")
  ) {
    throw new Deno.errors.NotFound(
      `Cannot run "${request.program}": it was not found`,
    );
  }
  return run.result(
    status.signal !== null ? -1 : status.code,
    outCollector,
    errCollector,
  );
}

/**
 * The `setsid` program: what makes a process group at the lowest cost. Deno's
 * `detached: true` runs its `setsid()` in a hook between fork and exec, which
 * makes Deno fork its whole address space instead of using `posix_spawn`
 * (2.63 ms median for `bash -c true` against 1.32 for a plain spawn); a plain
 * spawn of `setsid bash -c true` costs 2.00. `setsid` execs the program in
 * place (a fresh child is no group leader, so it does not fork): the pid Deno
 * sees is the new group's id, as with `detached`.
 */
const SETSID = "setsid";
let setsidMissing = false;
const setsidAllowed = new Map<string, boolean>();

/**
 * Whether to start `program` through `setsid`: on Linux, when Deno's flags
 * grant running both `setsid` and the program (so `setsid` never runs what
 * the flags refuse), and `setsid` was not found missing. Under
 * `--allow-run=bash` alone this is false and `detached: true` is used.
 */
function setsidUsable(program: string): boolean {
  if (Deno.build.os !== "linux" || setsidMissing) return false;
  let allowed = setsidAllowed.get(program);
  if (allowed === undefined) {
    const granted = (command: string) =>
      Deno.permissions.querySync({ name: "run", command }).state ===
        "granted";
    try {
      allowed = granted(SETSID) && granted(program);
    } catch {
      allowed = false;
    }
    setsidAllowed.set(program, allowed);
  }
  return allowed;
}

/** Options of {@linkcode DenoCommandLauncher}. */
export interface DenoCommandLauncherOptions {
  /**
   * The shell: Unix runs `<shell> -c <command>`, Windows `cmd.exe /c
   * <command>`. Default {@linkcode defaultShell}.
   */
  readonly shell?: string;
  /** Time between SIGTERM and SIGKILL, in ms. Default {@linkcode DEFAULT_GRACE_MS}. */
  readonly graceMs?: number;
  /** How the process group is signalled. Default `auto`. */
  readonly groupSignal?: GroupSignalMethod;
}

/**
 * The plain launcher: `bash -c <command>` (Windows: `cmd.exe /c`) through
 * `Deno.Command`, in its own process group, with the process's environment
 * plus the request's variables. No isolation: the shell reaches whatever the
 * user running Deno may reach, whatever Deno's permission flags say.
 *
 * @example Running a command
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   checkExecuteRequest,
 *   DenoCommandLauncher,
 * } from "@skillrun/skillrun/runtime";
 *
 * // Checked once; the launcher takes the checked request as it is.
 * const checked = checkExecuteRequest({
 *   command: 'echo "$GREETING"',
 *   env: { GREETING: "hello" },
 *   timeoutMs: 10_000,
 *   maxOutputBytes: 1024,
 * });
 * const launcher = new DenoCommandLauncher();
 * const result = await launcher.launch({ ...checked, cwd: Deno.cwd() });
 * assert(result.stdout === "hello\n" && result.exitCode === 0);
 * ```
 *
 * @example A timeout stops the whole process group
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   checkExecuteRequest,
 *   DenoCommandLauncher,
 * } from "@skillrun/skillrun/runtime";
 *
 * const launcher = new DenoCommandLauncher({ graceMs: 200 });
 * const result = await launcher.launch({
 *   ...checkExecuteRequest({
 *     command: "sleep 30 & sleep 30; wait",
 *     timeoutMs: 200,
 *     maxOutputBytes: 1024,
 *   }),
 *   cwd: Deno.cwd(),
 * });
 * assert(result.timedOut && result.exitCode === -1);
 * ```
 */
export class DenoCommandLauncher implements ProcessLauncher {
  /** The launcher's name. */
  readonly name = "plain";
  readonly #shell: string;
  readonly #graceMs: number;
  readonly #groupSignal: GroupSignalMethod;

  /**
   * Makes a launcher.
   *
   * @param options The shell, the grace period and the group-signal method.
   * @throws {RangeError} A negative grace period.
   */
  constructor(options: DenoCommandLauncherOptions = {}) {
    this.#shell = options.shell ?? defaultShell();
    this.#graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    checkNumber(
      this.#graceMs,
      "graceMs",
      "non-negative number",
      "run a command with",
    );
    this.#groupSignal = options.groupSignal ?? "auto";
  }

  /** The shell this launcher runs. */
  get shell(): string {
    return this.#shell;
  }

  /**
   * Runs the command. See {@linkcode runProcessGroup} for the stop rules.
   *
   * @param request The resolved request.
   * @returns The result; a failing command is not an error.
   * @throws {RuntimePermissionError} Deno refuses to run the shell.
   * @throws {Deno.errors.NotFound} The working directory is missing.
   */
  launch(request: LaunchRequest): Promise<ExecuteResult> {
    const windows = Deno.build.os === "windows";
    return runCheckedGroup({
      program: this.#shell,
      // `--` ends the shell's own options: a command such as `--help` or
      // `-x` is then the command, never an option of the shell.
      args: windows
        ? ["/d", "/s", "/c", request.command]
        : ["-c", "--", request.command],
      cwd: request.cwd,
      env: request.env,
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      graceMs: this.#graceMs,
      groupSignal: this.#groupSignal,
      shell: this.#shell,
      ...(request.signal ? { signal: request.signal } : {}),
      ...streamsOf(request),
    });
  }
}

function spawnError(error: unknown, program: string, cwd: string): Error {
  if (error instanceof Deno.errors.NotCapable) {
    return new RuntimePermissionError(
      `Cannot run "${program}": Deno denies run access; run with --allow-run=${program}`,
      { permission: "run", path: program, source: "deno", cause: error },
    );
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return new RuntimePermissionError(
      `Cannot run "${program}" in "${cwd}": the operating system denies access`,
      { permission: "run", path: program, source: "os", cause: error },
    );
  }
  if (error instanceof Deno.errors.NotFound) {
    const message = error.message.includes("cwd")
      ? `Cannot run a command in "${cwd}": the working directory does not exist`
      : `Cannot run "${program}": it was not found`;
    return new Deno.errors.NotFound(message, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The live streams of a request, to spread into {@linkcode runProcessGroup}'s
 * request (only those given).
 *
 * @param request A launch request.
 * @returns Its `onStdout`, `onStderr` and `stdin`, when given.
 */
export function streamsOf(
  request: Pick<LaunchRequest, "onStdout" | "onStderr" | "stdin">,
): Pick<ProcessGroupRequest, "onStdout" | "onStderr" | "stdin"> {
  return {
    ...(request.onStdout ? { onStdout: request.onStdout } : {}),
    ...(request.onStderr ? { onStderr: request.onStderr } : {}),
    ...(request.stdin ? { stdin: request.stdin } : {}),
  };
}
