/**
 * execd's `/files/*` routes in the OpenSandbox test server
 * (`opensandbox.ts`): info, remove, upload (multipart), download (with
 * `Range` as execd parses it), search (a glob on base names), move,
 * permissions and replace, on the host's real paths.
 *
 * @module
 */
import {
  type ByteRange,
  byteRange,
  errorText,
  fileStream,
  isObject,
} from "./_common.ts";
import {
  execdError,
  fileError,
  goFsError,
  goJsonSyntax,
  goJsonType,
  invalidBody,
  isNotFound,
  json,
  parseBody,
} from "./_opensandbox_answers.ts";
import type { OpenSandboxState } from "./_opensandbox_state.ts";
import { hostPath } from "../../_internal/std.ts";

// ---------------------------------------------------------------------------
// Glob on base names (doublestar semantics for one segment)

function globToRegExp(pattern: string): RegExp {
  let source = "";
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[++i];
      if (next === undefined) throw new SyntaxError("syntax error in pattern");
      source += next.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    } else if (c === "*") {
      const segmentStart = i === 0 || pattern[i - 1] === "/";
      if (pattern[i + 1] === "*" && segmentStart) {
        // doublestar: `**/` also matches no folder at all, a final `**` anything.
        while (pattern[i + 1] === "*") i++;
        if (pattern[i + 1] === "/") {
          source += "(?:.*/)?";
          i++;
        } else if (i + 1 >= pattern.length) {
          source += ".*";
        } else {
          source += "[^/]*";
        }
        continue;
      }
      while (pattern[i + 1] === "*") i++;
      source += "[^/]*";
    } else if (c === "?") {
      source += "[^/]";
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) throw new SyntaxError("syntax error in pattern");
      let body = pattern.slice(i + 1, end);
      let negate = false;
      if (body.startsWith("!") || body.startsWith("^")) {
        negate = true;
        body = body.slice(1);
      }
      source += `[${negate ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      source += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      source += ")";
    } else if (c === "," && braces > 0) {
      source += "|";
    } else {
      source += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    }
  }
  if (braces > 0) throw new SyntaxError("syntax error in pattern");
  return new RegExp(`^${source}$`, "s");
}

/** `GET /files/info?path=...`. */
export async function filesInfo(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const result: Record<string, unknown> = {};
  for (const path of url.searchParams.getAll("path")) {
    let absolute: string;
    try {
      absolute = state.absolute(path);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error accessing file: invalid path ${path}: ${errorText(error)}`,
      );
    }
    try {
      result[path] = state.fileInfo(absolute, await Deno.lstat(absolute));
    } catch (error) {
      return isNotFound(error)
        ? execdError(
          404,
          "FILE_NOT_FOUND",
          `file not found. file not found: ${path}: lstat ${absolute}: no such file or directory`,
        )
        : fileError(error);
    }
  }
  // Go writes a map's keys in sorted order.
  return json(200, sortedKeys(result));
}

function sortedKeys<T>(map: Record<string, T>): Record<string, T> {
  return Object.fromEntries(
    Object.entries(map).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
  );
}

/** `DELETE /files?path=...`: removes files, never folders; a missing one is fine. */
export async function removeFiles(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  for (const path of url.searchParams.getAll("path")) {
    const fail = (reason: string) =>
      execdError(
        500,
        "RUNTIME_ERROR",
        `error removing file ${path}. ${reason}`,
      );
    let absolute: string;
    try {
      absolute = state.absolute(path);
    } catch (error) {
      return fail(`invalid path: ${errorText(error)}`);
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(absolute);
    } catch (error) {
      if (isNotFound(error)) continue;
      return fail(errorText(error));
    }
    if (info.isDirectory) return fail(`path is a directory: ${path}`);
    try {
      await Deno.remove(absolute);
    } catch (error) {
      return fail(`failed to remove file: ${errorText(error)}`);
    }
  }
  return new Response(null, { status: 200 });
}

/** The most parts Go's `mime/multipart` reads from one form. */
export const MAX_MULTIPART_PARTS = 1000;

