/**
 * {@linkcode HttpClient}: the HTTP client every remote runtime shares, on
 * `fetch`, with deadlines that cover the body, retries only where they are
 * safe, and errors that name the call but never a secret.
 *
 * Why one long file: the deadline, the retries, the abort that must also end
 * a body already handed over, the wrapped body and the error mapping are one
 * state machine per call, sharing its controller and timers.
 *
 * @module
 */
import { delay } from "../../_internal/async.ts";
import { checkNumber } from "../../_internal/check_number.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { REDACTED, redactSecrets } from "../../_internal/redact.ts";
import { RemoteHttpError } from "./errors.ts";
import { toPermissionError } from "../../_internal/permissions.ts";
import { readCapped } from "../../_internal/body.ts";
import { EventSink, type SkillEventListener } from "../../observe/events.ts";
import { injectTraceContext, inSpan, SpanKind } from "../../observe/otel.ts";

/** The default deadline of a call: 30 000 ms. */
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;

/** The default number of retries of an idempotent call: 3. */
export const DEFAULT_HTTP_RETRIES = 3;

/** Options of {@linkcode HttpClient}. */
export interface HttpClientOptions {
  /** The base URL; may carry a path (`http://h:1/proxy/44772`), paths are appended. */
  readonly baseUrl: string;
  /** Headers sent on every call. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Names of headers whose values never appear in errors, on top of the
   * defaults (`authorization`, `cookie`, and every name holding `key`,
   * `token`, `secret`, `password` or `auth`).
   */
  readonly secretHeaders?: readonly string[];
  /**
   * Names of query parameters whose values are redacted in errors, on top of
   * the defaults (every name holding `key`, `token`, `secret`, `password`,
   * `signature`, `auth` or `credential`).
   */
  readonly secretQuery?: readonly string[];
  /** The `User-Agent`; default `skillrun/<version>`. */
  readonly userAgent?: string;
  /** The deadline of a call in ms, body included; default 30 000. */
  readonly timeoutMs?: number;
  /** Retries of an idempotent call; default 3. */
  readonly retries?: number;
  /** The first retry's delay in ms (doubled each time, with jitter); default 250. */
  readonly retryDelayMs?: number;
  /** The longest `Retry-After` honoured, in ms; default 60 000 (longer: no retry). */
  readonly maxRetryAfterMs?: number;
  /** The `fetch` to use; default the global one. */
  readonly fetch?: typeof fetch;
  /**
   * Receives an `http_request` event per call, once it answered or failed
   * (method, URL without secret values, status, retries, duration).
   */
  readonly onEvent?: SkillEventListener;
}

/** A query: each value a string, a list (repeated parameter) or `undefined` (left out). */
export type HttpQuery = Readonly<
  Record<string, string | readonly string[] | undefined>
>;

/** One call of {@linkcode HttpClient.request}. */
export interface HttpRequest {
  /** The method, e.g. `GET`. */
  readonly method: string;
  /** The path appended to the base URL, e.g. `/files/info`. */
  readonly path: string;
  /** The query. */
  readonly query?: HttpQuery;
  /** Headers of this call (over the client's). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The body. A `ReadableStream` body is never retried (it cannot be replayed). */
  readonly body?: BodyInit | null;
  /** A value sent as JSON (sets `Content-Type: application/json`). */
  readonly json?: unknown;
  /**
   * Whether the call may be retried; default `true` for GET, HEAD, PUT,
   * DELETE and OPTIONS, `false` otherwise. Never set it for running a command.
   */
  readonly idempotent?: boolean;
  /**
   * The deadline in ms, body included. `null`: no overall deadline (long
   * streams); the response head must still come within the client's timeout.
   */
  readonly timeoutMs?: number | null;
  /** The longest pause between two chunks of the body, in ms; default none. */
  readonly idleTimeoutMs?: number;
  /**
   * Error statuses handed back as the response instead of thrown (never
   * retried), e.g. `[416]` for a download that resumes at the end.
   */
  readonly acceptStatuses?: readonly number[];
  /** Stops the call (and the body). */
  readonly signal?: AbortSignal;
}

