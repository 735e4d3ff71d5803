/**
 * Output of a server that splits it into lines: one event per line with
 * its newline stripped, a `\r` ending a line too (OpenSandbox's execd; an
 * empty line arrives as `"\n"`). Such a stream cannot tell a last line
 * printed without a newline from one with it, so the command runs under a
 * small bash wrapper ({@linkcode splitLinesCommand}) that writes one
 * newline of its own on each stream at the end, and
 * {@linkcode rejoinLines} turns the lines back into output, dropping that
 * newline: the output comes back exactly, for any kind whose server splits.
 *
 * @module
 */
import { shellQuote } from "./shell.ts";
import type { RemoteStreamEvent } from "./command.ts";

/**
 * What the wrapper prints, on its own line, when a stream's last byte was a
 * `\r`: execd ends a line at a `\r` and swallows the `\n` after it, so the
 * wrapper's own newline could not tell `abc\r` from `abc`.
 */
const TRAILING_CR_MARK = "\u0000skillrun:trailing-cr\u0000";

/**
 * What the wrapper writes on standard error when SIGTERM stops it (the
 * server's interrupt), after its subshell, which outlived its foreground
 * child to reap the rest, reported that child's signal
 * ({@linkcode SIGTERM_REPORT}).
 */
const STOPPED_MARK = "\u0000skillrun:stopped\u0000";
/** bash's report of a foreground child killed by SIGTERM (`j_strsignal`). */
const SIGTERM_REPORT = "Terminated";

/** What the wrapper writes (and its status) when it cannot enter its folder. */
const NO_FOLDER_MARK = "\u0000skillrun:no-folder\u0000";
const NO_FOLDER_STATUS = 1;

/**
 * The command line for a server that splits output into lines. The
 * caller's command runs with `eval` in a subshell of the wrapper (so that
 * `exit` in it still reaches the end), then the wrapper writes one newline
 * on each stream and exits with the command's status. When a stream's last
 * byte was a `\r` (read back from the server's output file), a mark is
 * written instead of the newline.
 *
 * On SIGTERM (a server that signals the whole group), each shell first
 * waits for its own children and only then dies of the signal: every
 * process of the group is reaped by its parent, none is left to pid 1 as a
 * zombie, which an interrupt polling `kill(-pgid, 0)` would wait for.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { splitLinesCommand } from "./split_lines.ts";
 * assert(splitLinesCommand("echo hi").includes("eval -- 'echo hi'"));
 * assert(splitLinesCommand("true", "/w/a$1").includes("cd -- '/w/a$1'"));
 * ```
 *
 * @param command The caller's command.
 * @param folder A folder the wrapper enters itself (quoted), for one the
 * server cannot take; {@linkcode rejoinLines} then reports a missing one.
 * @returns The command line.
 */
export function splitLinesCommand(command: string, folder?: string): string {
  const enter = folder === undefined
    ? ""
    : `{ cd -- ${
      shellQuote(folder)
    } 2>/dev/null || { printf '\\000skillrun:no-folder\\000' >&2; exit ${NO_FOLDER_STATUS}; }; } && `;
  const end = (fd: 1 | 2) =>
    `if [ -f /proc/$$/fd/${fd} ] && [ -s /proc/$$/fd/${fd} ] && [ "$(tail -c 1 /proc/$$/fd/${fd} | tr -d '\\000')" = "$(printf '\\r')" ]; then printf '\\000skillrun:trailing-cr\\000\\n'${
      fd === 2 ? " >&2" : ""
    }; else printf '\\n'${fd === 2 ? " >&2" : ""}; fi`;
  return [
    `__skillrun_stopped() { printf '\\000skillrun:stopped\\000\\n' >&2; trap - TERM; kill -TERM $$; }`,
    `trap __skillrun_stopped TERM`,
    `(trap 'wait; exit 143' TERM; ${enter}eval -- ${shellQuote(command)})`,
    `__skillrun_status=$?`,
    end(1),
    end(2),
    `exit "$__skillrun_status"`,
  ].join("\n");
}

/**
 * An event of a splitting server, as {@linkcode rejoinLines} takes it: the
 * id, one line of a stream (`undefined`: none), or the exit.
 */
export type SplitLineEvent =
  | Exclude<RemoteStreamEvent, { type: "stdout" | "stderr" }>
  | {
    /** The stream. */
    readonly type: "stdout" | "stderr";
    /** One line, its newline stripped (an empty line as `"\n"`). */
    readonly line: string | undefined;
  };

