/**
 * Calls of a JSON API that wraps every answer in an envelope `{success,
 * message, data, hint}` (AIO Sandbox's, as many FastAPI services do), and
 * the readable form of FastAPI's 422 answers (`detail`: a list of refused
 * fields), which never shows the refused values.
 *
 * @module
 */
import { RemoteHttpError } from "./errors.ts";
import type { HttpClient, HttpRequest } from "./http.ts";

/** An answer's envelope. */
export interface JsonEnvelope {
  /** `false` when the server refused the operation (often with HTTP 200). */
  readonly success?: boolean;
  /** The server's message. */
  readonly message?: string | null;
  /** The answer itself. */
  readonly data?: unknown;
  /** The server's hint. */
  readonly hint?: string | null;
}

/** A call as {@linkcode EnvelopeCallOptions.refused} gets it. */
export interface EnvelopeCall {
  /** The HTTP method. */
  readonly method: string;
  /** The URL called (no credentials). */
  readonly url: string;
  /** The HTTP status of the answer. */
  readonly status: number;
}

/** Options of {@linkcode envelopeCall}. */
export interface EnvelopeCallOptions {
  /** Whether the answer must carry `data` (an object). */
  readonly needsData: boolean;
  /** The kind's error for an envelope with `success: false`. */
  readonly refused: (envelope: JsonEnvelope, call: EnvelopeCall) => Error;
}

/** The most characters of a server's answer quoted in an error. */
const EXCERPT = 300;

/**
 * Sends a call and answers its envelope's `data`. A `success: false`
 * envelope throws the kind's error; a 422 throws a `RemoteHttpError` whose
 * message lists the refused fields ({@linkcode readableValidationError});
 * an answer that broke off, is not a JSON object or lacks the data it needs
 * throws a `RemoteHttpError` saying so.
 *
 * @example A refused operation
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { envelopeCall } from "./envelope.ts";
 * const http = new HttpClient({
 *   baseUrl: "http://api.invalid",
 *   fetch: () => Promise.resolve(Response.json({ success: false, message: "no" })),
 * });
 * await assertRejects(() =>
 *   envelopeCall(http, { method: "POST", path: "/op" }, {
 *     needsData: true,
 *     refused: (envelope) => new Error(`refused: ${envelope.message}`),
 *   }), Error, "refused: no");
 * ```
 *
 * @param http The client.
 * @param request The call.
 * @param options Whether data is needed, and the kind's error.
 * @returns The envelope's `data`.
 */
export async function envelopeCall<T>(
  http: HttpClient,
  request: HttpRequest,
  options: EnvelopeCallOptions,
): Promise<T> {
  const method = request.method;
  const url = http.url(request.path, request.query);
  let response: Response;
  try {
    response = await http.request(request);
  } catch (error) {
    throw readableValidationError(error);
  }
  const status = response.status;
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason;
    throw new RemoteHttpError(
      `${method} ${url}: the answer broke off: ${(error as Error).message}`,
      { method, url, status: 0, cause: error },
    );
  }
  const excerpt = JSON.stringify(text.slice(0, EXCERPT));
  let envelope: JsonEnvelope;
  try {
    envelope = JSON.parse(text) as JsonEnvelope;
    if (typeof envelope !== "object" || envelope === null) {
      throw new SyntaxError("not an object");
    }
  } catch {
    throw new RemoteHttpError(
      `${method} ${url}: ${status} the answer is not JSON: ${excerpt}`,
      { method, url, status, serverMessage: text.slice(0, EXCERPT) },
    );
  }
  if (envelope.success === false) {
    throw options.refused(envelope, { method, url, status });
  }
  const data = envelope.data;
  if (options.needsData && (typeof data !== "object" || data === null)) {
    throw new RemoteHttpError(
      `${method} ${url}: ${status} the answer has no data: ${excerpt}`,
      { method, url, status },
    );
  }
  return data as T;
}

/**
 * A 422's `detail` list as "body.command: Field required; ...", from the
 * answer's text or from its `detail` alone.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { validationSummary } from "./envelope.ts";
 *
 * assertEquals(
 *   validationSummary('{"detail":[{"loc":["body","command"],"msg":"Field required","type":"missing"}]}'),
 *   "body.command: Field required",
 * );
 * ```
 *
 * @param text The answer's body, or its `detail` as JSON.
 * @returns The summary, or `undefined` when the text has no such list.
 */
export function validationSummary(text: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const detail = Array.isArray(parsed)
    ? parsed
    : (parsed as { detail?: unknown } | null)?.detail;
  if (!Array.isArray(detail) || detail.length === 0) return undefined;
  return detail.map((item: { loc?: unknown; msg?: unknown }) =>
    `${Array.isArray(item?.loc) ? item.loc.join(".") : "?"}: ${
      String(item?.msg ?? "invalid")
    }`
  ).join("; ");
}

/**
 * Makes a 422's list of refused fields readable (locations and messages
 * only, never the refused values); passes other errors on.
 *
 * @param error What a call threw.
 * @returns The readable error, or `error` itself.
 */
export function readableValidationError(error: unknown): unknown {
  if (!(error instanceof RemoteHttpError) || error.status !== 422) {
    return error;
  }
  const summary = validationSummary(error.serverMessage ?? "");
  if (summary === undefined) return error;
  return new RemoteHttpError(
    `${error.method} ${error.url}: 422 invalid request: ${summary}`,
    {
      method: error.method,
      url: error.url,
      status: 422,
      code: error.code ?? "validation_error",
      serverMessage: summary,
      requestId: error.requestId,
      timedOut: error.timedOut,
      // No cause: the raw answer may echo the refused input (pydantic's
      // `input`), which can hold a variable's value.
    },
  );
}