/** `POST /files/upload`: multipart `metadata` and `file` parts, in pairs (500 at most). */
export async function upload(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    return execdError(400, "INVALID_FILE", "multipart form is empty");
  }
  // Go's mime/multipart reads at most 1000 parts (so 500 metadata/file
  // pairs); past that ParseMultipartForm fails and execd says the form is empty.
  let parts = 0;
  for (const _ of form.keys()) parts++;
  if (parts > MAX_MULTIPART_PARTS) {
    return execdError(400, "INVALID_FILE", "multipart form is empty");
  }
  // Go's multipart form: only parts with a file name are files.
  const metadataParts = form.getAll("metadata").filter((entry): entry is File =>
    entry instanceof File
  );
  const fileParts = form.getAll("file").filter((entry): entry is File =>
    entry instanceof File
  );
  if (metadataParts.length === 0) {
    return execdError(400, "INVALID_FILE_METADATA", "metadata file is missing");
  }
  if (fileParts.length === 0) {
    return execdError(400, "INVALID_FILE_CONTENT", "file is missing");
  }
  if (metadataParts.length !== fileParts.length) {
    return execdError(
      400,
      "INVALID_FILE",
      `metadata and file count mismatch: ${metadataParts.length} vs ${fileParts.length}`,
    );
  }
  for (let i = 0; i < metadataParts.length; i++) {
    let meta: unknown;
    const metaText = await metadataParts[i]!.text();
    try {
      meta = JSON.parse(metaText);
    } catch (error) {
      return execdError(
        400,
        "INVALID_FILE_METADATA",
        `invalid metadata format. ${
          goJsonSyntax(metaText, "unmarshal") ?? errorText(error)
        }`,
      );
    }
    if (!isObject(meta)) {
      return execdError(
        400,
        "INVALID_FILE_METADATA",
        `invalid metadata format. json: cannot unmarshal ${
          goJsonType(meta)
        } into Go value of type model.FileMetadata`,
      );
    }
    // json.Unmarshal into model.FileMetadata: `mode` is a Go int.
    const mode = meta.mode;
    if (
      mode !== undefined && mode !== null &&
      (typeof mode !== "number" || !Number.isInteger(mode))
    ) {
      return execdError(
        400,
        "INVALID_FILE_METADATA",
        `invalid metadata format. json: cannot unmarshal ${goJsonType(mode)}${
          typeof mode === "number" ? ` ${mode}` : ""
        } into Go struct field FileMetadata.Permission.mode of type int`,
      );
    }
    const target = typeof meta.path === "string" ? meta.path : "";
    if (target === "") {
      return execdError(400, "INVALID_FILE_METADATA", "metadata path is empty");
    }
    let resolved: string;
    try {
      // Not cleaned: a target ending in `/` stays so (Go opens it as given).
      const expanded = state.expand(target);
      resolved = expanded.startsWith("/")
        ? expanded
        : `${state.cwd}/${expanded}`;
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error resolving target path ${target}. ${errorText(error)}`,
      );
    }
    const directory = goDir(resolved);
    try {
      await Deno.mkdir(directory, { recursive: true, mode: 0o777 });
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error creating target directory ${directory}. ${await goMkdirAllError(
          directory,
          error,
        )}`,
      );
    }
    try {
      await Deno.writeFile(resolved, fileParts[i]!.stream(), { mode: 0o777 });
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error opening destination file ${resolved}. ${
          goFsError("open", resolved, error)
        }`,
      );
    }
    try {
      await state.chmodFile(resolved, meta);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error chmoding file ${resolved}. ${errorText(error)}`,
      );
    }
  }
  return new Response(null, { status: 200 });
}

/** Go's `filepath.Dir`: all but the last element (after the last `/`), cleaned. */
function goDir(path: string): string {
  const cut = path.slice(0, path.lastIndexOf("/") + 1);
  if (cut === "") return ".";
  const clean = hostPath.normalize(cut);
  return clean.length > 1 && clean.endsWith("/") ? clean.slice(0, -1) : clean;
}

