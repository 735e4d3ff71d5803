/**
 * The client of the Vercel Sandbox API, as the open-source SDK
 * (`@vercel/sandbox`) speaks it: named sandboxes and their sessions,
 * commands with NDJSON logs, files as a gzipped tar. See
 * `tests/servers/vercel.md` for the wire facts relied on.
 *
 * @module
 */
import {
  namedCommand,
  type RemoteCommandKind,
  type RemoteCommandStart,
  runRemoteCommand,
  type StartedRemoteCommand,
} from "../remote/command.ts";
import { HttpClient } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import {
  httpOptionsOf,
  jsonOrNull,
  sendCall,
} from "../remote/service_calls.ts";
import type { RemoteUploadFile } from "../remote/fs.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import { sessionBashArgs } from "../remote/shell.ts";
import { readJsonEvents, tarOfFiles } from "../remote/streams.ts";
import type { ExecuteResult } from "../types.ts";

/** The Vercel API. */
export const VERCEL_API_URL = "https://vercel.com/api";

/** A sandbox as the API describes it, with its current session. */
export interface VercelSandbox {
  /** Its name (the sandbox's id). */
  readonly id: string;
  /** When its current session stops, or `null` when unknown. */
  readonly expiresAt: Date | null;
  /** The current session's id. */
  readonly sessionId: string;
  /** `pending`, `running`, `stopping`, `stopped`, `failed`, ... */
  readonly status: string;
  /** Whether its files are snapshotted when stopped (and resumed). */
  readonly persistent: boolean;
}

/** What a sandbox the runtime creates is made of. */
export interface VercelSandboxSpec {
  /** The runtime image, e.g. `node24` or `python3.13` (service default otherwise). */
  readonly runtime?: string;
  /** vCPUs (2048 MB of memory each). */
  readonly vcpus?: number;
  /** Lifetime in seconds, extended while used. Default 600. */
  readonly timeoutSeconds?: number;
  /** The network policy, sent as given (`{mode: "deny-all"}`, `{allow: [...]}`). */
  readonly networkPolicy?: Readonly<Record<string, unknown>>;
  /** Environment of every command. */
  readonly env?: Readonly<Record<string, string>>;
  /** Tags (at most a few, strings). */
  readonly tags?: Readonly<Record<string, string>>;
}

/** Options of {@linkcode VercelApiClient}. */
export interface VercelApiClientOptions {
  /** The API. Default {@linkcode VERCEL_API_URL}. */
  readonly baseUrl?: string;
  /** The API key (an access token, sent as `Authorization: Bearer`); never shown in errors. */
  readonly apiKey?: string;
  /** The team (`?teamId=` on every call). */
  readonly teamId?: string;
  /** The project sandboxes belong to. */
  readonly projectId?: string;
  /** The `fetch` to use. */
  readonly fetch?: typeof fetch;
  /** The deadline of a call, in ms. */
  readonly timeoutMs?: number;
}

/**
 * The Vercel Sandbox API over `fetch`.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { VercelApiClient } from "./api.ts";
 * const api = new VercelApiClient({ apiKey: "t", teamId: "team_1", projectId: "prj_1" });
 * assertEquals(api.baseUrl, "https://vercel.com/api");
 * ```
 */
export class VercelApiClient {
  /** The API's base URL. */
  readonly baseUrl: string;
  readonly #http: HttpClient;
  readonly #teamId: string | undefined;
  readonly #projectId: string | undefined;

