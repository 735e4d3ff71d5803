/**
 * Background commands of a service's own facility that names a command at
 * its start and then answers polls of its status and of its log by that id
 * (OpenSandbox's execd; Daytona's session commands are alike): the shell
 * line such a command runs as ({@linkcode backgroundCommandLine}, read back
 * by {@linkcode commandOfLine}), its start read to the service's word that
 * it runs ({@linkcode launchedBackground}), and a session's background hooks
 * ({@linkcode serviceBackgroundHooks}: polls on the kit's `PolledBackground`,
 * which bear with a service that registers the command a moment after
 * naming it).
 *
 * @module
 */
import type { BackgroundProcess } from "../types.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { StartedRemoteCommand } from "./command.ts";
import type { RemoteCommand, RemoteSession } from "./runtime.ts";
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
 * A service's own timeout for a background command: its whole life, at
 * least 1 ms; none at the longest timeout (no deadline).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { backgroundTimeoutMs } from "./service_background.ts";
 * assertEquals(backgroundTimeoutMs(0.2), 1);
 * assertEquals(backgroundTimeoutMs(2 ** 31 - 1), undefined);
 * ```
 *
 * @param timeoutMs The command's timeout, in ms.
 * @returns The service's, in ms.
 */
export function backgroundTimeoutMs(timeoutMs: number): number | undefined {
  return timeoutMs < MAX_EXECUTE_TIMEOUT_MS
    ? Math.max(1, Math.ceil(timeoutMs))
    : undefined;
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

/** A command's state as a service answers it; `killed`: a signal ended it. */
export interface ServiceBackgroundStatus {
  /** Whether it still runs. */
  readonly running: boolean;
  /** Its exit code once ended (none: `-1`). */
  readonly exitCode?: number | null | undefined;
  /** Whether a signal ended it. */
  readonly killed?: boolean;
  /** Its command line as started (what a runtime that attaches reports). */
  readonly command?: string;
  /** When it started, when the service says. */
  readonly startedAt?: Date | null;
}

/**
 * A service's background facility, by command id, for
 * {@linkcode serviceBackgroundHooks}.
 */
export interface ServiceBackgroundKind {
  /**
   * Starts a command (never retried) as the command protocol does: the
   * service names it, then its exit event says it was launched (a
   * `failure` on it: not started); see {@linkcode launchedBackground}.
   */
  start(request: RemoteCommand): Promise<StartedRemoteCommand>;
  /**
   * The kind's error for a start stream that broke after the id;
   * `undefined` (the default) throws the stream's own, nothing killed.
   */
  broken?(cause: unknown): Error | undefined;
  /** The command's state. */
  status(id: string): Promise<ServiceBackgroundStatus>;
  /**
   * The log written since `cursor` (streamed) and the next cursor when the
   * service says it.
   */
  logs(
    id: string,
    cursor: number,
  ): Promise<{ body: ReadableStream<Uint8Array> | null; next?: number }>;
  /** Stops the command. */
  kill(id: string): Promise<void>;
  /**
   * Whether a status or log call's error says the service does not know
   * the command (yet: some register it a moment after naming it).
   */
  unknown(error: unknown): boolean;
  /**
   * Whether an error of the status call made to attach to a command by its
   * id says the service does not know it. Default {@linkcode unknown}.
   */
  absent?(error: unknown): boolean;
  /** The shape of the service's ids: any other id is not looked up. */
  readonly idPattern?: RegExp;
  /** How long after its start a command may be unknown, in ms. Default 5 000. */
  readonly registerGraceMs?: number;
}

/**
 * A session's `startBackground` and `attachBackground` over a service's own
 * background facility: each command read by polls (its state, then its log
 * from a cursor, on the kit's `PolledBackground`; the output goes to the
 * command's `onStdout`). A call the service answers with "unknown" soon
 * after the start reads as running without output; a command killed by a
 * signal once its timeout had passed reads as timed out. A command another
 * runtime started is found by its id through its status (its command line
 * and start); it never reads as timed out (its timeout is not known).
 *
 * @example A command that ends at its first poll
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serviceBackgroundHooks } from "./service_background.ts";
 * const hooks = serviceBackgroundHooks({
 *   start: () => Promise.resolve({
 *     id: "c1",
 *     events: (async function* () {
 *       yield { type: "exit" as const, exitCode: 0 };
 *     })(),
 *   }),
 *   status: () => Promise.resolve({ running: false, exitCode: 3 }),
 *   logs: () => Promise.resolve({ body: null }),
 *   kill: () => Promise.resolve(),
 *   unknown: () => false,
 * });
 * const command = await hooks.startBackground({
 *   command: "exit 3", cwd: "/", env: {}, timeoutMs: 1000, maxOutputBytes: 1024,
 * });
 * assertEquals([command.id, await command.poll()], ["c1", { running: false, exitCode: 3 }]);
 * ```
 *
 * @param kind The service's calls.
 * @returns The two hooks.
 */
export function serviceBackgroundHooks(
  kind: ServiceBackgroundKind,
): Required<Pick<RemoteSession, "startBackground" | "attachBackground">> {
  return {
    startBackground: async (request) =>
      polled(
        kind,
        await launchedBackground(
          await kind.start(request),
          (id) => kind.kill(id),
          kind.broken?.bind(kind),
        ),
        {
          timeoutMs: request.timeoutMs,
          startedAt: Date.now(),
          onOutput: request.onStdout,
        },
      ),
    attachBackground: async (id, sinks) => {
      if (kind.idPattern && !kind.idPattern.test(id)) return undefined;
      let status: ServiceBackgroundStatus;
      try {
        status = await kind.status(id);
      } catch (error) {
        if ((kind.absent ?? kind.unknown).call(kind, error)) return undefined;
        throw error;
      }
      return {
        command: status.command ?? "",
        startedAt: status.startedAt ?? new Date(),
        process: polled(kind, id, {
          timeoutMs: Infinity,
          startedAt: 0,
          onOutput: sinks.onStdout,
        }),
      };
    },
  };
}

function polled(
  kind: ServiceBackgroundKind,
  id: string,
  options: {
    readonly timeoutMs: number;
    readonly startedAt: number;
    readonly onOutput: ((chunk: Uint8Array) => void) | undefined;
  },
): BackgroundProcess {
  const { startedAt } = options;
  const graceMs = kind.registerGraceMs ?? 5_000;
  const known = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (kind.unknown(error) && Date.now() - startedAt < graceMs) {
        return undefined;
      }
      throw error;
    }
  };
  return new PolledBackground(id, {
    state: async () => {
      const status = await known(() => kind.status(id));
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
    output: (cursor) => known(() => kind.logs(id, cursor)),
    kill: () => kind.kill(id),
  }, options.onOutput);
}
