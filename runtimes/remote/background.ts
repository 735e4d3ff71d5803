/**
 * The kit's background commands, for a sandbox kind without a facility of
 * its own: the command runs detached in the sandbox, in a session of its
 * own, under a watcher that writes its exit status to a folder named by the
 * command's id (`/tmp/.skillrun/bg/<id>`: `out`, `err`, `pid`, `exit`, and
 * the read cursor). Everything about the command lives in the sandbox, so
 * any runtime attached to the same sandbox (another instance of a server
 * serving the same conversation) reads it, waits for it and kills it by its
 * id ({@linkcode attachSandboxBackground}).
 *
 * Each poll is one short command: the state first (once it says finished,
 * the output is complete), then the output since the stored cursor, which
 * moves on; so the output one instance read is not read again by another.
 * The command's variables are its launcher's (inherited), never written to
 * a file.
 *
 * @module
 */
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type {
  BackgroundProcess,
  BackgroundState,
  ExecuteResult,
} from "../types.ts";
import type { RemoteCommand } from "./runtime.ts";
import { shellQuote } from "./shell.ts";

/** Where the commands' folders are in the sandbox. */
export const SANDBOX_BACKGROUND_ROOT = "/tmp/.skillrun/bg";

/** The shape of a kit background command's id. */
const ID = /^bg[0-9]{15}$/;

/** The deadline of one launcher, poll or kill command, in ms. */
const CALL_TIMEOUT_MS = 60_000;

/** Runs one short command in the sandbox (the session's `runOn`). */
export type SandboxRun = (command: RemoteCommand) => Promise<ExecuteResult>;

