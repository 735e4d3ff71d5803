/**
 * The rules of a conversation workspace's location: the conversation id, the
 * conversations root, and the workspace path they make.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { trimSeparator } from "./_paths.ts";

const CONVERSATION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Checks a conversation id: 1 to 128 characters of ASCII letters, digits, `.`,
 * `_` and `-`, starting with a letter or a digit (so never `.` or `..`).
 *
 * Needs no permission.
 *
 * @param id The conversation id.
 * @returns The id, unchanged.
 * @throws {TypeError} The id is not a string or breaks the rule; the message
 * quotes the id and says why.
 *
 * @example Valid and invalid ids
 * ```ts
 * import { assert } from "@std/assert";
 * import { validateConversationId } from "@skillrun/skillrun/runtime";
 * assert(validateConversationId("thread.2026-07") === "thread.2026-07");
 * let refused = false;
 * try { validateConversationId("../etc"); } catch (e) { refused = e instanceof TypeError; }
 * assert(refused);
 * ```
 */
export function validateConversationId(id: string): string {
  if (typeof id !== "string") {
    throw new TypeError(
      `Cannot use conversation id ${String(id)}: it must be a string`,
    );
  }
  if (id.length === 0) {
    throw new TypeError(`Cannot use conversation id "": it is empty`);
  }
  if (id.length > 128) {
    throw new TypeError(
      `Cannot use conversation id "${
        id.slice(0, 32)
      }...": it has ${id.length} characters, more than 128`,
    );
  }
  if (!CONVERSATION_ID.test(id)) {
    const reason = /^[._-]/.test(id)
      ? "it must start with an ASCII letter or digit"
      : "only ASCII letters, digits, '.', '_' and '-' are allowed";
    throw new TypeError(
      `Cannot use conversation id ${JSON.stringify(id)}: ${reason}`,
    );
  }
  return id;
}

/**
 * Checks a conversations root: an absolute path that is not the file system's
 * root. Returns it normalised (no `.`/`..` segments, no repeated or trailing
 * separators). The folder need not exist yet.
 *
 * Needs no permission.
 *
 * @param root The folder that holds one workspace per conversation.
 * @returns The normalised root.
 * @throws {TypeError} The root is empty, relative, or the file system's root
 * (also after normalisation, e.g. `/srv/..`).
 *
 * @example Normalising a root
 * ```ts
 * import { assert } from "@std/assert";
 * import { validateConversationsRoot } from "./conversation.ts";
 * if (Deno.build.os !== "windows") {
 *   assert(validateConversationsRoot("/srv//conv/./x/../") === "/srv/conv");
 * }
 * ```
 */
export function validateConversationsRoot(root: string): string {
  if (typeof root !== "string" || root.trim() === "") {
    throw new TypeError(
      `Cannot use conversations root ${
        JSON.stringify(root)
      }: it must be a non-empty path`,
    );
  }
  if (!hostPath.isAbsolute(root)) {
    throw new TypeError(
      `Cannot use conversations root "${root}": it must be an absolute path`,
    );
  }
  const normalised = trimSeparator(hostPath.normalize(root));
  if (hostPath.dirname(normalised) === normalised) {
    throw new TypeError(
      `Cannot use conversations root "${root}": it is the file system's root`,
    );
  }
  return normalised;
}

/**
 * The workspace folder of a conversation: `<root>/<id>`, both validated.
 *
 * Needs no permission (it touches no file).
 *
 * @param root The conversations root (absolute, not `/`).
 * @param id The conversation id.
 * @returns The absolute, normalised workspace path.
 * @throws {TypeError} The root or the id is invalid.
 *
 * @example The workspace of a conversation
 * ```ts
 * import { assert } from "@std/assert";
 * import { workspacePath } from "@skillrun/skillrun/runtime";
 * if (Deno.build.os !== "windows") {
 *   assert(workspacePath("/srv/conv/", "abc") === "/srv/conv/abc");
 * }
 * ```
 */
export function workspacePath(root: string, id: string): string {
  return hostPath.join(
    validateConversationsRoot(root),
    validateConversationId(id),
  );
}

/**
 * Makes sure a conversation's workspace is a real folder inside the real
 * conversations root, creating the root, the workspace and its `skills/`
 * folder when missing. A workspace planted beforehand as a symlink (to a
 * folder anywhere) is refused, never followed: the workspace must be the
 * folder `<real root>/<id>` itself. The root may be reached through symlinks
 * (the application chose it); its real path is used.
 *
 * Needs `--allow-read` and `--allow-write` for the conversations root.
 *
 * @param root The conversations root (absolute, not `/`).
 * @param id The conversation id.
 * @returns The workspace's real path.
 * @throws {TypeError} The root or the id is invalid, or the workspace is a
 * symlink.
 * @throws {Deno.errors.NotADirectory} The workspace (or its `skills`) is a file.
 * @throws {Deno.errors.PermissionDenied} The system refused (or
 * `Deno.errors.NotCapable` when Deno's flags did).
 *
 * @example A workspace planted as a symlink is refused
 * ```ts
 * import { assert } from "@std/assert";
 * import { ensureWorkspace } from "@skillrun/skillrun/runtime";
 * const root = await Deno.realPath(await Deno.makeTempDir());
 * try {
 *   assert(await ensureWorkspace(root, "t1") === `${root}/t1`);
 *   await Deno.symlink(Deno.cwd(), `${root}/t2`);
 *   let refused = false;
 *   try { await ensureWorkspace(root, "t2"); } catch (e) { refused = e instanceof TypeError; }
 *   assert(refused);
 * } finally {
 *   await Deno.remove(root, { recursive: true });
 * }
 * ```
 */
export async function ensureWorkspace(
  root: string,
  id: string,
): Promise<string> {
  const normalised = validateConversationsRoot(root);
  validateConversationId(id);
  await Deno.mkdir(normalised, { recursive: true });
  const realRoot = await Deno.realPath(normalised);
  const workspace = hostPath.join(realRoot, id);
  await ensureRealFolder(workspace, `workspace of conversation "${id}"`);
  await ensureRealFolder(
    hostPath.join(workspace, "skills"),
    `skills folder of conversation "${id}"`,
    // A symlink there is left to the fence: copies go through it.
    true,
  );
  return workspace;
}

/** Creates `path` as a folder, or checks that it is one (not a symlink). */
async function ensureRealFolder(
  path: string,
  what: string,
  allowSymlink = false,
): Promise<void> {
  for (let attempt = 0;; attempt++) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      try {
        await Deno.mkdir(path);
      } catch (made) {
        // Made meanwhile by someone else: look again.
        if (made instanceof Deno.errors.AlreadyExists && attempt < 3) continue;
        throw made;
      }
      continue;
    }
    if (info.isSymlink) {
      if (allowSymlink) return;
      throw new TypeError(
        `Cannot use the ${what} "${path}": it is a symbolic link, not a folder (a workspace must be a real folder inside the conversations root)`,
      );
    }
    if (!info.isDirectory) {
      throw new Deno.errors.NotADirectory(
        `Cannot use the ${what} "${path}": it is not a folder`,
      );
    }
    return;
  }
}