/**
 * An HTTP client for one server, on `fetch`:
 *
 * - paths are appended to the base URL, which may carry a path of its own;
 * - every call has a deadline (default 30 000 ms) that covers the body too:
 *   reading the body of {@linkcode HttpClient.json} or of a returned response
 *   is inside it; a call with `timeoutMs: null` (long streams) has a deadline
 *   for the response head only, and `idleTimeoutMs` for stalls;
 * - an idempotent call (GET, HEAD, PUT, DELETE, OPTIONS unless told
 *   otherwise) is retried on a network error, 429 and 5xx, with exponential
 *   backoff and jitter, honouring `Retry-After` up to `maxRetryAfterMs`; a POST
 *   (running a command) is sent exactly once;
 * - a non-2xx answer, a network error or a timeout throws a
 *   {@linkcode RemoteHttpError} naming the method, the URL (secret query
 *   values redacted), the status and the server's message (`{code, message}`,
 *   `{error}`, an AIO envelope `{success: false, message}`, or a bounded
 *   excerpt of the text); secret header values never appear;
 * - on every error path the body is cancelled; redirects are not followed
 *   (headers with secrets never go to another server).
 *
 * Needs `--allow-net` for the server.
 *
 * @example Calling a JSON endpoint behind a path
 * ```ts
 * import { assert } from "@std/assert";
 * import { HttpClient } from "@skillrun/skillrun/runtime";
 * await using server = Deno.serve(
 *   { port: 0, hostname: "127.0.0.1", onListen() {} },
 *   (request) => Response.json({ path: new URL(request.url).pathname }),
 * );
 * const client = new HttpClient({
 *   baseUrl: `http://127.0.0.1:${server.addr.port}/proxy/44772`,
 * });
 * const answer = await client.json<{ path: string }>({ method: "GET", path: "/ping" });
 * assert(answer.path === "/proxy/44772/ping");
 * ```
 */
export class HttpClient {
  /** The base URL, without a trailing `/`. */
  readonly baseUrl: string;
  readonly #options: HttpClientOptions;
  readonly #headers: Headers;
  readonly #secretHeaderNames: ReadonlySet<string>;
  readonly #secretQueryNames: ReadonlySet<string>;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #maxRetryAfterMs: number;
  readonly #fetch: typeof fetch;

