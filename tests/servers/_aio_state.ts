/**
 * The state of the AIO test server (`aio.ts`): a command (a real `bash -c`
 * in its own process group, its stdout and stderr kept apart as byte logs
 * read from any offset), a shell session, and what the routes share.
 *
 * @module
 */
import type { AioCommandStatus } from "./aio.ts";
import type { FaultInjector } from "./_faults.ts";
import { encoder, serverTimer, signalGroup } from "./_common.ts";

/** What the routes of the AIO test server share. */
export interface AioState {
  /** The sessions' default working directory. */
  readonly home: string;
  /** Honour `Range` on downloads. */
  readonly range: boolean;
  /** The fault injector (the `ignore-sigterm` fault applies to exec). */
  readonly faults: FaultInjector;
  /** The sessions, by id. */
  readonly sessions: Map<string, Session>;
  /** The commands not finished yet. */
  readonly commands: Set<Command>;
}

/** Bytes appended over time, read from any byte offset. */
export class ByteLog {
  #chunks: Uint8Array[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  slice(start: number, end = this.#length): Uint8Array {
    const out = new Uint8Array(Math.max(0, end - start));
    let position = 0;
    let written = 0;
    for (const chunk of this.#chunks) {
      const chunkEnd = position + chunk.length;
      if (chunkEnd > start && position < end) {
        const from = Math.max(0, start - position);
        const to = Math.min(chunk.length, end - position);
        out.set(chunk.subarray(from, to), written);
        written += to - from;
      }
      position = chunkEnd;
      if (position >= end) break;
    }
    return out;
  }
}

/** The end of the longest prefix of `bytes` that does not cut a UTF-8 character. */
export function utf8Boundary(bytes: Uint8Array): number {
  let i = bytes.length;
  // Step back over at most 3 continuation bytes to the lead byte.
  let back = 0;
  while (back < 3 && i - back - 1 >= 0) {
    const b = bytes[i - back - 1]!;
    if ((b & 0xc0) !== 0x80) break;
    back++;
  }
  const leadIndex = i - back - 1;
  if (leadIndex < 0) return i;
  const lead = bytes[leadIndex]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (need > back + 1) i = leadIndex;
  return i;
}

/** Middle truncation in characters, as the server's `max_output_length` does. */
export function truncateMiddle(text: string, max: number): string {
  if (max <= 0) return text;
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const head = Math.ceil(max / 2);
  const tail = max - head;
  const omitted = chars.length - max;
  return chars.slice(0, head).join("") +
    `\n... [${omitted} characters truncated] ...\n` +
    (tail > 0 ? chars.slice(chars.length - tail).join("") : "");
}

/** A command run as `bash -c` in its own process group. */
export class Command {
  readonly id = crypto.randomUUID();
  status: AioCommandStatus = "pending";
  exitCode: number | null = null;
  readonly stdout = new ByteLog();
  readonly stderr = new ByteLog();
  child: Deno.ChildProcess | null = null;
  #waiters = new Set<() => void>();
  #hardTimer: ReturnType<typeof setTimeout> | undefined;
  finished: Promise<void> = Promise.resolve();
  /** Set by kill or hard timeout before the process ends. */
  stopReason: "killed" | "timed_out" | null = null;

  constructor(readonly command: string, readonly sessionId: string) {}

  get done(): boolean {
    return this.status !== "pending" && this.status !== "running";
  }

  start(
    cwd: string,
    env: Record<string, string>,
    hardTimeoutS: number | null,
  ): void {
    try {
      this.child = new Deno.Command("bash", {
        args: ["-c", this.command],
        cwd,
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (error) {
      this.stderr.push(
        encoder.encode(`bash: ${(error as Error).message}\n`),
      );
      this.status = "killed";
      this.#notify();
      return;
    }
    this.status = "running";
    const child = this.child;
    const pump = async (
      stream: ReadableStream<Uint8Array>,
      log: ByteLog,
    ): Promise<void> => {
      try {
        for await (const chunk of stream) {
          log.push(chunk.slice());
          this.#notify();
        }
      } catch {
        // The stream broke (process killed): what arrived stays.
      }
    };
    const pumps = Promise.all([
      pump(child.stdout, this.stdout),
      pump(child.stderr, this.stderr),
    ]);
    this.#hardTimer = serverTimer(
      hardTimeoutS,
      () => this.kill("SIGKILL", "timed_out"),
    );
    this.finished = (async () => {
      const status = await child.status;
      // A killed group closes its pipes; a background job that escaped
      // keeps them open: stop reading a moment after the leader is gone.
      await Promise.race([pumps, new Promise((r) => setTimeout(r, 200))]);
      clearTimeout(this.#hardTimer);
      if (this.stopReason) {
        this.status = this.stopReason;
        this.exitCode = status.signal ? null : status.code;
      } else {
        this.status = "completed";
        this.exitCode = status.signal
          ? 128 + signalNumber(status.signal)
          : status.code;
      }
      this.#notify();
    })();
  }

  kill(signal: Deno.Signal, reason: "killed" | "timed_out"): boolean {
    if (this.done || !this.child) return false;
    this.stopReason ??= reason;
    if (!signalGroup(this.child.pid, signal)) return false;
    if (signal !== "SIGKILL") {
      // A process that ignores the signal still goes, a moment later.
      setTimeout(() => {
        if (!this.done && this.child) signalGroup(this.child.pid, "SIGKILL");
      }, 2000);
    }
    return true;
  }

  /** Resolves on new output or the end, or after `ms`. */
  waitForChange(ms: number): Promise<void> {
    if (this.done) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /** Resolves when the command ends, or after `ms`. */
  async waitForEnd(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.done) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.waitForChange(left);
    }
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  info(): Record<string, unknown> {
    return {
      command_id: this.id,
      command: this.command,
      status: this.status,
      exit_code: this.exitCode,
    };
  }
}

function signalNumber(signal: Deno.Signal): number {
  const numbers: Partial<Record<Deno.Signal, number>> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGKILL: 9,
    SIGTERM: 15,
    SIGPIPE: 13,
  };
  return numbers[signal] ?? 1;
}

/** A shell session: its folder and its commands. */
export interface Session {
  readonly id: string;
  readonly createdAt: Date;
  lastUsedAt: Date;
  execDir: string;
  current: Command | null;
  readonly commands: Map<string, Command>;
}
