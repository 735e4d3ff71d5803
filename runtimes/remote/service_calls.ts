/**
 * Client plumbing the sandbox services share: the options of a kind's HTTP
 * clients from the options every kind takes, calls whose answer only says
 * whether the thing was there, and a session's calls tried once more after
 * the service stopped the sandbox behind the runtime's back (a paused E2B
 * sandbox answers 502, a stopped Vercel session 410).
 *
 * @module
 */
import { RemoteHttpError } from "./errors.ts";
import type { HttpClient, HttpClientOptions, HttpRequest } from "./http.ts";
import type { RemoteFileOps } from "./fs.ts";
import type { RemoteCommandKind } from "./command.ts";
import { multipartBody, type MultipartPart } from "./upload.ts";

/**
 * The `fetch` and call deadline of an HTTP client, from a kind's options.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { httpOptionsOf } from "./service_calls.ts";
 * assertEquals(httpOptionsOf({ requestTimeoutMs: 5 }), { timeoutMs: 5 });
 * ```
 *
 * @param options `fetch` and `requestTimeoutMs` (or `timeoutMs`).
 * @returns The client options that were given.
 */
export function httpOptionsOf(options: {
  readonly fetch?: typeof fetch | undefined;
  readonly requestTimeoutMs?: number | undefined;
  readonly timeoutMs?: number | undefined;
}): Pick<HttpClientOptions, "fetch" | "timeoutMs"> {
  const timeoutMs = options.requestTimeoutMs ?? options.timeoutMs;
  return {
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  };
}

/**
 * Sends a call whose answer's body is not needed: `true` once answered,
 * `false` when the server answered one of `absent` (e.g. 404 for a delete of
 * what is gone).
 *
 * @example A delete of what is already gone
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { sendCall } from "./service_calls.ts";
 * const http = new HttpClient({
 *   baseUrl: "http://sandboxes.invalid",
 *   fetch: () => Promise.resolve(new Response("gone", { status: 404 })),
 * });
 * const request = { method: "DELETE", path: "/sandbox/s1" };
 * assertEquals(await sendCall(http, request, [404]), false);
 * ```
 *
 * @param http The client.
 * @param request The call.
 * @param absent The statuses meaning "not there".
 * @returns Whether it was there.
 */
export async function sendCall(
  http: HttpClient,
  request: HttpRequest,
  absent: readonly number[] = [],
): Promise<boolean> {
  try {
    const response = await http.request(request);
    await response.body?.cancel();
    return true;
  } catch (error) {
    if (error instanceof RemoteHttpError && absent.includes(error.status)) {
      return false;
    }
    throw error;
  }
}

/**
 * A JSON answer, or `null` when the server answered 404.
 *
 * @example A sandbox the server does not know
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { jsonOrNull } from "./service_calls.ts";
 * const http = new HttpClient({
 *   baseUrl: "http://sandboxes.invalid",
 *   fetch: (input) =>
 *     Promise.resolve(
 *       String(input).endsWith("/s1")
 *         ? Response.json({ id: "s1" })
 *         : new Response("no such sandbox", { status: 404 }),
 *     ),
 * });
 * const get = (id: string) => jsonOrNull(http, { method: "GET", path: `/sandbox/${id}` });
 * assertEquals([await get("s1"), await get("s2")], [{ id: "s1" }, null]);
 * ```
 *
 * @param http The client.
 * @param request The call.
 * @returns The answer.
 */
export async function jsonOrNull<T>(
  http: HttpClient,
  request: HttpRequest,
): Promise<T | null> {
  try {
    return await http.json<T>(request);
  } catch (error) {
    if (error instanceof RemoteHttpError && error.status === 404) return null;
    throw error;
  }
}

/** Runs a call, and once more after a recovery when it failed as stale. */
export type RetryOnce = <T>(call: () => Promise<T>) => Promise<T>;

