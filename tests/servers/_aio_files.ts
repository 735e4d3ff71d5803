/**
 * The `/v1/file/*` routes of the AIO test server (`aio.ts`): upload
 * (multipart), download (whole, or one `Range` when asked for), list, read
 * and write, on the host's real paths.
 *
 * @module
 */
import type { AioState } from "./_aio_state.ts";
import { byteRange, encoder, fileStream } from "./_common.ts";
import {
  envelope,
  fileError,
  readJson,
  validationError,
} from "./_aio_answers.ts";

/** Whether a path is absolute (POSIX). */
export function isAbsolutePosix(path: string): boolean {
  return path.startsWith("/");
}

function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function baseName(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

function modeString(info: Deno.FileInfo): string {
  const mode = info.mode ?? 0;
  const type = info.isSymlink ? "l" : info.isDirectory ? "d" : "-";
  const bits = "rwxrwxrwx";
  let out = type;
  for (let i = 0; i < 9; i++) {
    out += mode & (1 << (8 - i)) ? bits[i] : "-";
  }
  return out;
}

function fileInfoOf(
  path: string,
  info: Deno.FileInfo,
  options: { size: boolean; permissions: boolean },
): Record<string, unknown> {
  const name = baseName(path);
  const dot = name.lastIndexOf(".");
  return {
    name,
    path,
    is_directory: info.isDirectory,
    size: options.size && !info.isDirectory ? info.size : null,
    modified_time: info.mtime ? info.mtime.toISOString() : null,
    permissions: options.permissions ? modeString(info) : null,
    extension: !info.isDirectory && dot > 0 ? name.slice(dot) : null,
  };
}

/** `POST /v1/file/upload` (multipart `file` and an optional `path`). */
export async function upload(
  state: AioState,
  request: Request,
): Promise<Response> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    return validationError([{
      loc: ["body", "file"],
      msg: "Field required",
      type: "missing",
    }]);
  }
  const file = form.get("file");
  if (!(file instanceof File)) {
    return validationError([{
      loc: ["body", "file"],
      msg: file === null ? "Field required" : "Expected UploadFile",
      type: file === null ? "missing" : "value_error",
    }]);
  }
  const pathField = form.get("path");
  const target = typeof pathField === "string" && pathField.length > 0
    ? pathField
    : `${state.home}/${file.name}`;
  if (!isAbsolutePosix(target)) {
    return fileError(
      target,
      "upload",
      new Error(`Path must be absolute: ${target}`),
      "invalid_path",
    );
  }
  try {
    await Deno.mkdir(parentOf(target), { recursive: true });
    const out = await Deno.open(target, {
      write: true,
      create: true,
      truncate: true,
    });
    await file.stream().pipeTo(out.writable);
  } catch (error) {
    return fileError(target, "upload", error);
  }
  return envelope({
    file_path: target,
    file_size: file.size,
    success: true,
  }, { message: "File uploaded successfully" });
}

/** `GET /v1/file/download?path=`: the whole file, or one range when `range` is on. */
export async function download(
  state: AioState,
  _request: Request,
  url: URL,
): Promise<Response> {
  const path = url.searchParams.get("path");
  if (path === null) {
    return validationError([{
      loc: ["query", "path"],
      msg: "Field required",
      type: "missing",
    }]);
  }
  const policy = url.searchParams.get("change_policy");
  if (policy !== null && policy !== "ignore" && policy !== "abort") {
    return validationError([{
      loc: ["query", "change_policy"],
      msg: "Input should be 'ignore' or 'abort'",
      type: "enum",
    }]);
  }
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    const missing = error instanceof Deno.errors.NotFound;
    return envelope(null, {
      success: false,
      message: missing ? `File not found: ${path}` : String(error),
      status: missing ? 404 : 400,
    });
  }
  if (!info.isFile) {
    return envelope(null, {
      success: false,
      message: `Not a file: ${path}`,
      status: 400,
    });
  }
  const size = info.size;
  let start = 0;
  let end = size - 1;
  let partial = false;
  const range = _request.headers.get("range");
  if (state.range && range) {
    const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    if (match && (match[1] || match[2])) {
      const one = byteRange(match[1]!, match[2]!, size);
      if (typeof one === "string") {
        return new Response(null, {
          status: 416,
          headers: { "content-range": `bytes */${size}` },
        });
      }
      start = one.start;
      end = one.start + one.length - 1;
      partial = true;
    }
  }
  const file = await Deno.open(path, { read: true });
  if (start > 0) await file.seek(start, Deno.SeekMode.Start);
  const length = end - start + 1;
  const stream = fileStream(file, length, 256 * 1024);
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    "content-length": String(Math.max(0, length)),
    "content-disposition": `attachment; filename="${
      encodeURIComponent(baseName(path))
    }"`,
  };
  if (partial) headers["content-range"] = `bytes ${start}-${end}/${size}`;
  return new Response(size === 0 ? null : stream, {
    status: partial ? 206 : 200,
    headers,
  });
}

