/**
 * Event lines for a command line's `--verbose` (or `SKILLRUN_LOG=debug`):
 * one short line per event, on stderr. Events arrive redacted.
 *
 * @module
 */
import type { SkillEvent } from "./events.ts";

/**
 * One line (no newline) describing an event.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { formatEvent } from "./log.ts";
 * assertEquals(
 *   formatEvent({ type: "http_request", method: "GET", url: "http://h/x", status: 200, retries: 0, durationMs: 12.3 }),
 *   "[skillrun] http GET http://h/x -> 200 (12 ms)",
 * );
 * ```
 *
 * @param event The event.
 * @returns The line.
 */
export function formatEvent(event: SkillEvent): string {
  const ms = (value: number) => `${Math.round(value)} ms`;
  switch (event.type) {
    case "tool_call_start":
      return `[skillrun] tool ${event.tool} (${event.callId}) started`;
    case "tool_call_end":
      return `[skillrun] tool ${event.tool} (${event.callId}) ${
        event.isError ? "failed" : "done"
      } in ${ms(event.durationMs)}, ${event.bytesOut} bytes`;
    case "prepare_progress":
      return `[skillrun] prepare ${event.skillName}: ${event.stage}${
        event.detail ? ` (${event.detail})` : ""
      }`;
    case "command_output":
      return `[skillrun] ${event.stream}: ${JSON.stringify(event.text)}`;
    case "http_request":
      return `[skillrun] http ${event.method} ${event.url} -> ${
        event.status ?? "no answer"
      }${event.retries ? ` after ${event.retries} retries` : ""} (${
        ms(event.durationMs)
      })${event.error && event.status === undefined ? `: ${event.error}` : ""}`;
    case "runtime_lifecycle":
      return `[skillrun] ${event.runtime} sandbox ${
        event.sandboxId ?? ""
      } ${event.action}`.replace("  ", " ");
  }
}

/**
 * Whether the environment asks for event lines: `SKILLRUN_LOG=debug`. Never
 * prompts: without the permission to read the variable, false.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { debugLogWanted } from "./log.ts";
 * assert(typeof debugLogWanted() === "boolean");
 * ```
 *
 * @returns Whether to print events.
 */
export function debugLogWanted(): boolean {
  try {
    const state = Deno.permissions.querySync({
      name: "env",
      variable: "SKILLRUN_LOG",
    }).state;
    if (state !== "granted") return false;
    return Deno.env.get("SKILLRUN_LOG")?.toLowerCase() === "debug";
  } catch {
    return false;
  }
}
