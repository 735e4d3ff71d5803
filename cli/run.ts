/**
 * `skillrun run`: prepares one skill with the local runtime and runs a command
 * in its folder, passing its output and exit code through.
 *
 * @module
 */
import type { SkillEvent, SkillEventListener } from "../observe/events.ts";
import { debugLogWanted, formatEvent } from "../observe/log.ts";
import { hostPath } from "../_internal/std.ts";
import { escapeControl } from "../_internal/escape_text.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { checkRuntimeFlag, remoteRuntime, RUNTIME_HELP } from "./_remote.ts";
import type { SkillRuntimeConfig } from "../runtimes/config.ts";
import type {
  PreparedSkill,
  PrepareProgress,
  SkillRuntime,
  SkillToPrepare,
} from "../runtimes/types.ts";
import { DEFAULT_EXECUTE_TIMEOUT_MS } from "../runtimes/types.ts";
import { loadSkills, selectSkills } from "../skill/mod.ts";
import type { Skill } from "../skill/types.ts";
import {
  commandLine,
  parseArgs,
  SKILLS_OPTION_HELP,
  splitList,
  UsageError,
} from "./_args.ts";
import { readConfigFile } from "./_config.ts";
import { EGRESS_FLAGS, EGRESS_HELP, egressOptions } from "./_egress.ts";
import type { EgressOptions } from "../network/sandbox.ts";

/** The exit code of a command stopped by `--timeout` (as `timeout(1)`). */
export const TIMEOUT_EXIT_CODE = 124;

/** The exit code of a command stopped by Ctrl-C. */
export const INTERRUPTED_EXIT_CODE = 130;

/** Where conversation workspaces go without `--root`, below the current folder. */
export const DEFAULT_CONVERSATIONS_ROOT = ".skillrun/conversations";

/** The exit code of a command-line mistake. */
export const USAGE_EXIT_CODE = 2;

/** The most bytes of each stream the CLI keeps from a command: 64 MiB. */
/** Output kept in the result; what the user sees is streamed live. */
const CLI_KEPT_OUTPUT_BYTES = 64 * 1024;

/** The help lines of `--isolate` and `--allow-net`, shared by `run`, `mcp` and `doctor`. */
export const ISOLATE_HELP: string =
  `  --isolate            Run every command in a bubblewrap sandbox (Linux): the
                       system read-only, only the skill's folder (or the
                       workspace) writable, a private /tmp, no network, no
                       host processes or environment; fails if bwrap is
                       missing or user namespaces are off (never falls back)
  --allow-net          With --isolate: let commands use the network
${EGRESS_HELP}`;

/** The help of `skillrun run`. */
export const RUN_HELP: string =
  `Usage: skillrun run <skills-dir> <skill> [options] -- <command>
       skillrun run --skills <dir>... <skill> [options] -- <command>

Prepares <skill> (found under <skills-dir>, or the --skills folders; both by
the same rule) with the local runtime, then runs
<command> with bash in the skill's folder. Its stdout and stderr go to this
program's stdout and stderr as it writes them, this program's stdin goes to it,
and its exit code becomes this program's.

One word after "--" is a shell line as it is ('ls | wc -l'); several words are
quoted one by one (python3 x.py "a b" passes "a b" as one argument).

Options:
${SKILLS_OPTION_HELP}
  --conversation <id>  Work in the conversation workspace <root>/<id>: the skill
                       is copied into it and the command runs in the copy
  --root <dir>         The conversations root (default: .skillrun/conversations)
  --config <file>      A JSON file with each skill's environment and bootstrap
                       commands: {"<skill>": {"env": {"NAME": "value"},
                       "bootstrap": ["command", ...]}}; the skill's entry is
                       used (bootstrap runs once, before the command); an
                       entry for a skill not under <skills-dir> is an error
  --timeout <ms>       Stop the command (and all it started) after <ms>;
                       exit code ${TIMEOUT_EXIT_CODE} (default: ${DEFAULT_EXECUTE_TIMEOUT_MS})
${ISOLATE_HELP}${RUNTIME_HELP}  --verbose            Print the runtime's events on stderr (preparation steps,
                       configured values removed); also SKILLRUN_LOG=debug
  -h, --help           Show this help

Exit codes: the command's own; ${TIMEOUT_EXIT_CODE} on timeout; ${INTERRUPTED_EXIT_CODE} on Ctrl-C;
1 when the skill cannot be found or prepared; ${USAGE_EXIT_CODE} on a command-line mistake
or an unusable --config file. A preparation that takes more than a second
shows its progress on stderr.

Examples:
  skillrun run examples/skills csv-report -- ls -la
  skillrun run --isolate examples/skills csv-report -- bash scripts/report.sh
`;