  /**
   * Makes the client; makes no request.
   *
   * @param options URL, token, team, project, fetch.
   */
  constructor(options: VercelApiClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? VERCEL_API_URL).replace(/\/+$/, "");
    this.#teamId = options.teamId;
    this.#projectId = options.projectId;
    this.#http = new HttpClient({
      baseUrl: this.baseUrl,
      headers: options.apiKey !== undefined
        ? { authorization: `Bearer ${options.apiKey}` }
        : {},
      ...httpOptionsOf(options),
    });
  }

  #query(extra: Record<string, string | undefined> = {}) {
    return { teamId: this.#teamId, ...extra };
  }

  /**
   * Creates a sandbox (`POST /v3/sandboxes`, `/v2/sandboxes` with a runtime).
   *
   * @param spec What it is made of.
   * @param persistent Whether its files are kept across stops.
   * @param signal Stops the call.
   * @returns The sandbox.
   */
  async create(
    spec: VercelSandboxSpec,
    persistent: boolean,
    signal?: AbortSignal,
  ): Promise<VercelSandbox> {
    const answer = await this.#http.json<Answer>({
      method: "POST",
      path: spec.runtime === undefined ? "/v3/sandboxes" : "/v2/sandboxes",
      query: this.#query(),
      json: {
        projectId: this.#projectId,
        timeout: (spec.timeoutSeconds ?? 600) * 1000,
        ...(spec.vcpus !== undefined
          ? { resources: { vcpus: spec.vcpus } }
          : {}),
        ...(spec.runtime !== undefined ? { runtime: spec.runtime } : {}),
        ...(spec.networkPolicy ? { networkPolicy: spec.networkPolicy } : {}),
        ...(spec.env ? { env: spec.env } : {}),
        ...(spec.tags ? { tags: spec.tags } : {}),
        persistent,
      },
      idempotent: false,
      ...(signal ? { signal } : {}),
    });
    return sandboxOf(answer);
  }

  /**
   * Describes a sandbox (`GET /v2/sandboxes/{name}`), resuming a stopped one
   * with `resume`; `null` when unknown.
   *
   * @param name The sandbox.
   * @param resume Whether to start a new session of a stopped sandbox.
   * @param signal Stops the call.
   * @returns The sandbox.
   */
  async get(
    name: string,
    resume: boolean,
    signal?: AbortSignal,
  ): Promise<VercelSandbox | null> {
    const answer = await jsonOrNull<Answer>(this.#http, {
      method: "GET",
      path: `/v2/sandboxes/${encodeURIComponent(name)}`,
      query: this.#query({
        projectId: this.#projectId,
        ...(resume ? { resume: "true" } : {}),
      }),
      ...(signal ? { signal } : {}),
    });
    return answer && sandboxOf(answer);
  }

  /**
   * Deletes a sandbox; one already gone is no error.
   *
   * @param name The sandbox.
   * @param signal Stops the call.
   * @returns Whether it was there.
   */
  delete(name: string, signal?: AbortSignal): Promise<boolean> {
    return sendCall(this.#http, {
      method: "DELETE",
      path: `/v2/sandboxes/${encodeURIComponent(name)}`,
      query: this.#query({ projectId: this.#projectId }),
      ...(signal ? { signal } : {}),
    }, [404]);
  }

  /**
   * Stops a session (`POST .../sessions/{id}/stop`): a persistent sandbox
   * is snapshotted and resumes later.
   *
   * @param sessionId The session.
   * @param signal Stops the call.
   * @returns When stopped.
   */
  async stop(sessionId: string, signal?: AbortSignal): Promise<void> {
    await sendCall(this.#http, {
      method: "POST",
      path: `/v2/sandboxes/sessions/${encodeURIComponent(sessionId)}/stop`,
      query: this.#query(),
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * Extends a session's timeout by `durationMs`.
   *
   * @param sessionId The session.
   * @param durationMs How much longer.
   * @param signal Stops the call.
   * @returns The new end of the session.
   */
  async extendTimeout(
    sessionId: string,
    durationMs: number,
    signal?: AbortSignal,
  ): Promise<Date | null> {
    const answer = await this.#http.json<{ session: Session }>({
      method: "POST",
      path: `/v2/sandboxes/sessions/${
        encodeURIComponent(sessionId)
      }/extend-timeout`,
      query: this.#query(),
      json: { duration: Math.max(1, Math.ceil(durationMs)) },
      idempotent: false,
      ...(signal ? { signal } : {}),
    });
    return sessionEnd(answer.session);
  }

  /**
   * How a session runs commands for the kit's {@linkcode runRemoteCommand}:
   * `POST .../cmd` with `wait: true` (NDJSON logs) named by the command of
   * its first line, killed with SIGTERM, the service's own `timeout` 5 s
   * after ours.
   *
   * @param sessionId The session.
   * @returns The kind's commands.
   */
  commands(sessionId: string): RemoteCommandKind {
    const session = `/v2/sandboxes/sessions/${encodeURIComponent(sessionId)}`;
    return {
      backstopMs: 5_000,
      start: (request) => this.#start(session, request),
      kill: (id) =>
        this.#http.request({
          method: "POST",
          path: `${session}/cmd/${encodeURIComponent(id)}/kill`,
          query: this.#query(),
          json: { signal: 15 },
          idempotent: true,
        }).then((r) => r.body?.cancel()),
      broken: (cause) =>
        cause === undefined
          ? new Error(
            "Cannot run the command: the log stream ended before the command finished; it was killed",
          )
          : new Error(
            `Cannot run the command: ${
              cause instanceof Error ? cause.message : String(cause)
            }; it was killed`,
            { cause },
          ),
    };
  }

  /**
   * Runs one command (`POST .../cmd` with `wait: true`, NDJSON logs) to its
   * end, the deadline or the caller's signal; on the last two the command is
   * killed (`SIGTERM`, its whole session stops). Never retried.
   *
   * @param sessionId The session.
   * @param request The command.
   * @returns The result.
   */
  run(sessionId: string, request: RemoteCommand): Promise<ExecuteResult> {
    return runRemoteCommand(this.commands(sessionId), request);
  }

  async #start(
    session: string,
    request: RemoteCommandStart,
  ): Promise<StartedRemoteCommand> {
    const response = await this.#http.request({
      method: "POST",
      path: `${session}/cmd`,
      query: this.#query(),
      json: {
        command: "bash",
        args: sessionBashArgs(request.command),
        cwd: request.cwd,
        env: request.env,
        wait: true,
        timeout: request.serverTimeoutMs,
      },
      idempotent: false,
      timeoutMs: null,
      signal: request.signal,
    });
    const body = response.body;
    if (!body) {
      throw new Error("Cannot run the command: the answer has no body");
    }
    return await namedCommand((async function* () {
      for await (
        const line of readJsonEvents(
          body,
          (text) => JSON.parse(text) as Record<string, unknown>,
        )
      ) {
        const command = line.command as
          | { id?: string; exitCode?: number | null }
          | undefined;
        if (command) {
          if (typeof command.id === "string") {
            yield { type: "id", id: command.id };
          }
          if (typeof command.exitCode === "number") {
            yield { type: "exit", exitCode: command.exitCode };
          }
        } else if (line.stream === "stdout" || line.stream === "stderr") {
          yield {
            type: line.stream,
            data: typeof line.data === "string" ? line.data : "",
          };
        } else if (line.stream === "error") {
          const error = line.data as { code?: string; message?: string };
          throw new Error(`${error?.code}: ${error?.message}`);
        }
      }
    })());
  }

  /**
   * Opens a file (`POST .../fs/read`): the whole file (the API has no
   * ranges).
   *
   * @param sessionId The session.
   * @param path An absolute POSIX path.
   * @param signal Stops the call.
   * @returns The response (404 is thrown as `Deno.errors.NotFound`).
   */
  async read(
    sessionId: string,
    path: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    try {
      return await this.#http.request({
        method: "POST",
        path: `/v2/sandboxes/sessions/${encodeURIComponent(sessionId)}/fs/read`,
        query: this.#query(),
        json: { path, cwd: "/" },
        idempotent: true,
        timeoutMs: null,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (error instanceof RemoteHttpError && error.status === 404) {
        throw new Deno.errors.NotFound(`Cannot read "${path}": no such file`);
      }
      throw error;
    }
  }

  /**
   * Writes files (`POST .../fs/write`): one gzipped tar streamed as it is
   * made, entries named relative to `/` (`x-cwd: /`), regular files only,
   * each with its mode (0644 when none is given).
   *
   * @param sessionId The session.
   * @param files The files.
   * @param signal Stops the upload.
   * @returns When written.
   */
  async write(
    sessionId: string,
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    const tar = tarOfFiles(files, {
      gzip: true,
      ...(signal ? { signal } : {}),
    });
    let response: Response;
    try {
      response = await this.#http.request({
        method: "POST",
        path: `/v2/sandboxes/sessions/${
          encodeURIComponent(sessionId)
        }/fs/write`,
        query: this.#query(),
        headers: { "content-type": "application/gzip", "x-cwd": "/" },
        body: tar.body,
        idempotent: false,
        timeoutMs: null,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      await tar.stop();
      throw error;
    }
    await response.body?.cancel();
    await tar.fed;
  }
}

interface Session {
  id: string;
  status: string;
  timeout?: number;
  startedAt?: number;
  createdAt?: number;
}

interface Answer {
  sandbox: {
    name: string;
    persistent?: boolean;
    currentSessionId: string;
    status: string;
  };
  session?: Session;
}

function sessionEnd(session: Session | undefined): Date | null {
  if (!session?.timeout) return null;
  const start = session.startedAt ?? session.createdAt;
  return start === undefined ? null : new Date(start + session.timeout);
}

function sandboxOf(answer: Answer): VercelSandbox {
  const sandbox = answer?.sandbox;
  if (typeof sandbox?.name !== "string") {
    throw new Error("Cannot use the Vercel answer: it names no sandbox");
  }
  return {
    id: sandbox.name,
    expiresAt: sessionEnd(answer.session),
    sessionId: answer.session?.id ?? sandbox.currentSessionId,
    status: answer.session?.status ?? sandbox.status,
    persistent: sandbox.persistent === true,
  };
}