/**
 * Go's `os.MkdirAll` error: over an existing file it names that file
 * (`mkdir <file>: not a directory`), whatever lies below it.
 */
async function goMkdirAllError(path: string, error: unknown): Promise<string> {
  for (let at = path; at !== "/" && at !== "."; at = hostPath.dirname(at)) {
    const info = await Deno.stat(at).catch(() => null);
    if (info === null) continue;
    if (!info.isDirectory) {
      return goFsError("mkdir", at, new Deno.errors.NotADirectory(at));
    }
    break;
  }
  return goFsError("mkdir", path, error);
}

function contentDisposition(name: string): string {
  if (![...name].some((c) => c.codePointAt(0)! > 127)) {
    // Go writes a header value's CR and LF as spaces (a file name may hold them).
    return `attachment; filename="${name.replace(/[\r\n]/g, " ")}"`;
  }
  const encoded = encodeURIComponent(name).replace(/%2F/gi, "/");
  return `attachment; filename="${encoded}"; filename*=UTF-8''${encoded}`;
}

/**
 * http.ServeContent first seeks to the end for the size; a file that cannot
 * seek there (`/proc/*`, whose stat says size 0) is answered 500 `seeker
 * can't seek` (http.Error: text/plain, no Content-Length).
 */
async function unseekable(
  file: Deno.FsFile,
  disposition: string,
  mtime: Date | null,
): Promise<Response | undefined> {
  try {
    await file.seek(0, Deno.SeekMode.End);
    await file.seek(0, Deno.SeekMode.Start);
    return undefined;
  } catch {
    file.close();
    return new Response("seeker can't seek\n", {
      status: 500,
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "content-disposition": disposition,
        "x-content-type-options": "nosniff",
        // Set before the size is asked for, and kept (measured).
        ...(mtime === null ? {} : { "last-modified": mtime.toUTCString() }),
      },
    });
  }
}

/** ParseRange of execd: null on a syntax error, else satisfiable ranges. */
function parseRange(header: string, size: number): ByteRange[] | null {
  if (!header.startsWith("bytes=")) return null;
  const result: ByteRange[] = [];
  for (const raw of header.slice(6).split(",")) {
    const range = raw.trim();
    if (range === "") continue;
    const dash = range.indexOf("-");
    if (dash < 0) return null;
    const one = byteRange(
      range.slice(0, dash).trim(),
      range.slice(dash + 1).trim(),
      size,
    );
    if (one === "invalid") return null;
    if (one !== "unsatisfiable") result.push(one);
  }
  return result;
}

