/**
 * {@linkcode RuntimePermissionError} and the mapping of Deno's permission
 * denials to it (which permission is missing, for which path). It lives here,
 * below both `workspace/` and `runtimes/`, so that both use it.
 *
 * @module
 */

/**
 * Deno's permission flags (`NotCapable`) or the operating system (`EACCES`)
 * refused an operation. The message says which permission and which path.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { RuntimePermissionError } from "./permissions.ts";
 * const error = new RuntimePermissionError(
 *   'Cannot write "/etc/x": Deno denies write access; run with --allow-write=/etc/x',
 *   { permission: "write", path: "/etc/x", source: "deno" },
 * );
 * assert(error.permission === "write");
 * ```
 */
export class RuntimePermissionError extends Error {
  /** The error's name. */
  override readonly name = "RuntimePermissionError";
  /** The kind of access that was denied. */
  readonly permission:
    | "read"
    | "write"
    | "run"
    | "net"
    | "env"
    | "sys"
    | "unknown";
  /** The path (or command, or host) it was denied for, when known. */
  readonly path: string | undefined;
  /** Who denied it: Deno's permission flags, or the operating system. */
  readonly source: "deno" | "os";

  /**
   * Makes the error.
   *
   * @param message The message, naming the permission and the path.
   * @param options The details.
   */
  constructor(
    message: string,
    options: {
      permission: RuntimePermissionError["permission"];
      path?: string;
      source: "deno" | "os";
      cause?: unknown;
    },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.permission = options.permission;
    this.path = options.path;
    this.source = options.source;
  }
}

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
 * import { RuntimePermissionError, toPermissionError } from "./permissions.ts";
 *
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
