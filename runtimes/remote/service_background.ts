/**
 * Background commands of a service's own facility that names a command at
 * its start and then answers polls of its status and of its log by that id
 * (OpenSandbox's execd; Daytona's session commands are alike): the shell
 * line such a command runs as ({@linkcode backgroundCommandLine}, read back
 * by {@linkcode commandOfLine}), its start read to the service's word that
 * it runs ({@linkcode launchedBackground}), and its polls
 * ({@linkcode serviceBackground}, on the kit's `PolledBackground`), which
 * bear with a service that registers the command a moment after naming it.
 *
 * @module
 */
import type { BackgroundProcess } from "../types.ts";
import type { StartedRemoteCommand } from "./command.ts";
import { PolledBackground } from "./polled_background.ts";
import { shellQuote } from "./shell.ts";

/**
 * The shell line of a background command: the command run with `eval` (a
 * leading `-` stays a command), after entering `folder` when given (one
 * the service cannot take; `exit 1` when missing), and on SIGTERM (a
 * service that signals the group) waiting for its children so that none is
 * left to pid 1 as a zombie, which an interrupt polling the group would
 * wait for.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { backgroundCommandLine, commandOfLine } from "./service_background.ts";
 * const line = backgroundCommandLine("echo 'hi'", "/w/$x");
 * assertEquals(commandOfLine(line), "echo 'hi'");
 * ```
 *
 * @param command The caller's command.
 * @param folder A folder the line enters itself.
 * @returns The line.
 */
export function backgroundCommandLine(
  command: string,
  folder?: string,
): string {
  const enter = folder === undefined
    ? ""
    : `cd -- ${shellQuote(folder)} || exit 1\n`;
  return `trap 'wait; exit 143' TERM\n${enter}eval -- ${shellQuote(command)}`;
}

/**
 * The caller's command of a line made by {@linkcode backgroundCommandLine}
 * (as the service reports it); any other line as it is.
 *
 * @param line The line.
 * @returns The command.
 */
export function commandOfLine(line: string): string {
  const evaluated = /\neval -- ([\s\S]*)$/.exec(line)?.[1];
  if (evaluated === undefined) return line;
  return /^'[\s\S]*'$/.test(evaluated)
    ? evaluated.slice(1, -1).replaceAll("'\\''", "'")
    : evaluated;
}

/**
 * Reads a background command's start to its end (the service names the
 * command, then says it is launched, or that it could not start it): on a
 * failure the command is killed and the failure thrown.
 *
 * @param started The command as the kind's start named it; its exit event
 * is the launch (a `failure` on it: not started).
 * @param kill Kills a command by its id.
 * @param broken The kind's error for a start stream that broke after the
 * id; `undefined` to throw the stream's own error, nothing killed.
 * @returns The command's id.
 */
export async function launchedBackground(
  started: StartedRemoteCommand,
  kill: (id: string) => Promise<void>,
  broken: (cause: unknown) => Error | undefined = () => undefined,
): Promise<string> {
  let failure: Error | undefined;
  try {
    for await (const event of started.events) {
      if (event.type === "exit") {
        failure = event.failure;
        break;
      }
    }
  } catch (error) {
    failure = broken(error);
    if (failure === undefined) throw error;
  }
  if (failure !== undefined) {
    await kill(started.id).catch(() => {});
    throw failure;
  }
  return started.id;
}

/** What a service answers for {@linkcode serviceBackground}. */
export interface ServiceBackgroundCalls {
  /** The command's state; `killed`: a signal ended it. */
  status(): Promise<
    {
      running: boolean;
      exitCode?: number | null | undefined;
      killed?: boolean;
    }
  >;
  /**
   * The log written since `cursor` (streamed) and the next cursor when the
   * service says it.
   */
  logs(
    cursor: number,
  ): Promise<{ body: ReadableStream<Uint8Array> | null; next?: number }>;
  /** Stops the command. */
  kill(): Promise<void>;
  /** Whether an error says the service does not know the command. */
  unknown(error: unknown): boolean;
}

/**
 * A service's background command read by polls (state, then the log from a
 * cursor): for `registerGraceMs` after `startedAt`, a call the service
 * answers with "unknown" reads as running without output. A command killed
 * by a signal once its timeout had passed reads as timed out.
 *
 * @example A command that ends at its first poll
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serviceBackground } from "./service_background.ts";
 * const command = serviceBackground("c1", {
 *   status: () => Promise.resolve({ running: false, exitCode: 3 }),
 *   logs: () => Promise.resolve({ body: null }),
 *   kill: () => Promise.resolve(),
 *   unknown: () => false,
 * }, { timeoutMs: 1000 });
 * assertEquals(await command.poll(), { running: false, exitCode: 3 });
 * ```
 *
 * @param id The service's id of the command.
 * @param calls The service's calls.
 * @param options The command's timeout (`Infinity`: unknown), its start
 * (default now; `0` for one found later: no grace), the grace (default
 * 5 s), and where the output goes.
 * @returns The command.
 */
export function serviceBackground(
  id: string,
  calls: ServiceBackgroundCalls,
  options: {
    readonly timeoutMs: number;
    readonly startedAt?: number;
    readonly registerGraceMs?: number;
    readonly onOutput?: ((chunk: Uint8Array) => void) | undefined;
  },
): BackgroundProcess {
  const startedAt = options.startedAt ?? Date.now();
  const graceMs = options.registerGraceMs ?? 5_000;
  const known = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (calls.unknown(error) && Date.now() - startedAt < graceMs) {
        return undefined;
      }
      throw error;
    }
  };
  return new PolledBackground(id, {
    state: async () => {
      const status = await known(() => calls.status());
      if (!status) return undefined;
      if (status.running) return { running: true };
      const exitCode = typeof status.exitCode === "number"
        ? status.exitCode
        : -1;
      return {
        running: false,
        exitCode,
        ...(exitCode === -1 && status.killed &&
            Date.now() - startedAt >= options.timeoutMs
          ? { timedOut: true }
          : {}),
      };
    },
    output: (cursor) => known(() => calls.logs(cursor)),
    kill: () => calls.kill(),
  }, options.onOutput);
}
