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
    // A json.Decoder reads the first value and leaves what follows.
    const scan = goJsonScan(text, "decoder");
    if (text.trim() !== "" && scan.error === undefined) {
      try {
        return { ok: true, value: JSON.parse(text.slice(0, scan.end)) };
      } catch {
        // fall through to the error
      }
    }
    return { ok: false, error: goJsonError(text, error) };
  }
}

/** encoding/json's words for a body that does not decode (a json.Decoder, as gin reads it). */
function goJsonError(text: string, _error: unknown): string {
  if (text.trim() === "") return "EOF";
  return goJsonSyntax(text, "decoder") ?? "unexpected EOF";
}

/**
 * The syntax error encoding/json's scanner reports for `text`, in its words
 * (`invalid character 'n' looking for beginning of object key string`), or
 * `undefined` when the text is valid up to its end. A `json.Decoder` reads
 * one value and ignores what follows; `json.Unmarshal` refuses it
 * (`after top-level value`) and says `unexpected end of JSON input` where a
 * decoder says `unexpected EOF`.
 */
export function goJsonSyntax(
  text: string,
  mode: "decoder" | "unmarshal",
): string | undefined {
  return goJsonScan(text, mode).error;
}

/** {@linkcode goJsonSyntax}, and where the first value ends. */
function goJsonScan(
  text: string,
  mode: "decoder" | "unmarshal",
): { error: string | undefined; end: number } {
  // Go's quoteChar: strconv.Quote's escapes inside single quotes.
  const named: Record<string, string> = {
    "\x07": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
  };
  const quote = (c: string) =>
    c === "'" ? "'\\''" : c === '"' ? "'\"'" : `'${
      named[c] ??
        (c < " " || c === "\x7f"
          ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`
          : c)
    }'`;
  const bad = (c: string, context: string) =>
    `invalid character ${quote(c)} ${context}`;
  const space = (c: string | undefined) =>
    c === " " || c === "\t" || c === "\n" || c === "\r";
  let i = 0;
  const skip = () => {
    while (space(text[i])) i++;
  };
  const value = (): string | undefined => {
    skip();
    const c = text[i];
    if (c === undefined) return "";
    if (c === "{") {
      i++;
      skip();
      if (text[i] === "}") {
        i++;
        return undefined;
      }
      for (;;) {
        skip();
        if (text[i] === undefined) return "";
        if (text[i] !== '"') {
          return bad(text[i]!, "looking for beginning of object key string");
        }
        const key = string();
        if (key !== undefined) return key;
        skip();
        if (text[i] === undefined) return "";
        if (text[i] !== ":") return bad(text[i]!, "after object key");
        i++;
        const inner = value();
        if (inner !== undefined) return inner;
        skip();
        if (text[i] === undefined) return "";
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return undefined;
        }
        return bad(text[i]!, "after object key:value pair");
      }
    }
    if (c === "[") {
      i++;
      skip();
      if (text[i] === "]") {
        i++;
        return undefined;
      }
      for (;;) {
        const inner = value();
        if (inner !== undefined) return inner;
        skip();
        if (text[i] === undefined) return "";
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return undefined;
        }
        return bad(text[i]!, "after array element");
      }
    }
    if (c === '"') return string();
    if (c === "-" || (c >= "0" && c <= "9")) {
      const digit = (d: string | undefined) =>
        d !== undefined && d >= "0" && d <= "9";
      if (c === "-") {
        i++;
        if (text[i] === undefined) return "";
        if (!digit(text[i])) return bad(text[i]!, "in numeric literal");
      }
      if (text[i] === "0") i++;
      else while (digit(text[i])) i++;
      if (text[i] === ".") {
        i++;
        if (text[i] === undefined) return "";
        if (!digit(text[i])) {
          return bad(text[i]!, "after decimal point in numeric literal");
        }
        while (digit(text[i])) i++;
      }
      if (text[i] === "e" || text[i] === "E") {
        i++;
        if (text[i] === "+" || text[i] === "-") i++;
        if (text[i] === undefined) return "";
        if (!digit(text[i])) {
          return bad(text[i]!, "in exponent of numeric literal");
        }
        while (digit(text[i])) i++;
      }
      return undefined;
    }
    for (const literal of ["true", "false", "null"]) {
      if (c === literal[0]) {
        for (let k = 1; k < literal.length; k++) {
          const d = text[i + k];
          if (d === undefined) return "";
          if (d !== literal[k]) {
            return bad(d, `in literal ${literal} (expecting '${literal[k]}')`);
          }
        }
        i += literal.length;
        return undefined;
      }
    }
    return bad(c, "looking for beginning of value");
  };
  const string = (): string | undefined => {
    i++; // the opening quote
    for (;;) {
      const c = text[i];
      if (c === undefined) return "";
      if (c === '"') {
        i++;
        return undefined;
      }
      if (c < " ") return bad(c, "in string literal");
      if (c === "\\") {
        const e = text[i + 1];
        if (e === undefined) return "";
        if (e === "u") {
          for (let k = 2; k < 6; k++) {
            const h = text[i + k];
            if (h === undefined) return "";
            if (!/[0-9a-fA-F]/.test(h)) {
              return bad(h, "in \\u hexadecimal character escape");
            }
          }
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) return bad(e, "in string escape code");
        i += 2;
        continue;
      }
      i++;
    }
  };
  const error = value();
  if (error === "") {
    return {
      error: mode === "decoder"
        ? "unexpected EOF"
        : "unexpected end of JSON input",
      end: i,
    };
  }
  if (error !== undefined) return { error, end: i };
  const end = i;
  if (mode === "unmarshal") {
    skip();
    if (text[i] !== undefined) {
      return { error: bad(text[i]!, "after top-level value"), end };
    }
  }
  return { error: undefined, end };
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
