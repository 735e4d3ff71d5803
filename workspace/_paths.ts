/**
 * Path helpers private to `workspace/`: the real location of a path that may
 * not exist yet, and containment.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";

/** The most symlinks followed by hand before giving up (as Linux's ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * The real location of an absolute path: every existing symlink resolved
 * (dangling ones followed by hand), the missing rest appended.
 *
 * @param path An absolute, normalised path.
 * @param fenceRoot When given, a path outside it that Deno may not look at
 * (`NotCapable`) makes the answer `null` (outside) instead of an error.
 * @returns The real location, or `null` (see `fenceRoot`).
 * @throws {Deno.errors.FilesystemLoop} Symlinks make a loop.
 */
export async function realLocation(
  path: string,
  fenceRoot?: string,
): Promise<string | null> {
  const rest: string[] = [];
  let current = path;
  let hops = 0;
  for (;;) {
    try {
      const real = await Deno.realPath(current);
      return rest.length === 0 ? real : hostPath.join(real, ...rest.reverse());
    } catch (error) {
      if (
        error instanceof Deno.errors.NotCapable && fenceRoot !== undefined &&
        !isInside(current, fenceRoot)
      ) {
        return null;
      }
      if (
        !(error instanceof Deno.errors.NotFound ||
          error instanceof Deno.errors.NotADirectory)
      ) {
        throw error;
      }
    }
    // `current` is missing, or is a dangling symlink: then follow it by hand,
    // because writing through it would create its target.
    let link: string | null = null;
    try {
      if ((await Deno.lstat(current)).isSymlink) {
        link = await Deno.readLink(current);
      }
    } catch (error) {
      if (
        error instanceof Deno.errors.NotCapable && fenceRoot !== undefined &&
        !isInside(current, fenceRoot)
      ) {
        return null;
      }
      if (
        !(error instanceof Deno.errors.NotFound ||
          error instanceof Deno.errors.NotADirectory)
      ) {
        throw error;
      }
    }
    if (link !== null) {
      if (++hops > MAX_LINK_HOPS) {
        throw new Deno.errors.FilesystemLoop("Too many symbolic links");
      }
      const parent = hostPath.dirname(current);
      let realParent = parent;
      try {
        realParent = await Deno.realPath(parent);
      } catch {
        // The parent vanished meanwhile: resolve against it lexically.
      }
      current = hostPath.resolve(realParent, link);
      continue;
    }
    const parent = hostPath.dirname(current);
    if (parent === current) {
      return rest.length === 0
        ? current
        : hostPath.join(current, ...rest.reverse());
    }
    rest.push(hostPath.basename(current));
    current = parent;
  }
}

/** Whether `path` is `base` or lies under it (both absolute, normalised). */
export function isInside(path: string, base: string): boolean {
  if (path === base) return true;
  const prefix = base.endsWith(hostPath.SEPARATOR)
    ? base
    : base + hostPath.SEPARATOR;
  return path.startsWith(prefix);
}

/** `path` without trailing separators (a root such as `/` is kept). */
export function trimSeparator(path: string): string {
  let trimmed = path;
  while (
    trimmed.length > 1 && /[\\/]$/.test(trimmed) &&
    hostPath.dirname(trimmed) !== trimmed
  ) {
    trimmed = trimmed.slice(0, -1);
  }
  return trimmed;
}
