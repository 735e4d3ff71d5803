/**
 * The checks of the MCP HTTP handler (`http.ts`) that run before any session
 * is touched: the path, DNS rebinding protection (`Host`, `Origin`), the
 * bearer token, and the bounded JSON body of a session's start.
 *
 * @module
 */
import { BodyTooLargeError, readCapped } from "../../_internal/body.ts";

/** Largest initialisation request read by the handler itself. */
const MAX_INIT_BODY = 1024 * 1024;

/** What {@linkcode guardRequest} checks a request against. */
export interface RequestGuards {
  /** The one path served, when given. */
  readonly path: string | undefined;
  /** Allowed `Host` names (lower case; `*` for any), when given. */
  readonly hosts: readonly string[] | undefined;
  /** Allowed `Origin`s (lower case), when given. */
  readonly origins: readonly string[] | undefined;
  /** The bearer token, when one is required. */
  readonly token: string | undefined;
}

/**
 * The refusal a request gets before any session is touched (404 off the
 * path, 403 for a `Host` or `Origin` refused, 401 without the token), or
 * `undefined` when it may go on.
 *
 * @param request The request.
 * @param url Its parsed URL.
 * @param guards What it is checked against.
 * @returns The refusal, or `undefined`.
 */
export async function guardRequest(
  request: Request,
  url: URL,
  guards: RequestGuards,
): Promise<Response | undefined> {
  const { path, hosts, origins, token } = guards;
  if (path !== undefined && url.pathname !== path) {
    return jsonError(404, -32000, `Not found: MCP is served at ${path}`);
  }
  const refused = checkHostAndOrigin(
    request,
    url,
    hosts,
    origins,
    token !== undefined,
  );
  if (refused) return refused;
  if (token !== undefined && !(await hasToken(request, token))) {
    return jsonError(
      401,
      -32000,
      "Unauthorized: a valid bearer token is required",
      { "WWW-Authenticate": 'Bearer realm="mcp"' },
    );
  }
  return undefined;
}

/** A hostname of `allowedHosts`, lower-cased; refuses what is not one. */
export function lowerHost(host: string): string {
  if (typeof host !== "string" || host === "") {
    throw new TypeError(
      `Cannot allow host ${JSON.stringify(host)}: expected a hostname`,
    );
  }
  return host.toLowerCase();
}

/** A JSON-RPC error answer with no request id. */
export function jsonError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(
    JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }),
    { status, headers: { "content-type": "application/json", ...headers } },
  );
}

function hostnameOf(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** 403 for a `Host` or `Origin` that DNS rebinding protection refuses. */
function checkHostAndOrigin(
  request: Request,
  url: URL,
  hosts: readonly string[] | undefined,
  origins: readonly string[] | undefined,
  hasToken: boolean,
): Response | undefined {
  const host = request.headers.get("host") ?? url.host;
  const name = hostnameOf(host);
  const hostAllowed = hosts !== undefined
    ? hosts.includes("*") || (name !== undefined && hosts.includes(name))
    : hasToken || (name !== undefined && isAddressOrLocalhost(name));
  if (!hostAllowed) {
    return jsonError(
      403,
      -32000,
      `Forbidden: Host "${host}" is not allowed${
        hosts === undefined
          ? " (without a token only IP addresses and localhost are; list the server's names in allowedHosts, --allowed-hosts)"
          : ""
      }`,
    );
  }
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  let allowed: boolean;
  if (origins !== undefined) {
    allowed = origins.includes(origin.toLowerCase());
  } else {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    allowed = parsed !== undefined &&
      (parsed.protocol === "http:" || parsed.protocol === "https:") &&
      (hosts !== undefined && !hosts.includes("*")
        ? hosts.includes(parsed.hostname.toLowerCase())
        : parsed.host.toLowerCase() === host.toLowerCase());
  }
  return allowed
    ? undefined
    : jsonError(403, -32000, `Forbidden: Origin "${origin}" is not allowed`);
}

/** Whether a `Host` name is an IP address (v4, or v6 in brackets) or `localhost`. */
function isAddressOrLocalhost(name: string): boolean {
  return name === "localhost" || /^\d{1,3}(\.\d{1,3}){3}$/.test(name) ||
    /^\[[0-9a-f:.]+\]$/.test(name);
}

/** The client a request comes from: its remote address, else one for all. */
export function clientOf(addr: Deno.Addr | undefined): string {
  if (addr && (addr.transport === "tcp" || addr.transport === "udp")) {
    return addr.hostname;
  }
  return "unknown";
}

/** Compares the bearer token in constant time (through SHA-256 digests). */
async function hasToken(request: Request, token: string): Promise<boolean> {
  const header = request.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (!match) return false;
  const encoder = new TextEncoder();
  const [given, expected] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(match[1])),
    crypto.subtle.digest("SHA-256", encoder.encode(token)),
  ]);
  const a = new Uint8Array(given);
  const b = new Uint8Array(expected);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Reads a JSON body of at most 1 MiB, or the error response to give. */
export async function readJson(request: Request): Promise<unknown | Response> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_INIT_BODY) {
    await request.body?.cancel();
    return jsonError(
      413,
      -32000,
      "Payload too large: at most 1 MiB to start a session",
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = await readCapped(request.body, {
      maxBytes: MAX_INIT_BODY,
      overflow: "error",
    });
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    return jsonError(
      413,
      -32000,
      "Payload too large: at most 1 MiB to start a session",
    );
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return jsonError(400, -32700, "Parse error: Invalid JSON");
  }
}