  /**
   * Makes a client; makes no request.
   *
   * @param options Base URL, headers, timeouts and retries.
   * @throws {TypeError} The base URL is not an `http:` or `https:` URL, or it
   * carries credentials, a query or a fragment; a header is invalid.
   * @throws {RangeError} A timeout, retry count or delay is out of range.
   *
   * @example A client with an API key
   * ```ts
   * import { assert } from "@std/assert";
   * import { HttpClient } from "./http.ts";
   * const client = new HttpClient({
   *   baseUrl: "http://127.0.0.1:8080/",
   *   headers: { "OPEN-SANDBOX-API-KEY": "k-123" },
   * });
   * assert(client.url("/v1/sandboxes", { state: ["Running", "Paused"] }) ===
   *   "http://127.0.0.1:8080/v1/sandboxes?state=Running&state=Paused");
   * ```
   */
  constructor(options: HttpClientOptions) {
    this.#options = options;
    this.baseUrl = checkBaseUrl(options?.baseUrl);
    this.#timeoutMs = checkNumber(
      options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS,
      "timeoutMs",
      "positive number of ms",
    );
    this.#retries = checkNumber(
      options.retries ?? DEFAULT_HTTP_RETRIES,
      "retries",
      "non-negative integer",
    );
    this.#retryDelayMs = checkNumber(
      options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS,
      "retryDelayMs",
      "non-negative number of ms",
    );
    this.#maxRetryAfterMs = checkNumber(
      options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
      "maxRetryAfterMs",
      "non-negative number of ms",
    );
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#secretHeaderNames = new Set(
      (options.secretHeaders ?? []).map((name) => name.toLowerCase()),
    );
    this.#secretQueryNames = new Set(
      (options.secretQuery ?? []).map((name) => name.toLowerCase()),
    );
    this.#headers = new Headers({
      "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
    });
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      this.#headers.set(name, value);
    }
  }

  /**
   * The full URL of a path and query: the path appended to the base URL
   * (a leading `/` added when missing), the query encoded, a list as a
   * repeated parameter, `undefined` values left out.
   *
   * @param path The path appended to the base URL.
   * @param query The query.
   * @returns The URL.
   * @throws {TypeError} The path is not a string.
   *
   * @example Appending a path to a base that has one
   * ```ts
   * import { assert } from "@std/assert";
   * import { HttpClient } from "./http.ts";
   * const client = new HttpClient({ baseUrl: "http://h:1/proxy/44772" });
   * assert(client.url("files/info", { path: "/a b" }) ===
   *   "http://h:1/proxy/44772/files/info?path=%2Fa+b");
   * ```
   */
  url(path: string, query?: HttpQuery): string {
    return this.#buildUrl(path, query, false);
  }

  /**
   * Sends a call and answers its 2xx response, whose body is still to be
   * read (within the deadline unless `timeoutMs` is `null`). Retries an
   * idempotent call on a network error, 429 and 5xx. A non-2xx answer has its
   * body read (at most 64 KiB) and cancelled, and throws.
   *
   * Needs `--allow-net` for the server.
   *
   * @param request The call.
   * @returns The response; read or cancel its body.
   * @throws {TypeError} The method or path is invalid, or a header is.
   * @throws {RemoteHttpError} An error status, a network error or the
   * deadline (the body errors with one too, when it fails later).
   * @throws {RuntimePermissionError} Deno denies the connection (no
   * `--allow-net` for the host): never retried, the message names the flag.
   * @throws {DOMException} The signal's reason, when it aborted.
   *
   * @example A POST is sent once, even on 503
   * ```ts
   * import { assert } from "@std/assert";
   * import { HttpClient, RemoteHttpError } from "./http.ts";
   * let calls = 0;
   * await using server = Deno.serve(
   *   { port: 0, hostname: "127.0.0.1", onListen() {} },
   *   () => {
   *     calls++;
   *     return Response.json({ code: "BUSY", message: "try later" }, { status: 503 });
   *   },
   * );
   * const client = new HttpClient({ baseUrl: `http://127.0.0.1:${server.addr.port}` });
   * let error: unknown;
   * try {
   *   await client.request({ method: "POST", path: "/command", json: { command: "true" } });
   * } catch (e) {
   *   error = e;
   * }
   * assert(error instanceof RemoteHttpError && error.code === "BUSY");
   * assert(calls === 1);
   * ```
   */
  request(request: HttpRequest): Promise<Response> {
    const method = typeof request?.method === "string"
      ? request.method.toUpperCase()
      : "HTTP";
    return inSpan(method, { "http.request.method": method }, async (span) => {
      const stats: CallStats = { retries: 0 };
      try {
        return await this.#observed(request, stats);
      } finally {
        if (stats.call) {
          span.setAttribute(
            "url.full",
            redactSecrets(stats.call.shownUrl, stats.call.secrets),
          );
        }
        if (stats.status !== undefined) {
          span.setAttribute("http.response.status_code", stats.status);
        }
        if (stats.retries > 0) {
          span.setAttribute("http.request.resend_count", stats.retries);
        }
      }
    }, SpanKind.CLIENT);
  }

  async #observed(request: HttpRequest, stats: CallStats): Promise<Response> {
    const events = this.#events();
    if (!events) return await this.#request(request, stats);
    const startedAt = performance.now();
    try {
      const response = await this.#request(request, stats);
      this.#emit(events, stats, startedAt, response.status);
      return response;
    } catch (error) {
      this.#emit(events, stats, startedAt, stats.status, error);
      throw error;
    }
  }

  #sink: EventSink | null | undefined;

  #events(): EventSink | undefined {
    if (this.#sink === undefined) {
      const listener = this.#options.onEvent;
      const secrets: string[] = [];
      for (const [name, value] of this.#headers) {
        if (this.#isSecretHeader(name)) {
          secrets.push(value);
          const space = value.indexOf(" ");
          if (space > 0) secrets.push(value.slice(space + 1).trim());
        }
      }
      this.#sink = listener ? new EventSink(listener, () => secrets) : null;
    }
    return this.#sink ?? undefined;
  }

  #emit(
    events: EventSink,
    stats: CallStats,
    startedAt: number,
    status: number | undefined,
    error?: unknown,
  ): void {
    if (stats.call === undefined) return;
    const { call } = stats;
    const clean = (text: string) => redactSecrets(text, call.secrets);
    events.emit({
      type: "http_request",
      method: call.method,
      url: clean(call.shownUrl),
      ...(status !== undefined ? { status } : {}),
      retries: stats.retries,
      durationMs: performance.now() - startedAt,
      ...(error !== undefined
        ? {
          error: clean(
            error instanceof Error ? error.message : String(error),
          ),
        }
        : {}),
    });
  }

  async #request(request: HttpRequest, stats?: CallStats): Promise<Response> {
    const call = this.#prepare(request);
    if (stats) stats.call = call;
    await injectTraceContext(call.headers);
    const { method, signal } = call;
    signal?.throwIfAborted();
    const controller = new AbortController();
    const timeoutReason = new DOMException("Timed out", "TimeoutError");
    const overallMs = request.timeoutMs === undefined
      ? this.#timeoutMs
      : request.timeoutMs === null
      ? null
      : checkNumber(request.timeoutMs, "timeoutMs", "positive number of ms");
    const headMs = overallMs ?? this.#timeoutMs;
    const startedAt = Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(
      () => controller.abort(timeoutReason),
      headMs,
    );
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let handedOver = false;
    const clearTimer = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
    const cleanup = () => {
      clearTimer();
      signal?.removeEventListener("abort", onAbort);
    };
    const fail = (error: unknown): never => {
      if (controller.signal.aborted) {
        if (signal?.aborted) throw signal.reason;
        if (controller.signal.reason === timeoutReason) {
          throw this.#timeoutError(call, headMs, overallMs === null);
        }
      }
      throw error;
    };
    try {
      for (let attempt = 0;; attempt++) {
        if (stats) stats.retries = attempt;
        let response: Response;
        try {
          response = await this.#fetch(call.url, {
            method,
            headers: call.headers,
            body: call.body,
            redirect: "manual",
            signal: controller.signal,
          });
        } catch (error) {
          if (controller.signal.aborted) fail(error);
          // A permission denial never goes away by asking again.
          if (
            error instanceof Deno.errors.NotCapable ||
            error instanceof Deno.errors.PermissionDenied
          ) {
            throw toPermissionError(error, { operation: "reach" });
          }
          if (attempt < call.retries) {
            await delay(this.#backoff(attempt), {
              signal: controller.signal,
            }).catch(fail);
            continue;
          }
          throw this.#networkError(call, error);
        }
        if (stats) stats.status = response.status;
        if (
          response.ok || request.acceptStatuses?.includes(response.status)
        ) {
          // The head came: without an overall deadline the timer stops, but
          // the caller's signal still stops the body.
          if (overallMs === null) clearTimer();
          handedOver = true;
          return this.#wrap(response, call, controller, timeoutReason, {
            overallMs,
            idleTimeoutMs: request.idleTimeoutMs,
            cleanup,
          });
        }
        if (attempt < call.retries && isRetryableStatus(response.status)) {
          const retryAfter = parseRetryAfter(
            response.headers.get("retry-after"),
          );
          const wait = retryAfter ?? this.#backoff(attempt);
          const remaining = headMs - (Date.now() - startedAt);
          if (wait <= this.#maxRetryAfterMs && wait < remaining) {
            await response.body?.cancel().catch(() => {});
            await delay(wait, { signal: controller.signal }).catch(fail);
            continue;
          }
        }
        throw await this.#statusError(call, response).catch(fail);
      }
    } finally {
      if (!handedOver) cleanup();
    }
  }

  /**
   * Sends a call and parses its JSON answer; reading the body is inside the
   * deadline. Retries as {@linkcode HttpClient.request}.
   *
   * Needs `--allow-net` for the server.
   *
   * @param request The call; `json` is sent as the body.
   * @returns The parsed answer; `undefined` for an empty body.
   * @throws {RemoteHttpError} An error status, an answer that is not JSON, a
   * network error or the deadline.
   * @throws {DOMException} The signal's reason, when it aborted.
   *
   * @example Posting JSON
   * ```ts
   * import { assert } from "@std/assert";
   * import { HttpClient } from "./http.ts";
   * await using server = Deno.serve(
   *   { port: 0, hostname: "127.0.0.1", onListen() {} },
   *   async (request) => Response.json({ echo: await request.json() }),
   * );
   * const client = new HttpClient({ baseUrl: `http://127.0.0.1:${server.addr.port}` });
   * const answer = await client.json<{ echo: { a: number } }>({
   *   method: "POST",
   *   path: "/echo",
   *   json: { a: 1 },
   * });
   * assert(answer.echo.a === 1);
   * ```
   */
  async json<T>(request: HttpRequest): Promise<T> {
    const response = await this.request(request);
    const text = await response.text();
    if (text.trim() === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      const call = this.#prepare(request);
      const excerpt = redactSecrets(excerptOf(text), call.secrets);
      throw new RemoteHttpError(
        `${call.method} ${call.shownUrl}: ${response.status}: the answer is not valid JSON: ${excerpt}`,
        {
          method: call.method,
          url: call.shownUrl,
          status: response.status,
          serverMessage: excerpt,
          requestId: requestIdOf(response.headers),
        },
      );
    }
  }

  /**
   * A client for the same server with more headers (e.g. the headers an
   * OpenSandbox endpoint asks for); the other options stay.
   *
   * @param headers Headers added to (or replacing) the client's.
   * @returns The new client.
   *
   * @example Adding an endpoint's headers
   * ```ts
   * import { assert } from "@std/assert";
   * import { HttpClient } from "./http.ts";
   * const base = new HttpClient({ baseUrl: "http://h:1" });
   * const routed = base.withHeaders({ "X-Route": "sbx-1" });
   * assert(routed.baseUrl === base.baseUrl && routed !== base);
   * ```
   */
  withHeaders(headers: Readonly<Record<string, string>>): HttpClient {
    const merged: Record<string, string> = {};
    for (const [name, value] of this.#headers) merged[name] = value;
    for (const [name, value] of Object.entries(headers)) {
      merged[name.toLowerCase()] = value;
    }
    return new HttpClient({ ...this.#options, headers: merged });
  }

  /** Everything about a call that does not change between attempts. */
  #prepare(request: HttpRequest): PreparedCall {
    if (request === null || typeof request !== "object") {
      throw new TypeError("Cannot send a request: it is not an object");
    }
    const method = request.method;
    if (typeof method !== "string" || !/^[A-Za-z]+$/.test(method)) {
      throw new TypeError(
        `Cannot send a request with method ${
          JSON.stringify(method)
        }: it is not a valid method`,
      );
    }
    const upper = method.toUpperCase();
    const url = this.#buildUrl(request.path, request.query, false);
    const shownUrl = this.#buildUrl(request.path, request.query, true);
    const headers = new Headers(this.#headers);
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      headers.set(name, value);
    }
    let body: BodyInit | null = request.body ?? null;
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      if (!headers.has("content-type")) {
        headers.set("content-type", "application/json");
      }
    }
    const secrets: string[] = [];
    for (const [name, value] of headers) {
      if (this.#isSecretHeader(name)) {
        secrets.push(value);
        const space = value.indexOf(" ");
        if (space > 0) secrets.push(value.slice(space + 1).trim());
      }
    }
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value === undefined || !this.#isSecretQuery(name)) continue;
      if (typeof value === "string") secrets.push(value);
      else secrets.push(...value);
    }
    const idempotent = request.idempotent ?? IDEMPOTENT_METHODS.has(upper);
    const replayable = !(body instanceof ReadableStream);
    return {
      method: upper,
      url,
      shownUrl,
      headers,
      body,
      secrets,
      retries: idempotent && replayable ? this.#retries : 0,
      signal: request.signal,
    };
  }

  #buildUrl(
    path: string,
    query: HttpQuery | undefined,
    redact: boolean,
  ): string {
    if (typeof path !== "string") {
      throw new TypeError(
        `Cannot call ${String(path)}: the path is not a string`,
      );
    }
    const withSlash = path === "" || path.startsWith("/") ? path : `/${path}`;
    const pairs: string[] = [];
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue;
      const values = typeof value === "string" ? [value] : value;
      const secret = redact && this.#isSecretQuery(name);
      for (const one of values) {
        pairs.push(
          `${encodeQuery(name)}=${secret ? REDACTED : encodeQuery(one)}`,
        );
      }
    }
    if (pairs.length === 0) return `${this.baseUrl}${withSlash}`;
    const joiner = withSlash.includes("?") ? "&" : "?";
    return `${this.baseUrl}${withSlash}${joiner}${pairs.join("&")}`;
  }

  #isSecretHeader(name: string): boolean {
    const lower = name.toLowerCase();
    return this.#secretHeaderNames.has(lower) || SECRET_HEADER.test(lower);
  }

  #isSecretQuery(name: string): boolean {
    const lower = name.toLowerCase();
    return this.#secretQueryNames.has(lower) || SECRET_QUERY.test(lower);
  }

  #backoff(attempt: number): number {
    const ceiling = Math.min(
      MAX_BACKOFF_MS,
      this.#retryDelayMs * 2 ** attempt,
    );
    return Math.round(ceiling / 2 + Math.random() * ceiling / 2);
  }

  /**
   * The response with its body wrapped: errors mapped, timers cleared. The
   * wrapped body is a byte stream: a BYOB reader gets the bytes copied into
   * its own buffer from one reused buffer (no allocation per chunk), a
   * default reader gets the chunks as they come.
   */
  #wrap(
    response: Response,
    call: PreparedCall,
    controller: AbortController,
    timeoutReason: DOMException,
    options: {
      overallMs: number | null;
      idleTimeoutMs: number | undefined;
      cleanup: () => void;
    },
  ): Response {
    const source = response.body;
    if (source === null) {
      options.cleanup();
      return response;
    }
    const idleMs = options.idleTimeoutMs === undefined
      ? undefined
      : checkNumber(
        options.idleTimeoutMs,
        "idleTimeoutMs",
        "positive number of ms",
      );
    const idleReason = new DOMException("Stalled", "TimeoutError");
    let byob: ReadableStreamBYOBReader | undefined;
    let plain: ReadableStreamDefaultReader<Uint8Array> | undefined;
    try {
      byob = source.getReader({ mode: "byob" });
    } catch {
      plain = source.getReader();
    }
    // One timer for the idle limit, armed at a wait and, when it fires while
    // a later wait is under way, re-armed for what is left of it: a timer set
    // and cleared per chunk costs about 2.3 µs (measured), 150 ms and more
    // over a 1 GiB body.
    let idle: ReturnType<typeof setTimeout> | undefined;
    let waitingSince: number | undefined;
    const onIdle = () => {
      idle = undefined;
      if (waitingSince === undefined) return;
      const left = idleMs! - (performance.now() - waitingSince);
      if (left <= 0) controller.abort(idleReason);
      else idle = setTimeout(onIdle, left);
    };
    const done = () => {
      if (idle !== undefined) clearTimeout(idle);
      idle = undefined;
      waitingSince = undefined;
      controller.signal.removeEventListener("abort", onAbort);
      options.cleanup();
    };
    const mapError = (error: unknown): unknown => {
      const reason = controller.signal.reason;
      if (controller.signal.aborted && call.signal?.aborted) {
        return call.signal.reason;
      }
      if (controller.signal.aborted && reason === timeoutReason) {
        return this.#timeoutError(call, options.overallMs ?? 0, false, true);
      }
      if (controller.signal.aborted && reason === idleReason) {
        return this.#timeoutError(call, idleMs ?? 0, false, true, true);
      }
      return this.#networkError(call, error, true);
    };
    // Deno 2.9.6 stops following the signal given to `fetch` once its
    // request is garbage collected, so an abort after the head would no
    // longer end the body: the abort is followed here, by this stream itself.
    let stopped = false;
    let streamController: ReadableByteStreamController | undefined;
    const onAbort = () => {
      stopped = true;
      done();
      try {
        streamController?.error(mapError(undefined));
      } catch { /* already closed */ }
      (byob ?? plain)!.cancel(controller.signal.reason).catch(() => {});
    };
    controller.signal.addEventListener("abort", onAbort, { once: true });
    const body = new ReadableStream({
      type: "bytes",
      start: (started) => {
        streamController = started;
      },
      pull: async (streamController) => {
        if (idleMs !== undefined) {
          waitingSince = performance.now();
          idle ??= setTimeout(onIdle, idleMs);
        }
        const request = streamController.byobRequest;
        const view = request?.view ?? null;
        // A BYOB read of this body reads straight into the reader's buffer
        // (lent to the source's read and given back with the bytes: no copy).
        let lent: Uint8Array | undefined;
        let chunk: Uint8Array | undefined;
        try {
          if (byob) {
            const result = await byob.read(
              view
                ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
                : new Uint8Array(DEFAULT_READ_BYTES),
            );
            if (view) lent = result.value;
            chunk = result.done ? undefined : result.value;
          } else {
            const result = await plain!.read();
            chunk = result.done ? undefined : result.value.slice();
          }
        } catch (error) {
          if (stopped) return;
          done();
          streamController.error(mapError(error));
          return;
        }
        if (stopped) return;
        waitingSince = undefined;
        if (chunk === undefined) {
          done();
          streamController.close();
          try {
            if (lent) request!.respondWithNewView(lent);
            else request?.respond(0);
          } catch {
            // A cancelled source kept the lent buffer: nothing to give back.
          }
        } else if (lent) {
          request!.respondWithNewView(lent);
        } else {
          streamController.enqueue(chunk);
        }
      },
      cancel: async (reason) => {
        done();
        await (byob ?? plain)!.cancel(reason).catch(() => {});
      },
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }

  #timeoutError(
    call: PreparedCall,
    ms: number,
    headOnly: boolean,
    inBody = false,
    idle = false,
  ): RemoteHttpError {
    const what = idle
      ? `the body stalled for more than ${ms} ms`
      : inBody
      ? `timed out after ${ms} ms while reading the answer`
      : headOnly
      ? `no answer within ${ms} ms`
      : `timed out after ${ms} ms`;
    return new RemoteHttpError(`${call.method} ${call.shownUrl}: ${what}`, {
      method: call.method,
      url: call.shownUrl,
      status: 0,
      timedOut: true,
    });
  }

  #networkError(
    call: PreparedCall,
    error: unknown,
    inBody = false,
  ): RemoteHttpError {
    const raw = error instanceof Error ? error.message : String(error);
    const reason = redactSecrets(
      raw.split(call.url).join(call.shownUrl),
      call.secrets,
    );
    const what = inBody
      ? "the connection failed while reading the answer"
      : "network error";
    const cause = new Error(reason);
    if (error instanceof Error) cause.name = error.name;
    return new RemoteHttpError(
      `${call.method} ${call.shownUrl}: ${what}: ${reason}`,
      { method: call.method, url: call.shownUrl, status: 0, cause },
    );
  }

  async #statusError(
    call: PreparedCall,
    response: Response,
  ): Promise<RemoteHttpError> {
    const text = new TextDecoder().decode(
      await readCapped(response.body, {
        maxBytes: MAX_ERROR_BODY_BYTES,
        overflow: "truncate",
      }),
    );
    const parsed = parseServerError(text);
    const code = parsed.code === undefined
      ? undefined
      : redactSecrets(parsed.code, call.secrets);
    let serverMessage = parsed.message === undefined
      ? undefined
      : redactSecrets(parsed.message, call.secrets);
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get("location");
      serverMessage = `redirects are not followed${
        location ? ` (to ${JSON.stringify(excerptOf(location))})` : ""
      }`;
    }
    const status = `${response.status}${
      code !== undefined
        ? ` ${code}`
        : serverMessage === undefined && response.statusText
        ? ` ${response.statusText}`
        : ""
    }`;
    return new RemoteHttpError(
      `${call.method} ${call.shownUrl}: ${status}${
        serverMessage !== undefined ? `: ${serverMessage}` : ""
      }`,
      {
        method: call.method,
        url: call.shownUrl,
        status: response.status,
        code,
        serverMessage,
        requestId: requestIdOf(response.headers),
      },
    );
  }
}

