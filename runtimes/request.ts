/**
 * The checks of a request that every runtime shares, so that the same bad
 * input gets the same error on the local machine and in any sandbox: a blank
 * command or one holding NUL, a bad timeout (clamped by the command core's
 * rule), a bad output cap, a bad variable, an empty working directory or one
 * holding NUL. They run before anything is started or sent.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import { checkEnv } from "./config.ts";
import { checkPathText as checkPath } from "../_internal/path_text.ts";
import { type CheckedTimeoutMs, checkTimeoutMs } from "./command_core.ts";
import {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecuteRequest,
} from "./types.ts";

/** An {@linkcode ExecuteRequest}'s bounds and variables, checked. */
export interface CheckedExecuteRequest {
  /** The command (not blank, no NUL). */
  readonly command: string;
  /**
   * The timeout, defaulted, checked and clamped: launchers and
   * `CommandRun.checked` take it as it is.
   */
  readonly timeoutMs: CheckedTimeoutMs;
  /** The output cap, defaulted and checked. */
  readonly maxOutputBytes: number;
  /** The request's own variables, checked (empty when none). */
  readonly env: Readonly<Record<string, string>>;
}

/** Options of {@linkcode checkExecuteRequest}. */
export interface CheckExecuteRequestOptions {
  /** The runtime's output cap when the request names none. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /**
   * Whether the runtime can pipe standard input; when not, a request with
   * `stdin` is refused. Default `true`.
   */
  readonly stdin?: boolean;
  /** The runtime's name, for the messages. Default `this`. */
  readonly runtimeName?: string;
}

/**
 * Checks an {@linkcode ExecuteRequest} the way every runtime does, before
 * anything runs; the working directory (when given) must be a non-empty path
 * without NUL ({@linkcode checkPathText}); resolving it is the runtime's.
 *
 * Needs no permission.
 *
 * @example The same errors on every runtime
 * ```ts
 * import { assertEquals, assertThrows } from "@std/assert";
 * import {
 *   checkExecuteRequest,
 *   MAX_EXECUTE_TIMEOUT_MS,
 * } from "@skillrun/skillrun/runtime";
 * const checked = checkExecuteRequest({ command: "true", timeoutMs: 1e12 });
 * assertEquals(checked.timeoutMs, MAX_EXECUTE_TIMEOUT_MS);
 * assertThrows(() => checkExecuteRequest({ command: " " }), TypeError, "blank");
 * assertThrows(
 *   () => checkExecuteRequest({ command: "pwd", cwd: "" }),
 *   TypeError,
 *   "the path is empty",
 * );
 * ```
 *
 * @param request The request.
 * @param options The runtime's cap and whether it takes standard input.
 * @returns The request's command, timeout, cap and variables, checked.
 * @throws {TypeError} A blank command or one holding NUL, a bad variable, an
 * empty working directory or one holding NUL, or `stdin` on a runtime that
 * cannot pipe it.
 * @throws {RangeError} A bad timeout or output cap.
 */
export function checkExecuteRequest(
  request: ExecuteRequest,
  options: CheckExecuteRequestOptions = {},
): CheckedExecuteRequest {
  const command: unknown = request.command;
  if (typeof command !== "string" || !command.trim()) {
    throw new TypeError("Cannot run a command: the command is blank");
  }
  if (command.includes("\0")) {
    throw new TypeError(
      "Cannot run a command: the command holds a NUL character",
    );
  }
  if (request.stdin !== undefined && options.stdin === false) {
    throw new TypeError(
      `Cannot run a command with stdin: the ${
        options.runtimeName ?? "this"
      } runtime cannot pipe standard input`,
    );
  }
  const timeoutMs = checkTimeoutMs(
    request.timeoutMs ?? DEFAULT_EXECUTE_TIMEOUT_MS,
  );
  const maxOutputBytes = checkMaxOutputBytes(
    request.maxOutputBytes ?? options.maxOutputBytes ??
      DEFAULT_MAX_OUTPUT_BYTES,
  );
  if (request.cwd !== undefined) {
    checkPathText(request.cwd);
  }
  const env = request.env ? checkEnv(request.env, "request env") : {};
  return { command, timeoutMs, maxOutputBytes, env };
}

/**
 * Checks that a path given to a runtime is a non-empty string without NUL
 * (before any normalisation: `a\0/..` must not become a harmless path). The
 * same check, with the same messages, on every runtime's file calls and
 * working directories.
 *
 * Needs no permission.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkPathText } from "./request.ts";
 * checkPathText("notes/a.txt");
 * assertThrows(() => checkPathText("a\0b"), TypeError, "NUL");
 * ```
 *
 * @param path The path.
 * @throws {TypeError} It is not a string, is empty, or holds NUL.
 */
export function checkPathText(path: string): void {
  checkPath(path);
}

/**
 * Checks an output cap: a non-negative integer of bytes.
 *
 * Needs no permission.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkMaxOutputBytes } from "./request.ts";
 * checkMaxOutputBytes(0);
 * assertThrows(() => checkMaxOutputBytes(-1), RangeError, '"-1"');
 * ```
 *
 * @param value The cap.
 * @returns The same cap.
 * @throws {RangeError} It is not a non-negative integer.
 */
export function checkMaxOutputBytes(value: number): number {
  return checkNumber(value, "maxOutputBytes", "non-negative integer");
}
