/**
 * Removing a folder that a command may have left hard to remove.
 *
 * @module
 */

/**
 * Removes a folder and everything in it, also when a command left folders
 * without read, write or search permission for their owner (they are opened
 * up first; symlinks are never followed). A missing folder is fine.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { removeTree } from "./remove_tree.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/locked/inner`, { recursive: true });
 * await Deno.chmod(`${dir}/locked`, 0o000);
 * await removeTree(dir);
 * assert((await Deno.stat(dir).catch(() => null)) === null);
 * ```
 *
 * @param path The folder.
 * @returns When it is gone.
 * @throws {Error} It cannot be removed (the message says why).
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await Deno.remove(path, { recursive: true });
    return;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    if (!(error instanceof Deno.errors.PermissionDenied)) throw error;
  }
  const openUp = async (dir: string): Promise<void> => {
    await Deno.chmod(dir, 0o700).catch(() => {});
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory && !entry.isSymlink) {
        await openUp(`${dir}/${entry.name}`);
      }
    }
  };
  await openUp(path);
  await Deno.remove(path, { recursive: true });
}