/** A body that ends before its announced length: the connection closes. */
function shortBody(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.length > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

/** `GET /files/download?path=`, with `Range` as execd answers it. */
export async function download(
  state: OpenSandboxState,
  request: Request,
  url: URL,
): Promise<Response> {
  const path = url.searchParams.get("path") ?? "";
  if (path === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let resolved: string;
  try {
    resolved = hostPath.resolve(state.cwd, state.expand(path));
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error resolving file path: ${path}. ${errorText(error)}`,
    );
  }
  let file: Deno.FsFile;
  try {
    file = await Deno.open(resolved, { read: true });
  } catch (error) {
    return fileError(error, "open", resolved);
  }
  let info: Deno.FileInfo;
  try {
    info = await file.stat();
  } catch (error) {
    file.close();
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error getting file stat info: ${resolved}. ${errorText(error)}`,
    );
  }
  if (info.isDirectory) {
    // The real execd opens a folder fine and http.ServeContent answers 200
    // with a Content-Length of the largest int64, then fails reading: a
    // client sees a 200 whose body breaks.
    file.close();
    return new Response(shortBody(new Uint8Array()), {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-disposition": contentDisposition(hostPath.basename(resolved)),
        "content-length": "9223372036854775807",
        "accept-ranges": "bytes",
      },
    });
  }
  const size = info.size;
  const headers = new Headers({
    "content-type": "application/octet-stream",
    "content-disposition": contentDisposition(hostPath.basename(resolved)),
    "content-length": String(size),
  });
  const rangeHeader = request.headers.get("range") ?? "";
  if (rangeHeader !== "") {
    const ranges = parseRange(rangeHeader, size);
    if (ranges === null) {
      // The real execd has set Content-Type and Content-Length for the file
      // already; its JSON error goes out under them, so the body is cut
      // short of the announced length (or cut at it) and the connection
      // closes: a client sees a broken body.
      // Go refuses to write a body longer than the Content-Length already
      // set, so not one byte of the JSON error goes out.
      file.close();
      return new Response(shortBody(new Uint8Array()), {
        status: 416,
        headers,
      });
    }
    const range = ranges[0];
    if (range !== undefined) {
      await file.seek(range.start, Deno.SeekMode.Start);
      headers.set(
        "content-range",
        `bytes ${range.start}-${range.start + range.length - 1}/${size}`,
      );
      headers.set("content-length", String(range.length));
      return new Response(fileStream(file, range.length, 1024 * 1024), {
        status: 206,
        headers,
      });
    }
    const failed = await unseekable(
      file,
      headers.get("content-disposition")!,
      info.mtime,
    );
    if (failed) return failed;
    // http.ServeContent's own parseRange keeps a suffix of length 0 (which
    // execd's copy skips): alone it is a 206 of no byte; beside other
    // ranges the real server answered 200 with the whole file (measured).
    const parts = rangeHeader.slice(6).split(",").filter((part) =>
      part.trim() !== ""
    );
    const emptySuffixes = parts.filter((part) =>
      /^\s*-\s*0+\s*$/.test(part)
    ).length;
    const several = rangeHeader.includes(",");
    if (size > 0 && emptySuffixes === 1 && !several) {
      file.close();
      return new Response(null, {
        status: 206,
        headers: {
          "accept-ranges": "bytes",
          "content-disposition": headers.get("content-disposition")!,
          "content-type": "application/octet-stream",
          "content-range": `bytes ${size}-${size - 1}/${size}`,
          "content-length": "0",
          ...(info.mtime === null
            ? {}
            : { "last-modified": info.mtime.toUTCString() }),
        },
      });
    }
    if (size > 0 && emptySuffixes === 0 && !several) {
      // http.ServeContent: the range does not overlap the file. (A header
      // with a comma, none of whose ranges overlaps, got the whole file:
      // measured.)
      file.close();
      return new Response("invalid range: failed to overlap\n", {
        status: 416,
        headers: {
          "content-type": "text/plain; charset=utf-8",
          "content-disposition": headers.get("content-disposition")!,
          "x-content-type-options": "nosniff",
          "content-range": `bytes */${size}`,
          ...(info.mtime === null
            ? {}
            : { "last-modified": info.mtime.toUTCString() }),
        },
      });
    }
  }
  const failed = await unseekable(
    file,
    headers.get("content-disposition")!,
    info.mtime,
  );
  if (failed) return failed;
  headers.set("accept-ranges", "bytes");
  if (info.mtime !== null) {
    headers.set("last-modified", info.mtime.toUTCString());
  }
  // The whole file: Deno streams a file's own readable without copies.
  return new Response(file.readable, { status: 200, headers });
}

/** `GET /files/search?path=&pattern=`: files whose base name matches the glob. */
export async function searchFiles(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const path = url.searchParams.get("path") ?? "";
  if (path === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let root: string;
  try {
    root = state.absolute(path);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      // The real message names an empty path here (two spaces).
      `error converting path  to absolute. ${errorText(error)}`,
    );
  }
  try {
    await Deno.stat(root);
  } catch (error) {
    return fileError(error, "stat", root);
  }
  const pattern = url.searchParams.get("pattern") || "**";
  let matcher: RegExp;
  try {
    matcher = globToRegExp(pattern);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error searching files. invalid pattern ${pattern}: ${errorText(error)}`,
    );
  }
  const files: Record<string, unknown>[] = [];
  const walk = async (current: string, info: Deno.FileInfo): Promise<void> => {
    if (info.isDirectory) {
      let names: string[];
      try {
        names = [];
        for await (const entry of Deno.readDir(current)) names.push(entry.name);
      } catch (error) {
        if (isNotFound(error)) return;
        throw error;
      }
      names.sort();
      for (const name of names) {
        const child = hostPath.join(current, name);
        let childInfo: Deno.FileInfo;
        try {
          childInfo = await Deno.lstat(child);
        } catch (error) {
          if (isNotFound(error)) continue;
          throw error;
        }
        await walk(child, childInfo);
      }
      return;
    }
    if (matcher.test(hostPath.basename(current))) {
      files.push(state.fileInfo(current, info));
    }
  };
  try {
    await walk(root, await Deno.lstat(root));
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error searching files. ${errorText(error)}`,
    );
  }
  return json(200, files);
}

