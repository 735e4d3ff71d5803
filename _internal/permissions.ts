/**
 * Turns Deno's permission denials into {@linkcode RuntimePermissionError}s that
 * say which permission is missing and for which path.
 *
 * @module
 */
import { RuntimePermissionError } from "../runtimes/errors.ts";

/** What was being done when an error happened. */
export interface PermissionContext {
  /** The operation as a verb, e.g. `read`, `write`, `list`, `run`. */
  readonly operation: string;
  /** The path (or command) it concerned, when known. */
  readonly path?: string;
}

type Permission = RuntimePermissionError["permission"];

const KINDS: readonly Permission[] = [
  "read",
  "write",
  "run",
  "net",
  "env",
  "sys",
];

// `Requires write access to "/x/y", run again with the --allow-write flag`
const NOT_CAPABLE =
  /^Requires (\w+) access(?: to "?(.*?)"?)?,? run again with the --allow-(\w+) flag/;

/**
 * Maps a permission denial to a {@linkcode RuntimePermissionError}; returns any
 * other error unchanged (so `throw toPermissionError(e, ...)` is always right).
 *
 * - `Deno.errors.NotCapable` (a permission flag refused): the message names the
 *   missing permission, the path, and the flag to add, with `source: "deno"`.
 * - `Deno.errors.PermissionDenied` (the operating system's `EACCES`/`EPERM`):
 *   the message says the system refused, with `source: "os"`.
 *
 * Needs no permission.
 *
 * @param error What was thrown.
 * @param context The operation and path, for the message.
 * @returns A `RuntimePermissionError`, or `error` itself when it is not a
 * permission denial.
 *
 * @example Mapping a Deno permission denial
 * ```ts
 * import { assert } from "@std/assert";
 * import { toPermissionError } from "./permissions.ts";
 * import { RuntimePermissionError } from "../runtimes/errors.ts";
 * const denial = new Deno.errors.NotCapable(
 *   'Requires write access to "/srv/out.txt", run again with the --allow-write flag',
 * );
 * const error = toPermissionError(denial, { operation: "write", path: "/srv/out.txt" });
 * assert(error instanceof RuntimePermissionError);
 * assert((error as RuntimePermissionError).permission === "write");
 * assert(String((error as Error).message).includes("--allow-write=/srv/out.txt"));
 * ```
 */
export function toPermissionError(
  error: unknown,
  context: PermissionContext,
): unknown {
  if (error instanceof RuntimePermissionError) return error;
  if (error instanceof Deno.errors.NotCapable) {
    const match = NOT_CAPABLE.exec(error.message);
    const kind = toKind(match?.[3] ?? match?.[1]) ??
      inferPermission(context.operation);
    const target = match?.[2] || context.path;
    const shown = context.path ?? target;
    const flagValue = target ? `=${target}` : "";
    const parent = kind === "read" || kind === "write" ? " (or a parent)" : "";
    const flag = kind === "unknown"
      ? "the missing --allow flag"
      : `--allow-${kind}${flagValue}${parent}`;
    const what = kind === "unknown" ? "access" : `${kind} access`;
    const subject = shown === undefined ? "" : ` "${shown}"`;
    return new RuntimePermissionError(
      `Cannot ${context.operation}${subject}: Deno denies ${what}${
        target && target !== shown ? ` to "${target}"` : ""
      }; run with ${flag}`,
      {
        permission: kind,
        ...(target === undefined ? {} : { path: target }),
        source: "deno",
        cause: error,
      },
    );
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    const kind = inferPermission(context.operation);
    const subject = context.path === undefined ? "" : ` "${context.path}"`;
    return new RuntimePermissionError(
      `Cannot ${context.operation}${subject}: the operating system denies ${
        kind === "unknown" ? "" : `${kind} `
      }access (permission denied); check the owner and mode of the file and its folders`,
      {
        permission: kind,
        ...(context.path === undefined ? {} : { path: context.path }),
        source: "os",
        cause: error,
      },
    );
  }
  return error;
}

function toKind(name: string | undefined): Permission | undefined {
  return KINDS.find((kind) => kind === name);
}

function inferPermission(operation: string): Permission {
  const verb = operation.toLowerCase();
  if (
    /writ|creat|remov|delet|renam|mkdir|copy|download|upload|edit/.test(verb)
  ) {
    return "write";
  }
  if (/read|list|stat|open|resolv|walk/.test(verb)) return "read";
  if (/run|exec|spawn|kill/.test(verb)) return "run";
  return "unknown";
}
