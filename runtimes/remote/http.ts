/**
 * {@linkcode HttpClient}: the HTTP client every remote runtime shares, on
 * `fetch`, with deadlines that cover the body, retries only where they are
 * safe, and errors that name the call but never a secret.
 *
 * @module
 */
import { RemoteHttpError } from "./errors.ts";

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
  /** Stops the call (and the body). */
  readonly signal?: AbortSignal;
}

/**
 * An HTTP client for one server.
 *
 * @example Calling a JSON endpoint
 * ```ts
 * import { assert } from "@std/assert";
 * import { HttpClient } from "./http.ts";
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

  /**
   * Makes a client; makes no request.
   *
   * @param options Base URL, headers, timeouts and retries.
   * @throws {TypeError} The base URL is not an http(s) URL.
   */
  constructor(options: HttpClientOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
  }

  /**
   * The full URL of a path and query.
   *
   * @param path The path appended to the base URL.
   * @param query The query.
   * @returns The URL.
   */
  url(path: string, query?: HttpQuery): string {
    void query;
    return `${this.baseUrl}${path}`;
  }

  /**
   * Sends a call; answers with a 2xx response whose body is still to read
   * (within the deadline). A non-2xx answer has its body read (bounded) and
   * throws a {@linkcode RemoteHttpError}.
   *
   * @param request The call.
   * @returns The response.
   * @throws {RemoteHttpError} Error status, network error or timeout.
   */
  request(request: HttpRequest): Promise<Response> {
    return (this.#options.fetch ?? fetch)(this.url(request.path), {
      method: request.method,
    });
  }

  /**
   * Sends a call and parses its JSON answer (read within the deadline).
   *
   * @param request The call.
   * @returns The parsed answer; `undefined` for an empty body.
   * @throws {RemoteHttpError} Error status, invalid JSON, network error or timeout.
   */
  async json<T>(request: HttpRequest): Promise<T> {
    const response = await this.request(request);
    return await response.json() as T;
  }

  /**
   * A client for the same server with more headers.
   *
   * @param headers Headers added to (or replacing) the client's.
   * @returns The new client.
   */
  withHeaders(headers: Readonly<Record<string, string>>): HttpClient {
    return new HttpClient({
      ...this.#options,
      headers: { ...this.#options.headers, ...headers },
    });
  }
}

/** Re-exported for callers that catch it. */
export { RemoteHttpError };