/** `POST /files/mv`. */
export async function moveFiles(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!Array.isArray(body.value)) {
    return invalidBody(
      `error parsing request, MAYBE invalid body format. json: cannot unmarshal ${
        goJsonType(body.value)
      } into Go value of type []model.RenameFileItem`,
    );
  }
  for (const item of body.value) {
    if (!isObject(item)) continue;
    try {
      const src = state.absolute(String(item.src ?? ""));
      const dest = state.absolute(String(item.dest ?? ""));
      try {
        await Deno.stat(src);
      } catch (error) {
        if (isNotFound(error)) {
          throw new Deno.errors.NotFound(
            `source path not found: ${item.src}: stat ${src}: no such file or directory`,
          );
        }
      }
      await Deno.mkdir(hostPath.dirname(dest), {
        recursive: true,
        mode: 0o755,
      });
      let exists = true;
      try {
        await Deno.stat(dest);
      } catch {
        exists = false;
      }
      if (exists) {
        throw new Error(`destination path already exists: ${item.dest}`);
      }
      await Deno.rename(src, dest);
    } catch (error) {
      return fileError(error);
    }
  }
  return new Response(null, { status: 200 });
}

/** `POST /files/permissions`. */
export async function chmodFiles(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!isObject(body.value)) {
    return invalidBody(
      `error parsing request, MAYBE invalid body format. json: cannot unmarshal ${
        goJsonType(body.value)
      } into Go value of type map[string]model.Permission`,
    );
  }
  for (const [path, permission] of Object.entries(body.value)) {
    let absolute: string;
    try {
      absolute = state.absolute(path);
      await state.chmodFile(absolute, isObject(permission) ? permission : {});
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error changing permissions for ${path}. ${
          error instanceof Deno.errors.NotFound ||
            error instanceof Deno.errors.PermissionDenied
            ? goFsError("chmod", state.absolute(path), error)
            : errorText(error)
        }`,
      );
    }
  }
  return new Response(null, { status: 200 });
}

/** `POST /files/replace`. */
export async function replaceContent(
  state: OpenSandboxState,
  request: Request,
  url: URL,
): Promise<Response> {
  const verbose = url.searchParams.get("verbose") === "true";
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!isObject(body.value)) {
    return invalidBody(
      `error parsing request, MAYBE invalid body format. json: cannot unmarshal ${
        goJsonType(body.value)
      } into Go value of type map[string]model.ReplaceFileContentItem`,
    );
  }
  const results: Record<string, { replacedCount: number }> = {};
  for (const [path, item] of Object.entries(body.value)) {
    const old = isObject(item) && typeof item.old === "string" ? item.old : "";
    const replacement = isObject(item) && typeof item.new === "string"
      ? item.new
      : "";
    try {
      const absolute = state.absolute(path);
      try {
        await Deno.stat(absolute);
      } catch (error) {
        return fileError(error, "stat", absolute);
      }
      const content = await Deno.readTextFile(absolute);
      if (old === "") return invalidBody("old content must not be empty");
      await Deno.writeTextFile(absolute, content.replaceAll(old, replacement));
      results[path] = { replacedCount: content.split(old).length - 1 };
    } catch (error) {
      return fileError(error);
    }
  }
  return verbose
    ? json(200, sortedKeys(results))
    : new Response(null, { status: 200 });
}