/**
 * The output of a command run with {@linkcode splitLinesCommand}, rejoined:
 * each line's newline is held back until the next line or the exit, where
 * the wrapper's own is dropped (a process killed by a signal, exit code
 * `-1`, never wrote it: every newline is kept then). The wrapper's marks
 * are taken out. Ends after the exit.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { rejoinLines } from "./split_lines.ts";
 * const out = [];
 * for await (const event of rejoinLines((async function* () {
 *   yield { type: "stdout" as const, line: "a" };
 *   yield { type: "stdout" as const, line: "b" };
 *   yield { type: "stdout" as const, line: "\n" };
 *   yield { type: "exit" as const, exitCode: 0 };
 * })())) out.push(event.type === "stdout" ? event.data : event.type);
 * assertEquals(out.join(""), "a\nb\nexit");
 * ```
 *
 * @param events The server's events.
 * @param options The folder the wrapper entered, and the kind's error for
 * a folder it could not enter (default: a plain `Error`).
 * @returns The kit's events.
 */
export async function* rejoinLines(
  events: AsyncIterable<SplitLineEvent>,
  options: {
    readonly folder?: string | undefined;
    readonly error?: (message: string) => Error;
  } = {},
): AsyncGenerator<RemoteStreamEvent> {
  const lines = { stdout: new JoinedLines(), stderr: new JoinedLines() };
  for await (const event of events) {
    if (event.type === "id") {
      yield event;
      continue;
    }
    if (event.type !== "exit") {
      for (const data of lines[event.type].line(event.line)) {
        yield { type: event.type, data };
      }
      continue;
    }
    for (const type of ["stdout", "stderr"] as const) {
      for (const data of lines[type].end(event.exitCode !== -1)) {
        yield { type, data };
      }
    }
    const { folder } = options;
    if (
      !event.failure && folder !== undefined &&
      event.exitCode === NO_FOLDER_STATUS &&
      lines.stderr.text === NO_FOLDER_MARK && lines.stdout.text === ""
    ) {
      // The wrapper could not enter the folder the server could not take.
      const message =
        `Cannot run the command in "${folder}": the sandbox refused it: the working directory does not exist or is not a folder`;
      yield {
        ...event,
        failure: options.error?.(message) ?? new Error(message),
      };
    } else {
      yield event;
    }
    return;
  }
}

/**
 * One stream's lines rejoined (see {@linkcode rejoinLines}). The first bytes
 * are kept in `text` (to recognise the wrapper's own marks).
 */
class JoinedLines {
  #pendingNewline = false;
  /** A line held back until the next one tells what it was (see `line`). */
  #held: string | undefined;
  /** The start of what was given out. */
  text = "";

  line(text: string | undefined): string[] {
    const out: string[] = [];
    if (text === undefined) return out;
    if (text === STOPPED_MARK) {
      // The wrapper was stopped (SIGTERM): the shell's own report of its
      // child's signal just before is not the command's output.
      if (this.#held === SIGTERM_REPORT) this.#held = undefined;
      else this.#release(out);
      return out;
    }
    this.#release(out);
    if (text === TRAILING_CR_MARK || text === SIGTERM_REPORT) {
      // Held: the wrapper's mark only when nothing follows it; the shell's
      // report only when the wrapper's stop mark follows it.
      this.#held = text;
      return out;
    }
    this.#emit(text, out);
    return out;
  }

  /**
   * Ends the stream: with the wrapper's newline dropped (its mark says the
   * last line ended with `\r`, which the kit makes a line end), or every
   * newline kept.
   */
  end(dropLastNewline: boolean): string[] {
    const out: string[] = [];
    if (this.#held === TRAILING_CR_MARK && dropLastNewline) {
      this.#held = undefined;
      this.#pendingNewline = false;
      this.#give("\r", out);
      return out;
    }
    this.#release(out);
    if (this.#pendingNewline && !dropLastNewline) this.#give("\n", out);
    this.#pendingNewline = false;
    return out;
  }

  #emit(text: string, out: string[]): void {
    if (this.#pendingNewline) this.#give("\n", out);
    if (text !== "\n" && text !== "") this.#give(text, out);
    this.#pendingNewline = true;
  }

  /** A held line that turned out to be the command's own text. */
  #release(out: string[]): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    this.#emit(held, out);
  }

  #give(text: string, out: string[]): void {
    if (this.text.length < 64) this.text += text;
    out.push(text);
  }
}
