/**
 * execd's `/directories` routes in the OpenSandbox test server
 * (`opensandbox.ts`): list (to a depth), make and remove, on the host's real
 * paths.
 *
 * @module
 */
import { errorText, isObject } from "./_common.ts";
import {
  execdError,
  fileError,
  goJsonType,
  invalidBody,
  isNotFound,
  json,
  parseBody,
} from "./_opensandbox_answers.ts";
import type { OpenSandboxState } from "./_opensandbox_state.ts";
import { hostPath } from "../../_internal/std.ts";

/** `GET /directories/list?path=&depth=`. */
export async function listDirectory(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const raw = url.searchParams.get("path") ?? "";
  if (raw === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let depth = 1;
  const rawDepth = url.searchParams.get("depth") ?? "";
  if (rawDepth !== "") {
    if (!/^[+-]?\d+$/.test(rawDepth) || Number(rawDepth) < 0) {
      return invalidBody(`invalid query parameter 'depth': ${rawDepth}`);
    }
    depth = Number(rawDepth);
  }
  let root: string;
  try {
    root = state.absolute(raw);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      // The real message names an empty path here (two spaces).
      `error converting path  to absolute. ${errorText(error)}`,
    );
  }
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(root);
  } catch (error) {
    return fileError(error, "lstat", root);
  }
  if (info.isSymlink) {
    return invalidBody(
      `path is a symbolic link, refusing to traverse: ${root}`,
    );
  }
  if (!info.isDirectory) return invalidBody(`path is not a directory: ${root}`);
  const entries: Record<string, unknown>[] = [];
  const walk = async (directory: string, level: number): Promise<void> => {
    const names: string[] = [];
    for await (const entry of Deno.readDir(directory)) names.push(entry.name);
    names.sort();
    for (const name of names) {
      const child = hostPath.join(directory, name);
      const childInfo = await Deno.lstat(child);
      entries.push(state.fileInfo(child, childInfo));
      if (childInfo.isDirectory && level + 1 < depth) {
        await walk(child, level + 1);
      }
    }
  };
  if (depth > 0) {
    try {
      await walk(root, 0);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error listing directory ${root}. ${errorText(error)}`,
      );
    }
  }
  return json(200, entries);
}

/** `POST /directories`: makes folders (with parents) and sets their permissions. */
export async function makeDirs(
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
    try {
      const absolute = state.absolute(path);
      try {
        await Deno.mkdir(absolute, { recursive: true, mode: 0o777 });
      } catch (error) {
        // Go's MkdirAll over a file: `mkdir <p>: not a directory`.
        const existing = await Deno.stat(absolute).catch(() => null);
        return fileError(
          existing !== null && !existing.isDirectory
            ? new Deno.errors.NotADirectory(absolute)
            : error,
          "mkdir",
          absolute,
        );
      }
      await state.chmodFile(absolute, isObject(permission) ? permission : {});
    } catch (error) {
      return fileError(error);
    }
  }
  return new Response(null, { status: 200 });
}

/** `DELETE /directories?path=`: removes folders recursively; a missing one is fine. */
export async function removeDirs(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  for (const path of url.searchParams.getAll("path")) {
    let absolute: string;
    try {
      absolute = state.absolute(path);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error resolving directory ${path}. ${errorText(error)}`,
      );
    }
    try {
      await Deno.remove(absolute, { recursive: true });
    } catch (error) {
      if (isNotFound(error)) continue;
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error removing directory ${path}. ${errorText(error)}`,
      );
    }
  }
  return new Response(null, { status: 200 });
}
