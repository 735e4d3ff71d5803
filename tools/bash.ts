/**
 * The `bash` tool: runs a shell command in the runtime.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { redactSecrets } from "../_internal/redact.ts";
import { cutMiddle, defineTool, pathError } from "./_shared.ts";
import { outputEmitter } from "../observe/events.ts";
import { inSpan, tracingActive } from "../observe/otel.ts";
import type { Span } from "@opentelemetry/api";
import type { ExecuteResult } from "../runtimes/types.ts";
import { contextBackground } from "./background.ts";

/** The most bytes of each stream the runtime keeps in memory for `bash`. */
const MAX_OUTPUT_BYTES = 512 * 1024;

/**
 * Makes the `bash` tool. Its result is stdout; then `STDERR:` and stderr when
 * not empty; then `Exit code: N` when not 0, or a timed-out notice. Output
 * over the limit (30 000 characters by default) keeps its start and its end
 * around a notice. A non-zero exit, a timeout or a cancellation is an error
 * result.
 *
 * @example Running a command on the local runtime
 * ```ts
 * import { assert } from "@std/assert";
 * import { createBashTool } from "./bash.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const bash = createBashTool(createToolContext(runtime));
 * const result = await bash.execute({ command: "echo hi; echo oops >&2; exit 2" });
 * assert(result.text === "hi\nSTDERR:\noops\nExit code: 2" && result.isError);
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createBashTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  const executeAttributes = Object.freeze({ "skillrun.runtime": runtime.name });
  return defineTool(context, {
    name: "bash",
    description:
      `Runs a bash command in the "${runtime.name}" runtime and returns its output: stdout, then "STDERR:" and stderr when not empty, then the exit code when it is not 0. ` +
      `Commands run in ${
        JSON.stringify(runtime.cwd)
      } unless working_directory says otherwise; use a skill's base directory to run its scripts. ` +
      `The environment configured for the skills is set for every command (do not print it). ` +
      `Default timeout ${limits.bashDefaultTimeoutMs} ms, at most ${limits.bashMaxTimeoutMs} ms. ` +
      `Output over ${limits.bashOutputChars} characters is cut in the middle. Each call is a new shell: cd and export do not carry over.` +
      (context.background
        ? ` For a server or a watcher, set run_in_background: the id comes back at once; read the output with bash_output and stop it with kill_bash.`
        : ""),
    inputSchema: {
      type: "object",
      properties: {
        command: {
          type: "string",
          minLength: 1,
          description: "The command to run with bash -c.",
        },
        timeout: {
          type: "integer",
          minimum: 1,
          maximum: limits.bashMaxTimeoutMs,
          description:
            `Timeout in milliseconds (default ${limits.bashDefaultTimeoutMs}, at most ${limits.bashMaxTimeoutMs}).`,
        },
        working_directory: {
          type: "string",
          minLength: 1,
          description:
            "Folder to run in (absolute, or relative to the default working directory).",
        },
        ...(context.background
          ? {
            run_in_background: {
              type: "boolean",
              description:
                `Start the command and return its id at once (for servers and watchers); read what it wrote since the last read with bash_output, stop it and everything it started with kill_bash. At most ${limits.backgroundCommands} at once; the timeout applies only when given; every one ends when the session ends.`,
            },
          }
          : {}),
      },
      required: ["command"],
      additionalProperties: false,
    },
    async run({ input, signal, callId, events }) {
      const command = input.command as string;
      if (command.trim() === "") {
        return {
          text: 'Invalid input: Parameter "command" must not be blank',
          isError: true,
        };
      }
      const timeoutMs = (input.timeout as number | undefined) ??
        limits.bashDefaultTimeoutMs;
      let cwd: string | undefined;
      if (input.working_directory !== undefined) {
        const given = input.working_directory as string;
        cwd = await runtime.fs.resolve(given);
        const info = await runtime.fs.stat(
          cwd,
          signal ? { signal } : {},
        );
        if (!info) return pathError("run in", given, "no such folder");
        if (info.type !== "directory") {
          return pathError("run in", given, "it is not a folder");
        }
      }
      if (input.run_in_background === true) {
        const info = await contextBackground(context).start({
          command,
          ...(input.timeout !== undefined ? { timeoutMs } : {}),
          ...(cwd !== undefined ? { cwd: cwd } : {}),
        });
        return {
          text:
            `Started background command with id "${info.id}". Read its output with bash_output {"id": "${info.id}"}; stop it with kill_bash {"id": "${info.id}"}.`,
          isError: false,
        };
      }
      const stdout = events && outputEmitter(events, "stdout", callId);
      const stderr = events && outputEmitter(events, "stderr", callId);
      let result;
      try {
        const run = async (span?: Span): Promise<ExecuteResult> => {
          const result = await runtime.execute({
            command,
            timeoutMs,
            maxOutputBytes: MAX_OUTPUT_BYTES,
            ...(cwd !== undefined ? { cwd } : {}),
            ...(signal ? { signal } : {}),
            ...(stdout && stderr
              ? { onStdout: stdout.write, onStderr: stderr.write }
              : {}),
          });
          span?.setAttribute("process.exit.code", result.exitCode);
          return result;
        };
        // Nothing listening: no span, not even its attributes.
        result = tracingActive()
          ? await inSpan("runtime.execute", executeAttributes, run)
          : await run();
      } finally {
        stdout?.flush();
        stderr?.flush();
      }
      let text = result.stdout;
      if (result.stdoutTruncated) {
        text = noteCut(text, "stdout", result.stdoutBytes);
      }
      if (result.stderr !== "") {
        const stderr = result.stderrTruncated
          ? noteCut(result.stderr, "stderr", result.stderrBytes)
          : result.stderr;
        text += `${
          text === "" || text.endsWith("\n") ? "" : "\n"
        }STDERR:\n${stderr}`;
      }
      const trailer: string[] = [];
      if (result.timedOut) {
        trailer.push(
          `Command timed out after ${timeoutMs} ms and was stopped (with everything it started)`,
        );
      } else if (result.aborted) {
        trailer.push("Cancelled: the command was stopped");
      } else if (result.exitCode !== 0) {
        trailer.push(`Exit code: ${result.exitCode}`);
      }
      if (trailer.length) {
        text += `${text === "" || text.endsWith("\n") ? "" : "\n"}${
          trailer.join("\n")
        }`;
      }
      if (text === "") text = "(no output)";
      // Redact before cutting, so a cut never leaves part of a secret behind.
      text = redactSecrets(text, context.secrets());
      return {
        text: cutMiddle(text, limits.bashOutputChars),
        isError: result.timedOut || result.aborted || result.exitCode !== 0,
      };
    },
  });
}

function noteCut(text: string, stream: string, bytes: number): string {
  return `${text}${
    text.endsWith("\n") ? "" : "\n"
  }[${stream} was ${bytes} bytes; its middle was dropped]\n`;
}