/**
 * Wraps calls so that a call failing with an HTTP status of `statuses` (the
 * service stopped the sandbox behind our back: nothing ran) runs `recover`
 * (resume the sandbox) and is called again, once.
 *
 * @example A call answered 410 once, then served after the resume
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { RemoteHttpError } from "./errors.ts";
 * import { retryOnceAfter } from "./service_calls.ts";
 * let stopped = true;
 * const retry = retryOnceAfter([410], () => Promise.resolve(stopped = false));
 * const call = () =>
 *   stopped
 *     ? Promise.reject(new RemoteHttpError("stopped", { method: "POST", url: "http://h/run", status: 410 }))
 *     : Promise.resolve("ran");
 * assertEquals(await retry(call), "ran");
 * ```
 *
 * @param statuses The statuses meaning "stopped".
 * @param recover Resumes the sandbox.
 * @returns The wrapper.
 */
export function retryOnceAfter(
  statuses: readonly number[],
  recover: () => Promise<unknown>,
): RetryOnce {
  return async (call) => {
    try {
      return await call();
    } catch (error) {
      if (
        !(error instanceof RemoteHttpError && statuses.includes(error.status))
      ) {
        throw error;
      }
      await recover();
      return await call();
    }
  };
}

/**
 * A session's file calls and command start, each through `wrap` (see
 * {@linkcode retryOnceAfter}); the other members as they are.
 *
 * @param files The file calls.
 * @param commands The command kind.
 * @param wrap The wrapper.
 * @returns The wrapped calls.
 */
export function wrapSessionCalls(
  files: RemoteFileOps,
  commands: RemoteCommandKind,
  wrap: RetryOnce,
): { files: RemoteFileOps; commands: RemoteCommandKind } {
  const wrapped: Record<string, unknown> = {};
  for (const key of Object.keys(files) as (keyof RemoteFileOps)[]) {
    const value = files[key];
    wrapped[key] = typeof value === "function"
      ? (...args: unknown[]) =>
        wrap(() => (value as (...a: unknown[]) => Promise<unknown>)(...args))
      : value;
  }
  return {
    files: wrapped as unknown as RemoteFileOps,
    commands: {
      ...commands,
      start: (request) => wrap(() => commands.start(request)),
    },
  };
}

/**
 * Whether a daemon answers a readiness call (`GET <path>`, 5 s, not retried:
 * the caller polls); any failure is "not yet", except an abort of `signal`.
 *
 * @example A daemon still starting
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { answers } from "./service_calls.ts";
 * const http = new HttpClient({
 *   baseUrl: "http://daemon.invalid",
 *   fetch: () => Promise.reject(new TypeError("connection refused")),
 * });
 * assertEquals(await answers(http, "/health"), false);
 * ```
 *
 * @param http The daemon's client.
 * @param path E.g. `/ping` or `/health`.
 * @param signal Stops the call.
 * @returns `true` once it answers.
 */