/** `POST /v1/file/list`. */
export async function list(request: Request): Promise<Response> {
  const body = await readJson(request, {
    path: { kind: "string", required: true },
    recursive: { kind: "boolean", nullable: true },
    show_hidden: { kind: "boolean", nullable: true },
    file_types: { kind: "string-array", nullable: true },
    max_depth: { kind: "integer", nullable: true },
    include_size: { kind: "boolean", nullable: true },
    include_permissions: { kind: "boolean", nullable: true },
    sort_by: {
      kind: "string",
      nullable: true,
      values: ["name", "size", "modified", "type"],
    },
    sort_desc: { kind: "boolean", nullable: true },
  });
  if (body instanceof Response) return body;
  const root = body.path as string;
  if (!isAbsolutePosix(root)) {
    return fileError(
      root,
      "list",
      new Error(`Path must be absolute: ${root}`),
      "invalid_path",
    );
  }
  try {
    const info = await Deno.stat(root);
    if (!info.isDirectory) {
      throw new Deno.errors.NotADirectory(`Not a directory: ${root}`);
    }
  } catch (error) {
    return fileError(root, "list", error);
  }
  const recursive = body.recursive === true;
  const maxDepth = recursive
    ? (body.max_depth as number | null | undefined) ?? Infinity
    : 1;
  const showHidden = body.show_hidden !== false;
  const fileTypes = body.file_types as string[] | null | undefined;
  const infoOptions = {
    size: body.include_size !== false,
    permissions: body.include_permissions === true,
  };
  const files: Record<string, unknown>[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    const names: string[] = [];
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
    names.sort();
    for (const name of names) {
      if (!showHidden && name.startsWith(".")) continue;
      const path = dir === "/" ? `/${name}` : `${dir}/${name}`;
      let info: Deno.FileInfo;
      try {
        info = await Deno.lstat(path);
      } catch {
        continue;
      }
      const item = fileInfoOf(path, info, infoOptions);
      if (
        !fileTypes || info.isDirectory ||
        fileTypes.includes(item.extension as string)
      ) files.push(item);
      if (info.isDirectory && depth < maxDepth) await walk(path, depth + 1);
    }
  };
  try {
    await walk(root, 1);
  } catch (error) {
    return fileError(root, "list", error);
  }
  const sortBy = (body.sort_by as string | null | undefined) ?? "name";
  const key = (item: Record<string, unknown>): string | number =>
    sortBy === "size"
      ? (item.size as number | null) ?? 0
      : sortBy === "modified"
      ? String(item.modified_time ?? "")
      : sortBy === "type"
      ? `${item.is_directory ? 0 : 1}${item.path}`
      : item.path as string;
  files.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    const order = ka < kb ? -1 : ka > kb ? 1 : 0;
    return body.sort_desc === true ? -order : order;
  });
  const directories = files.filter((f) => f.is_directory).length;
  return envelope({
    path: root,
    files,
    total_count: files.length,
    directory_count: directories,
    file_count: files.length - directories,
  });
}

/** `POST /v1/file/read`: UTF-8 text, optionally a range of lines. */
export async function read(request: Request): Promise<Response> {
  const body = await readJson(request, {
    file: { kind: "string", required: true },
    start_line: { kind: "integer", nullable: true },
    end_line: { kind: "integer", nullable: true },
    sudo: { kind: "boolean", nullable: true },
  });
  if (body instanceof Response) return body;
  const path = body.file as string;
  if (!isAbsolutePosix(path)) {
    return fileError(
      path,
      "read",
      new Error(`Path must be absolute: ${path}`),
      "invalid_path",
    );
  }
  let content: string;
  try {
    const bytes = await Deno.readFile(path);
    content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    return fileError(path, "read", error);
  }
  const start = body.start_line as number | null | undefined;
  const end = body.end_line as number | null | undefined;
  if (typeof start === "number" || typeof end === "number") {
    const lines = content.split(/(?<=\n)/);
    content = lines.slice(start ?? 0, end ?? lines.length).join("");
  }
  return envelope({ content, file: path });
}

/** `POST /v1/file/write`: UTF-8 or base64, created with its parents. */
export async function write(request: Request): Promise<Response> {
  const body = await readJson(request, {
    file: { kind: "string", required: true },
    content: { kind: "string", required: true },
    encoding: {
      kind: "string",
      nullable: true,
      values: ["utf-8", "base64", "raw"],
    },
    append: { kind: "boolean", nullable: true },
    leading_newline: { kind: "boolean", nullable: true },
    trailing_newline: { kind: "boolean", nullable: true },
    sudo: { kind: "boolean", nullable: true },
  });
  if (body instanceof Response) return body;
  const path = body.file as string;
  if (!isAbsolutePosix(path)) {
    return fileError(
      path,
      "write",
      new Error(`Path must be absolute: ${path}`),
      "invalid_path",
    );
  }
  let bytes: Uint8Array;
  if (body.encoding === "base64") {
    try {
      const binary = atob(body.content as string);
      bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    } catch (error) {
      return fileError(path, "write", error, "decode_error");
    }
  } else {
    let text = body.content as string;
    if (body.leading_newline === true) text = `\n${text}`;
    if (body.trailing_newline === true) text = `${text}\n`;
    bytes = encoder.encode(text);
  }
  try {
    await Deno.mkdir(parentOf(path), { recursive: true });
    await Deno.writeFile(path, bytes, { append: body.append === true });
  } catch (error) {
    return fileError(path, "write", error);
  }
  return envelope({ file: path, bytes_written: bytes.length });
}
