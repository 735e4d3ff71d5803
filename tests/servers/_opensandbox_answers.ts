/**
 * How the OpenSandbox servers write their answers, for the test server in
 * `opensandbox.ts`: execd's JSON as Go's encoding/json and gin write it, the
 * lifecycle API's JSON as FastAPI writes it, both error shapes, and request
 * bodies read with encoding/json's words for what does not decode.
 *
 * @module
 */
import { errorText } from "./_common.ts";

/** Go's encoding/json escapes <, >, & and U+2028/2029 (execd). */
export function goJsonText(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** A JSON answer as execd (Go, gin) writes it. */
export function json(
  status: number,
  value: unknown,
  headers?: HeadersInit,
): Response {
  return jsonText(status, goJsonText(value), headers);
}

/** A JSON answer as the lifecycle server (Python, FastAPI) writes it. */
export function pyJson(
  status: number,
  value: unknown,
  headers?: HeadersInit,
): Response {
  return jsonText(status, JSON.stringify(value), headers);
}

function jsonText(
  status: number,
  text: string,
  headers?: HeadersInit,
): Response {
  const response = new Response(text, {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
  if (headers !== undefined) {
    for (const [name, header] of new Headers(headers)) {
      response.headers.set(name, header);
    }
  }
  return response;
}

/** execd's error answer (`{code, message}`; gin's JSON). */
export function execdError(
  status: number,
  code: string,
  message: string,
): Response {
  return json(status, message === "" ? { code } : { code, message });
}

/** The lifecycle server's error answer (always `{code, message}`). */
export function lifecycleError(
  status: number,
  code: string,
  message: string,
): Response {
  return pyJson(status, { code, message }, {
    "x-request-id": crypto.randomUUID(),
  });
}

/** gin's plain-text 404 for a route it does not know. */
export function notFoundText(): Response {
  return new Response("404 page not found", {
    status: 404,
    headers: { "content-type": "text/plain" },
  });
}

/** Whether a file-system error means the path does not exist. */
export function isNotFound(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound;
}

/** Reads a request body as JSON; on failure, encoding/json's words. */
export async function readJson(
  request: Request,
): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  const text = await request.text();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: goJsonError(text, error) };
  }
}

/** encoding/json's words for a body that does not decode (as near as JS tells). */
function goJsonError(text: string, error: unknown): string {
  if (text.trim() === "") return "EOF";
  const message = errorText(error);
  if (/end of JSON input|Unterminated/i.test(message)) return "unexpected EOF";
  const position = /position (\d+)/.exec(message);
  const at = position === null ? undefined : text[Number(position[1])];
  return at === undefined
    ? "unexpected EOF"
    : `invalid character '${at}' looking for beginning of value`;
}

/** The JSON type of a value, in encoding/json's words. */
export function goJsonType(value: unknown): string {
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  return typeof value;
}

/** A Deno file error as Go's `*PathError` writes it: `open /p: no such file or directory`. */
export function goFsError(op: string, path: string, error: unknown): string {
  const reason = error instanceof Deno.errors.NotFound
    ? "no such file or directory"
    : error instanceof Deno.errors.PermissionDenied
    ? "permission denied"
    : error instanceof Deno.errors.NotADirectory
    ? "not a directory"
    : error instanceof Deno.errors.IsADirectory
    ? "is a directory"
    : error instanceof Deno.errors.AlreadyExists
    ? "file exists"
    : errorText(error).replace(/ \(os error \d+\).*$/, "").replace(
      /^./,
      (c) => c.toLowerCase(),
    );
  return `${op} ${path}: ${reason}`;
}

/** execd's 400 `INVALID_REQUEST_BODY`. */
export function invalidBody(message: string): Response {
  return execdError(400, "INVALID_REQUEST_BODY", message);
}

/** execd's answer to a failed file operation: 404 `FILE_NOT_FOUND` or 500 `RUNTIME_ERROR`. */
export function fileError(
  error: unknown,
  op?: string,
  path?: string,
): Response {
  const text = op === undefined || path === undefined
    ? errorText(error)
    : goFsError(op, path, error);
  return isNotFound(error)
    ? execdError(404, "FILE_NOT_FOUND", `file not found. ${text}`)
    : execdError(500, "RUNTIME_ERROR", `error accessing file: ${text}`);
}

/** Reads a JSON body, or gives execd's 400 for one that does not decode. */
export async function parseBody(
  request: Request,
): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const body = await readJson(request);
  if (!body.ok) {
    return {
      ok: false,
      response: invalidBody(
        `error parsing request, MAYBE invalid body format. ${body.error}`,
      ),
    };
  }
  return body;
}
