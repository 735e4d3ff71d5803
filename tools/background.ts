/**
 * The background tools: `bash_output` reads what a background command wrote
 * since the last read, `kill_bash` stops one (with everything it started).
 * `bash` starts them with `run_in_background: true`.
 *
 * @module
 */
import { backgroundCommands } from "../runtimes/background.ts";
import type { BackgroundOutput } from "../runtimes/background.ts";
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { cutMiddle, defineTool } from "./_shared.ts";

/**
 * The runtime's background commands with the context's limit.
 *
 * @param context The shared context.
 * @returns The set.
 */
export function contextBackground(
  context: ToolContext,
): ReturnType<typeof backgroundCommands> {
  return backgroundCommands(context.runtime, {
    maxCommands: context.limits.backgroundCommands,
  });
}

/**
 * Makes the `bash_output` tool.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createBashTool } from "./bash.ts";
 * import { createBashOutputTool } from "./background.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const context = createToolContext(runtime, { background: true });
 * const started = await createBashTool(context).execute({
 *   command: "echo hi",
 *   run_in_background: true,
 * });
 * const id = /id "(bg\d+)"/.exec(started.text)![1]!;
 * await new Promise((resolve) => setTimeout(resolve, 300));
 * const read = await createBashOutputTool(context).execute({ id });
 * assert(read.text.startsWith("hi\n"), read.text);
 * ```
 *
 * @param context The shared context.
 * @returns The tool.
 */
export function createBashOutputTool(context: ToolContext): Tool {
  return defineTool(context, {
    name: "bash_output",
    description:
      'Returns what a background command (started by bash with run_in_background) wrote since the last read: stdout, then "STDERR:" and stderr, then its state (running, or its exit code). ' +
      `Output over ${context.limits.bashOutputChars} characters is cut in the middle.`,
    inputSchema: {
      type: "object",
      properties: {
        id: {
          type: "string",
          minLength: 1,
          description: "The background command's id, e.g. bg1.",
        },
      },
      required: ["id"],
      additionalProperties: false,
    },
    async run({ input }) {
      const read = await contextBackground(context).read(input.id as string);
      return {
        text: cutMiddle(outputText(read), context.limits.bashOutputChars),
        isError: false,
      };
    },
  });
}

/**
 * Makes the `kill_bash` tool.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createBashTool } from "./bash.ts";
 * import { createKillBashTool } from "./background.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const context = createToolContext(runtime, { background: true });
 * const started = await createBashTool(context).execute({
 *   command: "sleep 60",
 *   run_in_background: true,
 * });
 * const id = /id "(bg\d+)"/.exec(started.text)![1]!;
 * const killed = await createKillBashTool(context).execute({ id });
 * assert(killed.text.includes("stopped"), killed.text);
 * ```
 *
 * @param context The shared context.
 * @returns The tool.
 */
export function createKillBashTool(context: ToolContext): Tool {
  return defineTool(context, {
    name: "kill_bash",
    description:
      "Stops a background command and everything it started. Its last output stays readable with bash_output.",
    inputSchema: {
      type: "object",
      properties: {
        id: {
          type: "string",
          minLength: 1,
          description: "The background command's id, e.g. bg1.",
        },
      },
      required: ["id"],
      additionalProperties: false,
    },
    async run({ input }) {
      const id = input.id as string;
      const commands = contextBackground(context);
      const before = commands.list().find((c) => c.id === id);
      const info = await commands.kill(id);
      return {
        text: before?.running
          ? `Background command "${id}" was stopped (with everything it started)`
          : `Background command "${id}" had already ended (exit code ${info.exitCode})`,
        isError: false,
      };
    },
  });
}

function outputText(read: BackgroundOutput): string {
  let text = read.stdout;
  if (read.stderr !== "") {
    text += `${
      text === "" || text.endsWith("\n") ? "" : "\n"
    }STDERR:\n${read.stderr}`;
  }
  const state = read.running
    ? `[running; ${
      read.stdoutBytes + read.stderrBytes
    } bytes since the last read${read.truncated ? ", middle dropped" : ""}]`
    : read.error !== undefined
    ? `[failed to run: ${read.error}]`
    : read.killed
    ? "[stopped by kill_bash]"
    : read.timedOut
    ? "[stopped: timed out]"
    : `[finished; exit code ${read.exitCode}]`;
  return `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${state}`;
}