/** Options of {@linkcode startSandboxBackground}. */
export interface SandboxBackgroundRequest extends RemoteCommand {
  /** Receives standard output as the polls fetch it. */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives standard error as the polls fetch it. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/**
 * Starts a command detached in the sandbox and returns once it runs.
 *
 * @param run Runs the launcher (and later the polls and the kill).
 * @param request The command, resolved (cwd, env, timeout).
 * @returns The command, its id naming its folder in the sandbox.
 * @throws {Error} The sandbox refused the command (e.g. no such folder).
 */
export async function startSandboxBackground(
  run: SandboxRun,
  request: SandboxBackgroundRequest,
): Promise<BackgroundProcess> {
  // `bg` and 15 random digits (the shape of every kit-run id, `bg<n>`).
  const id = `bg${
    Array.from(crypto.getRandomValues(new Uint8Array(15)), (b) => b % 10)
      .join("")
  }`;
  const dir = `${SANDBOX_BACKGROUND_ROOT}/${id}`;
  const seconds = request.timeoutMs < MAX_EXECUTE_TIMEOUT_MS
    ? Math.max(0.001, request.timeoutMs / 1000)
    : 0;
  // $1 the command, $2 the folder, $3 the timeout in s (0: none). The
  // watcher is a session leader of its own (a server that kills the
  // launcher's group leaves it); the command another (killed as a group).
  const watcher = [
    `setsid bash -c "$1" >"$2/out" 2>"$2/err" </dev/null & p=$!`,
    `echo "$p" >"$2/pid.part" && mv "$2/pid.part" "$2/pid"`,
    `if [ "$3" != 0 ]; then (sleep "$3"; if kill -0 -- "-$p" 2>/dev/null; then : >"$2/timedout"; kill -TERM -- "-$p"; sleep 2; kill -KILL -- "-$p"; fi) >/dev/null 2>&1 & w=$!; fi`,
    `wait "$p"; s=$?`,
    `[ -n "$w" ] && kill "$w" 2>/dev/null`,
    `echo "$s" >"$2/exit.part" && mv "$2/exit.part" "$2/exit"`,
  ].join("\n");
  const launcher = [
    `d=${shellQuote(dir)}`,
    `mkdir -p ${shellQuote(SANDBOX_BACKGROUND_ROOT)} && mkdir "$d" || exit 90`,
    `printf '%s' ${shellQuote(request.command)} >"$d/command"`,
    `date +%s%3N >"$d/started"`,
    `echo "0 0" >"$d/cursor"`,
    `setsid bash -c ${shellQuote(watcher)} _ ${
      shellQuote(request.command)
    } "$d" ${seconds} </dev/null >/dev/null 2>&1 &`,
    `i=0; while [ ! -s "$d/pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done`,
    `[ -s "$d/pid" ] || exit 91`,
  ].join("\n");
  const result = await run({
    command: launcher,
    cwd: request.cwd,
    env: request.env,
    timeoutMs: CALL_TIMEOUT_MS,
    maxOutputBytes: 64 * 1024,
    ...(request.signal ? { signal: request.signal } : {}),
  });
  if (result.exitCode !== 0) {
    throw new Error(
      `Cannot run the command in "${request.cwd}": the sandbox could not start it in the background (exit ${result.exitCode}${
        result.stderr.trim() ? `: ${result.stderr.trim().slice(0, 500)}` : ""
      })`,
    );
  }
  return new SandboxBackground(run, id, request.cwd, request);
}

/** A background command found by its id, as {@linkcode attachSandboxBackground} gives it. */
export interface AttachedBackground {
  /** The command. */
  readonly process: BackgroundProcess;
  /** Its command line. */
  readonly command: string;
  /** When it started. */
  readonly startedAt: Date;
}

/**
 * Finds a background command another runtime started in the same sandbox.
 *
 * @param run Runs the polls and the kill.
 * @param id The command's id.
 * @param cwd A folder that exists (where the polls run).
 * @param sinks Where fetched output goes.
 * @returns The command, or `undefined` when the sandbox has no such command.
 */
export async function attachSandboxBackground(
  run: SandboxRun,
  id: string,
  cwd: string,
  sinks: Pick<SandboxBackgroundRequest, "onStdout" | "onStderr"> = {},
): Promise<AttachedBackground | undefined> {
  if (typeof id !== "string" || !ID.test(id)) return undefined;
  const dir = `${SANDBOX_BACKGROUND_ROOT}/${id}`;
  const result = await run({
    command: `d=${
      shellQuote(dir)
    }; [ -s "$d/pid" ] || exit 3; cat "$d/started"; cat "$d/command"`,
    cwd,
    env: {},
    timeoutMs: CALL_TIMEOUT_MS,
    maxOutputBytes: 256 * 1024,
  });
  if (result.exitCode !== 0) return undefined;
  const newline = result.stdout.indexOf("\n");
  const started = Number(result.stdout.slice(0, newline));
  return {
    process: new SandboxBackground(run, id, cwd, sinks),
    command: result.stdout.slice(newline + 1),
    startedAt: new Date(Number.isFinite(started) ? started : Date.now()),
  };
}

class SandboxBackground implements BackgroundProcess {
  readonly id: string;
  readonly #run: SandboxRun;
  readonly #dir: string;
  readonly #cwd: string;
  readonly #sinks: Pick<SandboxBackgroundRequest, "onStdout" | "onStderr">;
  #last: BackgroundState = { running: true };
  /** Polls one at a time: the cursor moves with each. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    run: SandboxRun,
    id: string,
    cwd: string,
    sinks: Pick<SandboxBackgroundRequest, "onStdout" | "onStderr">,
  ) {
    this.#run = run;
    this.id = id;
    this.#dir = `${SANDBOX_BACKGROUND_ROOT}/${id}`;
    this.#cwd = cwd;
    this.#sinks = sinks;
  }

  poll(): Promise<BackgroundState> {
    const next = this.#queue.then(() => this.#poll());
    this.#queue = next.catch(() => {});
    return next;
  }

  async #poll(): Promise<BackgroundState> {
    if (!this.#last.running) return this.#last;
    // The header line: exit status (or -), timed out, killed; then the
    // output since the cursor, which moves on.
    const script = [
      `d=${shellQuote(this.#dir)}`,
      `[ -d "$d" ] || { echo "the sandbox has no such command (gone with its sandbox?)" >&2; exit 3; }`,
      `e=$(cat "$d/exit" 2>/dev/null) || e=-`,
      `t=0; [ -e "$d/timedout" ] && t=1; k=0; [ -e "$d/killed" ] && k=1`,
      `o=$(wc -c <"$d/out"); r=$(wc -c <"$d/err"); read oo ro <"$d/cursor"`,
      `echo "$o $r" >"$d/cursor"`,
      `printf '%s %s %s\\n' "$e" "$t" "$k"`,
      `tail -c +$((oo+1)) "$d/out" | head -c $((o-oo))`,
      `tail -c +$((ro+1)) "$d/err" | head -c $((r-ro)) >&2`,
    ].join("\n");
    let header: string | undefined;
    let pending = new Uint8Array(0);
    const onStdout = (chunk: Uint8Array) => {
      if (header !== undefined) {
        this.#sinks.onStdout?.(chunk);
        return;
      }
      const joined = new Uint8Array(pending.length + chunk.length);
      joined.set(pending);
      joined.set(chunk, pending.length);
      const end = joined.indexOf(10);
      if (end < 0) {
        pending = joined;
        return;
      }
      header = new TextDecoder().decode(joined.subarray(0, end));
      if (end + 1 < joined.length) {
        this.#sinks.onStdout?.(joined.slice(end + 1));
      }
    };
    const result = await this.#run({
      command: script,
      cwd: this.#cwd,
      env: {},
      timeoutMs: CALL_TIMEOUT_MS,
      maxOutputBytes: 64 * 1024,
      onStdout,
      ...(this.#sinks.onStderr ? { onStderr: this.#sinks.onStderr } : {}),
    });
    if (result.exitCode !== 0 || header === undefined) {
      throw new Error(
        `Cannot read the background command "${this.id}": ${
          result.stderr.trim() || `the poll ended with ${result.exitCode}`
        }`,
      );
    }
    const [exit, timedOut, killed] = header.split(" ");
    if (exit === "-") return this.#last;
    const code = Number(exit);
    this.#last = {
      running: false,
      exitCode: timedOut === "1" || killed === "1" || !Number.isInteger(code)
        ? -1
        : code,
      ...(timedOut === "1" ? { timedOut: true } : {}),
    };
    return this.#last;
  }

  async kill(): Promise<void> {
    if (!this.#last.running) return;
    // TERM to the group, KILL after 3 s; answered once the watcher wrote
    // the exit status.
    const script = [
      `d=${shellQuote(this.#dir)}`,
      `[ -e "$d/exit" ] && exit 0`,
      `p=$(cat "$d/pid") || exit 3`,
      `: >"$d/killed"`,
      `kill -TERM -- "-$p" 2>/dev/null`,
      `i=0; while kill -0 -- "-$p" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done`,
      `kill -KILL -- "-$p" 2>/dev/null`,
      `i=0; while [ ! -e "$d/exit" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done`,
      `[ -e "$d/exit" ] || echo 137 >"$d/exit"`,
    ].join("\n");
    const result = await this.#run({
      command: script,
      cwd: this.#cwd,
      env: {},
      timeoutMs: CALL_TIMEOUT_MS,
      maxOutputBytes: 64 * 1024,
    });
    if (result.exitCode !== 0) {
      throw new Error(
        `Cannot kill the background command "${this.id}": ${
          result.stderr.trim() || `the kill ended with ${result.exitCode}`
        }`,
      );
    }
  }
}
