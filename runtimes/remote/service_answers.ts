/**
 * What the kinds do alike with a service's REST API and its answers: the
 * API's base URL from an option, a client of the API or of a daemon, the
 * describe and delete calls of a sandbox by its id (404: not there), the
 * states of a sandbox that never runs again, a date that may be missing or
 * bad, and a file's facts from a daemon's fields.
 *
 * @module
 */
import { posix } from "../../_internal/std.ts";
import type { FileInfo, FileType } from "../types.ts";
import type { SkillEventListener } from "../../observe/events.ts";
import { HttpClient } from "./http.ts";
import { httpOptionsOf, jsonOrNull, sendCall } from "./service_calls.ts";

/**
 * A service's base URL from the `baseUrl` option: trailing slashes gone and
 * `suffix` (an API version such as `/v1`) added when it is not there. The
 * URL must start with `http://` or `https://`; the rest is checked by the
 * {@linkcode HttpClient} made on it ({@linkcode serviceClient}): no
 * credentials, query or fragment, and an error that never shows a
 * credential.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serviceBaseUrl } from "./service_answers.ts";
 * assertEquals(serviceBaseUrl("http://h:8080/", "/v1"), "http://h:8080/v1");
 * assertEquals(serviceBaseUrl("http://h:8080/v1", "/v1"), "http://h:8080/v1");
 * ```
 *
 * @param baseUrl The option's value.
 * @param suffix What the path ends with.
 * @returns The base URL.
 * @throws {TypeError} It does not start with `http://` or `https://`.
 */
export function serviceBaseUrl(baseUrl: string, suffix = ""): string {
  // Only what the client would read differently: without a scheme it takes
  // a daemon's bare address (`host:port/...`), which an option is not.
  if (!/^https?:\/\//i.test(baseUrl)) {
    throw new TypeError(
      "Cannot use base URL: it must start with http:// or https://",
    );
  }
  const trimmed = baseUrl.replace(/\/+$/, "");
  return trimmed.endsWith(suffix) ? trimmed : `${trimmed}${suffix}`;
}

/**
 * An HTTP client on a service's API or on a sandbox daemon's endpoint as
 * the service gave it: the address (`http://` added when it has no scheme;
 * it may carry a path), the headers every call must carry (an API key, an
 * endpoint's own: never shown in errors), and the kind's `fetch`, call
 * deadline and event listener.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serviceClient } from "./service_answers.ts";
 * const http = serviceClient("127.0.0.1:9/proxy/44772/", { "x-k": "v" }, {});
 * assertEquals(http.baseUrl, "http://127.0.0.1:9/proxy/44772");
 * ```
 *
 * @param endpoint The address.
 * @param headers Headers for every call.
 * @param options The kind's options.
 * @returns The client.
 */
export function serviceClient(
  endpoint: string,
  headers: Readonly<Record<string, string>>,
  options: {
    readonly fetch?: typeof fetch | undefined;
    readonly requestTimeoutMs?: number | undefined;
    readonly onEvent?: SkillEventListener | undefined;
  },
): HttpClient {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)
    ? endpoint
    : `http://${endpoint}`;
  return new HttpClient({
    baseUrl: url.replace(/\/+$/, ""),
    headers: { ...headers },
    secretHeaders: Object.keys(headers),
    ...httpOptionsOf(options),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
}

/**
 * A service's `get` and `delete` of a sandbox at `<path>/<id>`:
 * `GET` answers the sandbox (`null` on 404), `DELETE` whether it was there
 * (`false` on 404).
 *
 * @example A sandbox the server knows, and one it does not
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { HttpClient } from "./http.ts";
 * import { sandboxCalls } from "./service_answers.ts";
 * const http = new HttpClient({
 *   baseUrl: "http://sandboxes.invalid",
 *   fetch: (input) =>
 *     Promise.resolve(
 *       String(input).endsWith("/sandbox/s1")
 *         ? Response.json({ id: "s1" })
 *         : new Response("not found", { status: 404 }),
 *     ),
 * });
 * const calls = sandboxCalls(http, "/sandbox", (answer: { id: string }) => answer.id);
 * assertEquals([await calls.get("s1"), await calls.get("s2")], ["s1", null]);
 * assertEquals(await calls.delete("s2"), false);
 * ```
 *
 * @param http The API's client.
 * @param path The sandboxes' path (`/sandboxes`).
 * @param sandbox Reads the service's answer.
 * @returns The two calls.
 */
export function sandboxCalls<S>(
  http: HttpClient,
  path: string,
  sandbox: (answer: never) => S,
): {
  get(id: string, signal?: AbortSignal): Promise<S | null>;
  delete(id: string, signal?: AbortSignal): Promise<boolean>;
} {
  const at = (id: string) => `${path}/${encodeURIComponent(id)}`;
  return {
    get: async (id, signal) => {
      const answer = await jsonOrNull<never>(http, {
        method: "GET",
        path: at(id),
        ...(signal ? { signal } : {}),
      });
      return answer === null ? null : sandbox(answer);
    },
    delete: (id, signal) =>
      sendCall(http, {
        method: "DELETE",
        path: at(id),
        ...(signal ? { signal } : {}),
      }, [404]),
  };
}

/**
 * A service's `gone` for sandboxes with a state: one in `states` never runs
 * again, and the reason is its state (with the service's detail, when it
 * gave one).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { goneStates } from "./service_answers.ts";
 * const gone = goneStates(["Failed", "Terminated"]);
 * assertEquals(gone({ state: "Failed", detail: "out of memory" }), "Failed (out of memory)");
 * assertEquals(gone({ state: "Running" }), undefined);
 * ```
 *
 * @param states The states after which a sandbox never runs again.
 * @returns The hook.
 */
export function goneStates(
  states: readonly string[],
): (
  sandbox: { readonly state?: string; readonly detail?: string | undefined },
) => string | undefined {
  return ({ state, detail }) =>
    state !== undefined && states.includes(state)
      ? `${state}${detail ? ` (${detail})` : ""}`
      : undefined;
}

/**
 * A date from an answer, `null` when missing or not a date.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { dateOrNull } from "./service_answers.ts";
 * assertEquals(dateOrNull("nonsense"), null);
 * assertEquals(dateOrNull("2026-01-02T00:00:00Z")?.getTime(), Date.UTC(2026, 0, 2));
 * ```
 *
 * @param value An ISO date, ms since the epoch, or nothing.
 * @returns The date.
 */
export function dateOrNull(value: unknown): Date | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  if (value === "") return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * A file's facts from a daemon's fields: the size when it is a number
 * (else 0), the name from the path, `executable` from the mode when given.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fileInfo } from "./service_answers.ts";
 * const info = fileInfo("/w/run.sh", "file", { size: 9, modified: 0, mode: 0o755 });
 * assertEquals([info.name, info.size, info.executable], ["run.sh", 9, true]);
 * ```
 *
 * @param path The absolute path.
 * @param type What it is.
 * @param fields Its size, its modification (see {@linkcode dateOrNull}) and
 * its mode bits.
 * @returns The facts.
 */
export function fileInfo(
  path: string,
  type: FileType,
  fields: { size?: unknown; modified?: unknown; mode?: number | undefined },
): FileInfo {
  return {
    path,
    name: posix.basename(path),
    type,
    size: typeof fields.size === "number" ? fields.size : 0,
    modifiedAt: dateOrNull(fields.modified),
    ...(fields.mode === undefined
      ? {}
      : { executable: (fields.mode & 0o100) !== 0 }),
  };
}
