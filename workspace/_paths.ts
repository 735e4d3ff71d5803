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
 * A `..` in a symlink's target is applied the way the kernel does, to the
 * real folder reached so far (`link/..` is the parent of where `link` points,
 * not the folder holding `link`).
 *
 * @param path An absolute path.
 * @param fenceRoot When given, a path outside it that Deno may not look at
 * (`NotCapable`) makes the answer `null` (outside) instead of an error.
 * @returns The real location, or `null` (see `fenceRoot`).
 * @throws {Deno.errors.FilesystemLoop} Symlinks make a loop.
 */
export async function realLocation(
  path: string,
  fenceRoot?: string,
): Promise<string | null> {
  return await resolveReal(path, fenceRoot, { hops: 0 });
}

/** Resolves an absolute path that may hold `.` and `..` components. */
async function resolveReal(
  path: string,
  fenceRoot: string | undefined,
  state: { hops: number },
): Promise<string | null> {
  let root = path;
  while (hostPath.dirname(root) !== root) root = hostPath.dirname(root);
  let current = root;
  let pending: string[] = [];
  for (const name of path.slice(root.length).split(/[\/]/)) {
    if (name === "" || name === ".") continue;
    if (name !== "..") {
      pending.push(name);
      continue;
    }
    // `..` applies to the real folder reached so far.
    const real = await resolvePlain(
      hostPath.join(current, ...pending),
      fenceRoot,
      state,
    );
    if (real === null) return null;
    current = hostPath.dirname(real);
    pending = [];
  }
  return await resolvePlain(
    hostPath.join(current, ...pending),
    fenceRoot,
    state,
  );
}

/** Resolves an absolute path without `..` components. */
async function resolvePlain(
  path: string,
  fenceRoot: string | undefined,
  state: { hops: number },
): Promise<string | null> {
  // Walk up to the nearest folder the kernel resolves.
  const rest: string[] = [];
  let current = path;
  let real: string;
  for (;;) {
    try {
      real = await Deno.realPath(current);
      break;
    } catch (error) {
      if (outsideAndHidden(error, current, fenceRoot)) return null;
      if (!isMissing(error)) throw error;
    }
    const parent = hostPath.dirname(current);
    if (parent === current) return path; // nothing resolves: keep it lexical
    rest.unshift(hostPath.basename(current));
    current = parent;
  }
  if (rest.length === 0) return real;
  // The first missing name may be a dangling symlink: writing through it
  // would create its target, so follow it by hand. Below a missing name,
  // nothing exists.
  const first = hostPath.join(real, rest[0]!);
  let link: string | null = null;
  try {
    if ((await Deno.lstat(first)).isSymlink) link = await Deno.readLink(first);
  } catch (error) {
    if (outsideAndHidden(error, first, fenceRoot)) return null;
    if (!isMissing(error)) throw error;
  }
  if (link === null) return hostPath.join(real, ...rest);
  if (++state.hops > MAX_LINK_HOPS) {
    throw new Deno.errors.FilesystemLoop(
      `Cannot resolve "${path}": too many levels of symbolic links`,
    );
  }
  // Keep the target's `..` for resolveReal: no lexical normalisation here.
  const target = hostPath.isAbsolute(link) ? link : `${real}/${link}`;
  return await resolveReal(
    [target, ...rest.slice(1)].join("/"),
    fenceRoot,
    state,
  );
}

function isMissing(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.NotADirectory;
}

/** Deno may not look at `path`, which lies outside the fence. */
function outsideAndHidden(
  error: unknown,
  path: string,
  fenceRoot: string | undefined,
): boolean {
  return error instanceof Deno.errors.NotCapable && fenceRoot !== undefined &&
    !isInside(path, fenceRoot);
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