/** A stream the CLI writes to (`Deno.stdout` and `Deno.stderr` are ones). */
export interface CliWriter {
  /** Writes some of the bytes; returns how many. */
  write(bytes: Uint8Array): Promise<number>;
  /**
   * Whether it is a terminal: a long preparation then shows one progress
   * line, rewritten in place, rather than a line per step.
   */
  isTerminal?(): boolean;
}

/** Where the CLI writes; the process's own streams by default. */
export interface CliStreams {
  /** Standard output. */
  readonly stdout: CliWriter;
  /** Standard error. */
  readonly stderr: CliWriter;
}

/** Options of {@linkcode runCommand}. */
export interface RunCommandOptions {
  /** Stops the preparation or the command (exit code 130). */
  readonly signal?: AbortSignal;
  /** Where output goes; default the process's stdout and stderr. */
  readonly streams?: CliStreams;
  /**
   * The command's standard input; default this process's (`Deno.stdin`),
   * `null` for none.
   */
  readonly stdin?: ReadableStream<Uint8Array> | null;
}

/**
 * Runs `skillrun run` with its arguments (those after `run`).
 *
 * Permissions: `--allow-read` of the skills (and the workspace),
 * `--allow-write` of the workspace in conversation mode, `--allow-run=bash`
 * (with `--isolate`: `--allow-run=bwrap,bash`).
 *
 * @param args The arguments after `run`.
 * @param options A signal and the output streams.
 * @returns The exit code for the process.
 * @throws Never for a failing command or bad input: those become exit codes and
 * messages on stderr.
 *
 * @example Showing the help
 * ```ts
 * import { runCommand } from "./run.ts";
 * import { assert } from "@std/assert";
 * const chunks: Uint8Array[] = [];
 * const sink = { write: (b: Uint8Array) => (chunks.push(b), Promise.resolve(b.length)) };
 * const code = await runCommand(["--help"], { streams: { stdout: sink, stderr: sink } });
 * assert(code === 0 && new TextDecoder().decode(chunks[0]).startsWith("Usage:"));
 * ```
 */