export async function answers(
  http: HttpClient,
  path: string,
  signal?: AbortSignal,
): Promise<boolean> {
  try {
    return await sendCall(http, {
      method: "GET",
      path,
      idempotent: false,
      timeoutMs: 5_000,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    return false;
  }
}

/**
 * Sends files as one `multipart/form-data` request, streamed with its
 * length (never retried, no deadline: an upload takes as long as it takes),
 * and drops the answer's body.
 *
 * @example Two parts in one request
 * ```ts
 * import { assert } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { sendMultipart } from "./service_calls.ts";
 * let sent = "";
 * const http = new HttpClient({
 *   baseUrl: "http://sandbox.invalid",
 *   fetch: async (_input, init) => {
 *     sent = await new Response(init?.body).text();
 *     return new Response(null, { status: 204 });
 *   },
 * });
 * await sendMultipart(http, { method: "POST", path: "/files" }, [
 *   { name: "path", content: "/w/a.txt" },
 *   { name: "file", filename: "a.txt", content: "hello" },
 * ]);
 * assert(sent.includes("/w/a.txt") && sent.includes("hello"));
 * ```
 *
 * @param http The client.
 * @param request The call's method, path, query and signal.
 * @param parts The parts, in order.
 * @returns When the server answered.
 */
export async function sendMultipart(
  http: HttpClient,
  request: Omit<HttpRequest, "body" | "headers" | "json">,
  parts: readonly MultipartPart[],
): Promise<void> {
  const { body, contentType, length } = multipartBody(parts);
  const response = await http.request({
    ...request,
    body,
    headers: {
      "content-type": contentType,
      "content-length": String(length),
    },
    idempotent: false,
    timeoutMs: null,
  });
  await response.body?.cancel();
}

/** The metadata entry that tags each creation of {@linkcode createTagged}. */
export const CREATE_TAG = "skillrun.create";

/**
 * Creates a sandbox tagged with a metadata entry of its own
 * ({@linkcode CREATE_TAG}: a new UUID), so that when the answer is lost (a
 * broken connection, a timeout, an unreadable or 5xx answer) the sandbox the
 * service may have made anyway is found by that tag and deleted before the
 * error is thrown: nothing is left running. A 4xx answer made nothing.
 *
 * @example A creation whose answer was lost
 * ```ts
 * import { assertEquals, assertRejects } from "@std/assert";
 * import { createTagged } from "./service_calls.ts";
 * const made = new Map<string, Readonly<Record<string, string>>>();
 * await assertRejects(() =>
 *   createTagged(
 *     (tag) => {
 *       made.set("s1", tag); // the service made it...
 *       return Promise.reject(new TypeError("connection reset")); // ...the answer was lost
 *     },
 *     (tag) =>
 *       Promise.resolve(
 *         [...made].filter(([, t]) => Object.entries(tag).every(([k, v]) => t[k] === v))
 *           .map(([id]) => ({ id })),
 *       ),
 *     (id) => Promise.resolve(made.delete(id)),
 *   )
 * );
 * assertEquals(made.size, 0); // found by its tag and deleted
 * ```
 *
 * @param create Sends the creation with the tag's metadata entry.
 * @param tagged Lists the sandboxes carrying the tag.
 * @param remove Deletes one.
 * @returns The new sandbox.
 */
export async function createTagged<S>(
  create: (tag: Readonly<Record<string, string>>) => Promise<S>,
  tagged: (tag: Readonly<Record<string, string>>) => Promise<{ id: string }[]>,
  remove: (id: string) => Promise<unknown>,
): Promise<S> {
  const tag = { [CREATE_TAG]: crypto.randomUUID() };
  try {
    return await create(tag);
  } catch (error) {
    const answered = error instanceof RemoteHttpError &&
      error.status >= 400 && error.status < 500;
    if (!answered) {
      try {
        for (const sandbox of await tagged(tag)) {
          await remove(sandbox.id).catch(() => {});
        }
      } catch {
        // The service is out of reach: nothing more can be done from here.
      }
    }
    throw error;
  }
}

/**
 * One unary call of the Connect protocol with its JSON codec
 * (`POST /<service>/<method>`); a Connect error answer (its `code` and
 * `message`) becomes the kind's error.
 *
 * @param http The client of the service.
 * @param method E.g. `filesystem.Filesystem/Stat`.
 * @param message The request message.
 * @param options Whether the call may be sent again, the kind's error, a signal.
 * @returns The answer message.
 */
export async function connectUnary<T>(
  http: HttpClient,
  method: string,
  message: unknown,
  options: {
    readonly idempotent: boolean;
    readonly error: (code: string, message: string) => Error;
    readonly signal?: AbortSignal | undefined;
  },
): Promise<T> {
  try {
    return await http.json<T>({
      method: "POST",
      path: `/${method}`,
      json: message,
      headers: { "connect-protocol-version": "1" },
      idempotent: options.idempotent,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if (error instanceof RemoteHttpError && error.code !== undefined) {
      throw options.error(error.code, error.serverMessage ?? error.message);
    }
    throw error;
  }
}

/**
 * The file calls of an object (a class's methods included) as a plain
 * object of bound functions, e.g. to wrap each with
 * {@linkcode wrapSessionCalls}.
 *
 * @param ops The file calls.
 * @returns The same calls, bound.
 */
export function boundFileOps(ops: RemoteFileOps): RemoteFileOps {
  const bound: Record<string, unknown> = {};
  for (
    const name of [
      "stat",
      "statMany",
      "list",
      "open",
      "upload",
      "statsByCommand",
    ] as const
  ) {
    const value = ops[name];
    if (value === undefined) continue;
    bound[name] = typeof value === "function" ? value.bind(ops) : value;
  }
  return bound as unknown as RemoteFileOps;
}