/**
 * The code and message of an error answer: JSON `{code, message}`,
 * `{error}` (a string or `{message}`), an AIO envelope
 * `{success: false, message}`, FastAPI's `{detail}`, or else a bounded
 * excerpt of the text (whitespace collapsed).
 *
 * Needs no permission.
 *
 * @param text The answer's body.
 * @returns The code (when the server gave one) and the message (when there
 * is any text).
 *
 * @example The shapes servers use
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { parseServerError } from "./http.ts";
 * assertEquals(parseServerError('{"code":"FILE_NOT_FOUND","message":"gone"}'), {
 *   code: "FILE_NOT_FOUND",
 *   message: "gone",
 * });
 * assertEquals(parseServerError('{"error":"bad token"}'), { message: "bad token" });
 * assertEquals(parseServerError('{"success":false,"message":"no such file","data":null}'), {
 *   message: "no such file",
 * });
 * assertEquals(parseServerError("404 page not found\n"), { message: "404 page not found" });
 * ```
 */
export function parseServerError(
  text: string,
): { code?: string; message?: string } {
  const trimmed = text.trim();
  if (trimmed === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return { message: excerptOf(trimmed) };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { message: excerptOf(trimmed) };
  }
  const record = value as Record<string, unknown>;
  const result: { code?: string; message?: string } = {};
  const code = record.code ?? record.error_code ?? record.errorCode;
  if (typeof code === "string" && code !== "") result.code = excerptOf(code);
  else if (typeof code === "number") result.code = String(code);
  const error = record.error;
  const candidates = [
    record.message,
    record.msg,
    typeof error === "string" ? error : undefined,
    error !== null && typeof error === "object"
      ? (error as Record<string, unknown>).message
      : undefined,
    record.detail,
  ];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && candidate.trim() !== "") {
      result.message = excerptOf(candidate);
      return result;
    }
    if (candidate !== undefined && candidate !== null) {
      result.message = excerptOf(JSON.stringify(candidate));
      return result;
    }
  }
  if (result.code === undefined) result.message = excerptOf(trimmed);
  return result;
}

