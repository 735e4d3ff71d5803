/**
 * The client of the Vercel Sandbox API, as the open-source SDK
 * (`@vercel/sandbox`) speaks it: named sandboxes and their sessions,
 * commands with NDJSON logs, files as a gzipped tar. See
 * `tests/servers/vercel.md` for the wire facts relied on.
 *
 * @module
 */
import { createTarPacker } from "modern-tar";
import { TextLineStream as StdTextLineStream } from "@std/streams/text-line-stream";
import {
  namedCommand,
  type RemoteCommandKind,
  type RemoteCommandStart,
  runRemoteCommand,
  type StartedRemoteCommand,
} from "../remote/command.ts";
import { HttpClient } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { RemoteUploadFile } from "../remote/fs.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import { sessionBashArgs } from "../remote/shell.ts";
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

/** How far the tar being made may run ahead of the request, in bytes. */
const WRITE_WINDOW = 8 * 1024 * 1024;
/** Files up to this size go into the tar in one read. */
const WHOLE_FILE_BYTES = 1024 * 1024;

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
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.timeoutMs !== undefined
        ? { timeoutMs: options.timeoutMs }
        : {}),
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
    try {
      const answer = await this.#http.json<Answer>({
        method: "GET",
        path: `/v2/sandboxes/${encodeURIComponent(name)}`,
        query: this.#query({
          projectId: this.#projectId,
          ...(resume ? { resume: "true" } : {}),
        }),
        ...(signal ? { signal } : {}),
      });
      return sandboxOf(answer);
    } catch (error) {
      if (error instanceof RemoteHttpError && error.status === 404) return null;
      throw error;
    }
  }

  /**
   * Deletes a sandbox; one already gone is no error.
   *
   * @param name The sandbox.
   * @param signal Stops the call.
   * @returns Whether it was there.
   */
  async delete(name: string, signal?: AbortSignal): Promise<boolean> {
    try {
      const response = await this.#http.request({
        method: "DELETE",
        path: `/v2/sandboxes/${encodeURIComponent(name)}`,
        query: this.#query({ projectId: this.#projectId }),
        ...(signal ? { signal } : {}),
      });
      await response.body?.cancel();
      return true;
    } catch (error) {
      if (error instanceof RemoteHttpError && error.status === 404) {
        return false;
      }
      throw error;
    }
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
    const response = await this.#http.request({
      method: "POST",
      path: `/v2/sandboxes/sessions/${encodeURIComponent(sessionId)}/stop`,
      query: this.#query(),
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
    await response.body?.cancel();
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
      for await (const line of ndjson(body)) {
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
    const { readable, controller } = createTarPacker();
    // What the request has taken of the tar: the feeding waits while more
    // than WRITE_WINDOW bytes are ahead of it, so memory stays bounded.
    let fed = 0;
    let taken = 0;
    let stopped = false;
    let wake: (() => void) | undefined;
    const counted = readable.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, out) {
          taken += chunk.length;
          wake?.();
          out.enqueue(chunk);
        },
      }),
    );
    const feeding = (async () => {
      for (const file of files) {
        signal?.throwIfAborted();
        while (fed - taken > WRITE_WINDOW && !stopped) {
          await new Promise<void>((resolve) => wake = resolve);
        }
        if (stopped) return;
        const content = file.content;
        const size = typeof content === "string"
          ? ENCODER.encode(content).length
          : content instanceof Uint8Array
          ? content.length
          : content.size;
        const entry = controller.add({
          name: file.remotePath.replace(/^\/+/, ""),
          size,
          mode: (file.mode ?? 0o644) & 0o7777,
        });
        fed += 512 + size;
        if (typeof content !== "string" && !(content instanceof Uint8Array)) {
          if (content.size > WHOLE_FILE_BYTES) {
            using opened = await Deno.open(content.path);
            await exactly(opened.readable, content.size, content.path).pipeTo(
              entry,
            );
            continue;
          }
          // Small files whole: one read instead of a stream each.
          const bytes = await Deno.readFile(content.path);
          if (bytes.length < content.size) {
            throw new Error(`"${content.path}" shrank while it was sent`);
          }
          const writer = entry.getWriter();
          await writer.write(bytes.subarray(0, content.size));
          await writer.close();
          continue;
        }
        const writer = entry.getWriter();
        await writer.write(
          typeof content === "string" ? ENCODER.encode(content) : content,
        );
        await writer.close();
      }
      controller.finalize();
    })();
    feeding.catch((error) => controller.error(error));
    let response: Response;
    try {
      response = await this.#http.request({
        method: "POST",
        path: `/v2/sandboxes/sessions/${
          encodeURIComponent(sessionId)
        }/fs/write`,
        query: this.#query(),
        headers: { "content-type": "application/gzip", "x-cwd": "/" },
        body: counted.pipeThrough(
          new CompressionStream("gzip") as unknown as TransformStream<
            Uint8Array,
            Uint8Array
          >,
        ).pipeThrough(rechunk(64 * 1024)),
        idempotent: false,
        timeoutMs: null,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      stopped = true;
      wake?.();
      await feeding.catch(() => {});
      throw error;
    }
    await response.body?.cancel();
    await feeding;
  }
}

/**
 * Gathers small chunks into chunks of about `size` bytes (the compressor
 * writes many small ones; each would be a chunk on the wire).
 */
function rechunk(size: number): TransformStream<Uint8Array, Uint8Array> {
  let buffer = new Uint8Array(size);
  let used = 0;
  return new TransformStream({
    transform(chunk, out) {
      if (used + chunk.length > size && used > 0) {
        out.enqueue(buffer.subarray(0, used));
        buffer = new Uint8Array(size);
        used = 0;
      }
      if (chunk.length >= size) {
        out.enqueue(chunk);
        return;
      }
      buffer.set(chunk, used);
      used += chunk.length;
    },
    flush(out) {
      if (used > 0) out.enqueue(buffer.subarray(0, used));
    },
  });
}

/** Exactly `size` bytes of a stream (an error when it is shorter). */
function exactly(
  stream: ReadableStream<Uint8Array>,
  size: number,
  name: string,
): ReadableStream<Uint8Array> {
  let left = size;
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        if (left <= 0) return;
        const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
        left -= part.length;
        out.enqueue(part);
      },
      flush() {
        if (left > 0) throw new Error(`"${name}" shrank while it was sent`);
      },
    }),
  );
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

/** `@std/streams`' line splitter, typed (its npm build has no types). */
const TextLineStream: new () => TransformStream<string, string> =
  StdTextLineStream;

/** Parses an NDJSON stream, one object per line. */
async function* ndjson(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<Record<string, unknown>> {
  const lines = body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new TextLineStream(),
  );
  for await (const line of lines) {
    if (line.trim() !== "") yield JSON.parse(line);
  }
}

const ENCODER = new TextEncoder();
