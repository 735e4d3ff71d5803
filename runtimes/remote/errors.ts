/**
 * The error of every failed call to a remote sandbox server:
 * {@linkcode RemoteHttpError}.
 *
 * @module
 */

/** Options of {@linkcode RemoteHttpError}. */
export interface RemoteHttpErrorOptions {
  /** The HTTP method, e.g. `POST`. */
  readonly method: string;
  /** The URL called, with secret query values redacted. */
  readonly url: string;
  /** The HTTP status; `0` when no answer came (network error, timeout). */
  readonly status: number;
  /** The server's error code, when it gave one (e.g. `FILE_NOT_FOUND`). */
  readonly code?: string | undefined;
  /** The server's message, or a bounded excerpt of its answer. */
  readonly serverMessage?: string | undefined;
  /** The request id the server returned in a header, when it did. */
  readonly requestId?: string | undefined;
  /** Whether our own deadline stopped the call. */
  readonly timedOut?: boolean | undefined;
  /** The underlying error (already free of secrets). */
  readonly cause?: unknown;
}

/**
 * A call to a remote server failed: the server answered an error status, or
 * gave an unreadable answer, or no answer came (status `0`: refused or reset
 * connection, timeout). The message names the method, the URL (secret query
 * values redacted), the status and the server's message, e.g.
 * `POST http://h:1/command: 500 RUNTIME_ERROR: no such command`. It never
 * holds a secret header value.
 *
 * @example Reading the details of a failure
 * ```ts
 * import { assert } from "@std/assert";
 * import { RemoteHttpError } from "@skillrun/skillrun/runtime";
 * const error = new RemoteHttpError(
 *   "GET http://h/files/info?path=%2Fx: 404 FILE_NOT_FOUND: no such file",
 *   {
 *     method: "GET",
 *     url: "http://h/files/info?path=%2Fx",
 *     status: 404,
 *     code: "FILE_NOT_FOUND",
 *     serverMessage: "no such file",
 *   },
 * );
 * assert(error.status === 404 && error.code === "FILE_NOT_FOUND");
 * assert(!error.timedOut);
 * ```
 */
export class RemoteHttpError extends Error {
  /** The error's name. */
  override readonly name = "RemoteHttpError";
  /** The HTTP method. */
  readonly method: string;
  /** The URL called, secret query values redacted. */
  readonly url: string;
  /** The HTTP status, `0` when no answer came. */
  readonly status: number;
  /** The server's error code, when it gave one. */
  readonly code: string | undefined;
  /** The server's message (or a bounded excerpt of its answer). */
  readonly serverMessage: string | undefined;
  /** The request id the server sent back, when it did. */
  readonly requestId: string | undefined;
  /** Whether our own deadline stopped the call. */
  readonly timedOut: boolean;

  /**
   * Makes the error.
   *
   * @param message The message, free of secrets.
   * @param options The details.
   */
  constructor(message: string, options: RemoteHttpErrorOptions) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.method = options.method;
    this.url = options.url;
    this.status = options.status;
    this.code = options.code;
    this.serverMessage = options.serverMessage;
    this.requestId = options.requestId;
    this.timedOut = options.timedOut ?? false;
  }
}