/** Re-exported for callers that catch it. */
export { RemoteHttpError };

/** What one call's event says, filled in as the call goes. */
interface CallStats {
  call?: PreparedCall;
  retries: number;
  status?: number;
}

interface PreparedCall {
  readonly method: string;
  readonly url: string;
  readonly shownUrl: string;
  readonly headers: Headers;
  readonly body: BodyInit | null;
  readonly secrets: readonly string[];
  readonly retries: number;
  readonly signal: AbortSignal | undefined;
}

const DEFAULT_USER_AGENT = `skillrun/${denoJson.version}`;
const DEFAULT_RETRY_DELAY_MS = 250;
const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
const MAX_BACKOFF_MS = 10_000;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** The chunk size read for a default (not BYOB) reader of a body. */
const DEFAULT_READ_BYTES = 64 * 1024;
const MAX_EXCERPT_CHARS = 300;
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "PUT",
  "DELETE",
  "OPTIONS",
]);
const SECRET_HEADER =
  /authorization|cookie|key|token|secret|password|auth|credential/;
const SECRET_QUERY = /key|token|secret|password|signature|auth|credential|sig$/;
const REQUEST_ID_HEADERS = [
  "x-request-id",
  "x-requestid",
  "request-id",
  "x-correlation-id",
  "x-trace-id",
] as const;