export async function runCommand(
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<number> {
  const streams = options.streams ??
    { stdout: Deno.stdout, stderr: Deno.stderr };
  const out = (text: string) => writeAll(streams.stdout, text);
  const err = (text: string) => writeAll(streams.stderr, escapeControl(text));

  let parsed;
  let command: string;
  let timeoutMs: number;
  let egress: EgressOptions;
  try {
    parsed = parseArgs(args, {
      skills: "list",
      conversation: "string",
      root: "string",
      timeout: "string",
      config: "string",
      isolate: "boolean",
      "allow-net": "boolean",
      ...EGRESS_FLAGS,
      runtime: "string",
      sandbox: "string",
      verbose: "boolean",
    });
    if (parsed.flags.help === true) {
      await out(RUN_HELP);
      return 0;
    }
    const expected = parsed.lists.skills === undefined ? 2 : 1;
    if (parsed.positionals.length !== expected) {
      throw new UsageError(
        `Expected ${
          expected === 2 ? "<skills-dir> and <skill>" : "<skill> after --skills"
        }, got ${parsed.positionals.length} argument${
          parsed.positionals.length === 1 ? "" : "s"
        }`,
      );
    }
    if (parsed.rest === undefined) {
      throw new UsageError('No command given: put it after "--"');
    }
    if (
      typeof parsed.flags.root === "string" &&
      typeof parsed.flags.conversation !== "string"
    ) {
      throw new UsageError('Option "--root" needs "--conversation"');
    }
    checkIsolateFlags(parsed.flags);
    checkRuntimeFlag(parsed.flags);
    egress = egressOptions(parsed.lists, parsed.flags);
    command = commandLine(parsed.rest);
    timeoutMs = parseTimeout(parsed.flags.timeout);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await err(`skillrun run: ${error.message}\n\n${RUN_HELP}`);
    return USAGE_EXIT_CODE;
  }

  const skillsDirs = [
    ...(parsed.lists.skills ?? []),
    ...parsed.positionals.slice(0, -1).flatMap(splitList),
  ];
  const skillName = parsed.positionals.at(-1)!;
  const { signal, stopListening } = interruptSignal(options.signal);
  let runtime: SkillRuntime | undefined;
  try {
    const configs = typeof parsed.flags.config === "string"
      ? await readConfigFile(parsed.flags.config)
      : new Map<string, SkillRuntimeConfig>();
    // The command's own output is already streamed as it comes.
    const verbose = eventPrinter(
      parsed.flags,
      err,
      (event) => event.type !== "command_output",
    );
    const remote = remoteRuntime(parsed.flags, undefined, verbose);
    runtime = remote ?? await createRuntime(
      parsed.flags,
      undefined,
      verbose,
      egress,
    );
    const skill = await findSkill(
      skillsDirs,
      skillName,
      [...configs.keys()],
      err,
    );
    if (skill === undefined) return 1;
    const config = configs.get(skill.name);
    const [prepared] = await prepareWithProgress(
      runtime,
      { skill, ...(config ? { config } : {}) },
      (text) => writeAll(streams.stderr, text),
      signal,
      isTerminal(streams.stderr),
    );
    // The output goes out live, in the order it comes (one queue for both
    // streams keeps their interleaving); the result keeps only a little.
    let written = Promise.resolve();
    const live = (stream: CliWriter) => (chunk: Uint8Array) => {
      const copy = chunk.slice();
      written = written.then(() => writeBytes(stream, copy));
    };
    // A remote sandbox takes no standard input.
    const stdin = remote
      ? null
      : options.stdin === undefined
      ? Deno.stdin.readable
      : options.stdin;
    const result = await runtime.execute({
      command,
      cwd: prepared!.basePath,
      timeoutMs,
      maxOutputBytes: CLI_KEPT_OUTPUT_BYTES,
      signal,
      onStdout: live(streams.stdout),
      onStderr: live(streams.stderr),
      ...(stdin ? { stdin } : {}),
    });
    await written;
    if (result.timedOut) {
      await err(`skillrun run: command timed out after ${timeoutMs} ms\n`);
      return TIMEOUT_EXIT_CODE;
    }
    if (result.aborted) {
      await err("skillrun run: command interrupted\n");
      return INTERRUPTED_EXIT_CODE;
    }
    return result.exitCode < 0 ? 1 : result.exitCode;
  } catch (error) {
    if (signal.aborted) {
      await err("skillrun run: interrupted\n");
      return INTERRUPTED_EXIT_CODE;
    }
    if (error instanceof UsageError) {
      await err(`skillrun run: ${error.message}\n`);
      return USAGE_EXIT_CODE;
    }
    await err(
      `skillrun run: ${
        error instanceof Error ? error.message : String(error)
      }\n`,
    );
    return 1;
  } finally {
    stopListening();
    await runtime?.close();
  }
}

/**
 * Refuses `--allow-net` without `--isolate` (the plain shell's network is
 * never restricted, so the flag would say something false).
 *
 * @param flags The parsed flags.
 * @throws {UsageError} `--allow-net` without `--isolate`.
 */
export function checkIsolateFlags(
  flags: Readonly<Record<string, string | boolean>>,
): void {
  if (flags["allow-net"] === true && flags.isolate !== true) {
    throw new UsageError(
      'Option "--allow-net" needs "--isolate" (without it commands are not fenced at all)',
    );
  }
}

/**
 * The listener of `--verbose` (or `SKILLRUN_LOG=debug`): each event as one
 * line on stderr (events come with configured values already removed), or
 * `undefined` when neither asks for it.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { eventPrinter } from "./run.ts";
 * const lines: string[] = [];
 * const print = eventPrinter({ verbose: true }, (line) => lines.push(line))!;
 * print({ type: "runtime_lifecycle", runtime: "local", action: "created" });
 * assert(lines[0]!.startsWith("[skillrun] local"));
 * ```
 *
 * @param flags The parsed flags (`verbose`).
 * @param err Writes to stderr.
 * @param wanted Which events to print; default all.
 * @returns The listener, or `undefined`.
 */
export function eventPrinter(
  flags: Readonly<Record<string, string | boolean>>,
  err: (text: string) => unknown,
  wanted: (event: SkillEvent) => boolean = () => true,
): SkillEventListener | undefined {
  if (flags.verbose !== true && !debugLogWanted()) return undefined;
  return (event) => {
    if (wanted(event)) void err(`${escapeControl(formatEvent(event))}\n`);
  };
}

/**
 * Builds the local runtime the `run`, `mcp` and `doctor` subcommands use:
 * plain, or in a conversation workspace when `--conversation` is given (under
 * `--root`, default `.skillrun/conversations`, resolved against the current
 * folder); isolated in a bubblewrap sandbox with `--isolate` (network with
 * `--allow-net`).
 *
 * Permissions: in conversation mode, `--allow-read` and `--allow-write` of
 * the conversations root; with `--isolate`, `--allow-run=bwrap,bash`.
 *
 * @param flags The parsed `--conversation`, `--root`, `--isolate` and
 * `--allow-net` flags.
 * @param defaultRoot The conversations root without `--root` (default
 * {@linkcode DEFAULT_CONVERSATIONS_ROOT} of the current directory).
 * @param onEvent Receives the runtime's events (`--verbose`).
 * @param egress The network policy, secrets and resolutions of the isolated
 * runtime (from {@linkcode egressOptions}).
 * @returns A new local runtime.
 * @throws {UsageError} `--root` without `--conversation`, `--allow-net`
 * without `--isolate`.
 * @throws {TypeError} An invalid conversation id (from the runtime).
 * @throws {IsolationUnavailableError} `--isolate` where sandboxes cannot
 * start (the message says what to install or enable).
 *
 * @example A plain runtime
 * ```ts
 * import { createRuntime } from "./run.ts";
 * import { assert } from "@std/assert";
 * await using runtime = await createRuntime({});
 * assert(runtime.cwd === Deno.cwd());
 * ```
 */
export async function createRuntime(
  flags: Readonly<Record<string, string | boolean>>,
  defaultRoot: () => string = () => DEFAULT_CONVERSATIONS_ROOT,
  onEvent?: SkillEventListener,
  egress: EgressOptions = {},
): Promise<LocalSkillRuntime> {
  const conversation = flags.conversation;
  const root = flags.root;
  checkIsolateFlags(flags);
  const isolate = {
    ...(flags.isolate === true
      ? { isolate: { allowNet: flags["allow-net"] === true, ...egress } }
      : {}),
    ...(onEvent ? { onEvent } : {}),
  };
  if (typeof conversation !== "string") {
    if (typeof root === "string") {
      throw new UsageError('Option "--root" needs "--conversation"');
    }
    return await LocalSkillRuntime.create(isolate);
  }
  return await LocalSkillRuntime.create({
    conversationsRoot: hostPath.resolve(
      typeof root === "string" ? root : defaultRoot(),
    ),
    conversationId: conversation,
    ...isolate,
  });
}

async function findSkill(
  skillsDirs: readonly string[],
  name: string,
  configured: readonly string[],
  err: (text: string) => Promise<void>,
): Promise<Skill | undefined> {
  const { skills, warnings } = await loadSkills(skillsDirs);
  try {
    // As the tools builder does: a configuration for no skill is a mistake
    // (a misspelt name would silently lose its environment).
    const unknown = configured.find((configName) =>
      !skills.some((skill) => skill.name === configName)
    );
    if (unknown !== undefined) {
      const available = skills.map((skill) => `"${skill.name}"`).join(", ");
      throw new RangeError(
        `Cannot use the --config entry "${unknown}": no such skill (available: ${
          available || "none"
        })`,
      );
    }
    return selectSkills(skills, [name])[0];
  } catch (error) {
    if (!(error instanceof RangeError || error instanceof TypeError)) {
      throw error;
    }
    await err(`skillrun run: ${error.message}\n`);
    for (const warning of warnings) await err(`  warning: ${warning}\n`);
    return undefined;
  }
}

function parseTimeout(value: string | boolean | undefined): number {
  if (value === undefined) return DEFAULT_EXECUTE_TIMEOUT_MS;
  const ms = Number(value);
  if (typeof value !== "string" || !Number.isInteger(ms) || ms <= 0) {
    throw new UsageError(
      `Option "--timeout" needs a positive whole number of ms, got "${value}"`,
    );
  }
  return ms;
}

/** How long a preparation runs before its progress is shown. */
const QUIET_PREPARATION_MS = 1000;

async function prepareWithProgress(
  runtime: SkillRuntime,
  skill: SkillToPrepare,
  // Writes to stderr as it is (the progress escapes its own text).
  err: (text: string) => Promise<void>,
  signal: AbortSignal,
  terminal = false,
): Promise<PreparedSkill[]> {
  const started = performance.now();
  let last: PrepareProgress | undefined;
  let shown = false;
  // On a terminal: one line, rewritten in place (and ticking), ended at the end.
  const show = (progress: PrepareProgress) =>
    void err(
      terminal
        ? `\r\x1b[K${escapeControl(progressLine(progress, started).trimEnd())}`
        : escapeControl(progressLine(progress, started)),
    );
  let ticker: ReturnType<typeof setInterval> | undefined;
  const timer = setTimeout(() => {
    shown = true;
    if (last) show(last);
    if (terminal) ticker = setInterval(() => last && show(last), 500);
  }, QUIET_PREPARATION_MS);
  try {
    return await runtime.prepare({
      skills: [skill],
      signal,
      onProgress: (progress) => {
        last = progress;
        if (shown) show(progress);
      },
    });
  } finally {
    clearTimeout(timer);
    clearInterval(ticker);
    if (terminal && shown) void err("\r\x1b[K");
  }
}

function isTerminal(writer: CliWriter): boolean {
  try {
    return writer.isTerminal?.() === true;
  } catch {
    return false;
  }
}

/** A signal that aborts on Ctrl-C (and when `outer` aborts). */
function interruptSignal(
  outer: AbortSignal | undefined,
): { signal: AbortSignal; stopListening: () => void } {
  const controller = new AbortController();
  const onInterrupt = () => controller.abort(new Error("Interrupted"));
  try {
    Deno.addSignalListener("SIGINT", onInterrupt);
  } catch {
    // Signals are not available everywhere (e.g. some Windows consoles).
  }
  const signal = outer
    ? AbortSignal.any([outer, controller.signal])
    : controller.signal;
  return {
    signal,
    stopListening: () => {
      try {
        Deno.removeSignalListener("SIGINT", onInterrupt);
      } catch {
        // See above.
      }
    },
  };
}

function progressLine(progress: PrepareProgress, started: number): string {
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const detail = progress.detail ? `: ${progress.detail}` : "";
  return `skillrun: preparing "${progress.skillName}" (${progress.stage}${detail}) [${seconds} s]\n`;
}

async function writeBytes(stream: CliWriter, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += await stream.write(bytes.subarray(done));
}

async function writeAll(stream: CliWriter, text: string): Promise<void> {
  let bytes = new TextEncoder().encode(text);
  while (bytes.length > 0) {
    const written = await stream.write(bytes);
    bytes = bytes.subarray(written);
  }
}