function checkBaseUrl(baseUrl: unknown): string {
  if (typeof baseUrl !== "string" || baseUrl === "") {
    throw new TypeError(
      `Cannot use base URL ${JSON.stringify(baseUrl)}: it is empty`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new TypeError(
      `Cannot use base URL "${
        excerptOf(baseUrl)
      }": it is not a URL (it needs http:// or https://)`,
    );
  }
  const shown = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new TypeError(
      `Cannot use base URL "${shown}": only http: and https: are supported`,
    );
  }
  if (parsed.username !== "" || parsed.password !== "") {
    throw new TypeError(
      `Cannot use base URL "${shown}": credentials in the URL are not supported; send them in a header`,
    );
  }
  if (parsed.search !== "" || parsed.hash !== "") {
    throw new TypeError(
      `Cannot use base URL "${shown}": it must not carry a query or a fragment`,
    );
  }
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`.replace(
    /\/+$/,
    "",
  );
}

function isRetryableStatus(status: number): boolean {
  return status === 429 ||
    (status >= 500 && status <= 599 && status !== 501 && status !== 505);
}

/** `Retry-After` in ms (seconds or an HTTP date), or `undefined`. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - Date.now());
}

function encodeQuery(value: string): string {
  return encodeURIComponent(value).replaceAll("%20", "+");
}

function excerptOf(text: string): string {
  const collapsed = text.replace(/\s+/g, " ").trim();
  return collapsed.length > MAX_EXCERPT_CHARS
    ? `${collapsed.slice(0, MAX_EXCERPT_CHARS)}…`
    : collapsed;
}

function requestIdOf(headers: Headers): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name);
    if (value) return excerptOf(value);
  }
  return undefined;
}
