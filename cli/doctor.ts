/**
 * `skillrun doctor`: the fence report of the local runtime the other
 * subcommands would use with the same options: Deno permissions against
 * needs, the shell's isolation, where commands and file tools can go, and the
 * optional tools.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { loadSkills } from "../skill/load.ts";
import type { Skill } from "../skill/types.ts";
import {
  type AllowedToolsExplained,
  explainAllowedTools,
} from "../tools/approval.ts";
import { fenceReport, formatFenceReport } from "../runtimes/local/doctor.ts";
import type { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import { escapeControl } from "../_internal/escape_text.ts";
import { parseArgs, SKILLS_OPTION_HELP, UsageError } from "./_args.ts";
import { EGRESS_FLAGS, egressOptions } from "./_egress.ts";
import {
  CATALOG_BUDGET_HELP,
  catalogUsage,
  formatCatalogUsage,
  parseCatalogBudget,
} from "./_catalog.ts";
import type { EgressOptions } from "../network/sandbox.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import {
  checkRuntimeFlag,
  REMOTE_VARIABLES,
  remoteRuntime,
} from "./_remote.ts";
import {
  type CliStreams,
  createRuntime,
  eventPrinter,
  ISOLATE_HELP,
  USAGE_EXIT_CODE,
} from "./run.ts";

/** The help of `skillrun doctor`. */
export const DOCTOR_HELP: string = `Usage: skillrun doctor [options]

Reports what the local runtime can reach with these options, under the
permissions this process was started with: the Deno permissions held
(read, write, run, net, env) against what the runtime needs, with broader
ones as warnings; whether the shell is isolated and how; where commands and
the file tools can go; which optional tools are present (bash, rg, bwrap,
deno on the commands' PATH) and what their absence costs. With --skills, it
also says what each skill's allowed-tools would pre-approve under an approval
policy that asks (mcp --ask-for-approval), and which entries it ignores, how
much of the skill tool's catalog budget the skills take and which fall outside
its listing (found by skill_search, loaded by name).

Run it with the same deno flags as "run" or "mcp" to check those flags.

Options:
${SKILLS_OPTION_HELP}
  --conversation <id>  Report on the conversation workspace <root>/<id>
                       (created if missing)
  --root <dir>         The conversations root (default: .skillrun/conversations)
${CATALOG_BUDGET_HELP}${ISOLATE_HELP}  --runtime <kind>     A remote kind (e2b, vercel, daytona, deno-sandbox,
                       opensandbox or aio; or --sandbox <kind>): instead of the
                       local fence report, which of the kind's variables are
                       set (names only), whether network access is granted,
                       and a probe: "true" run in a sandbox made as run makes
                       it (removed after, unless --conversation), timed
  --json               Print the report as JSON
  --verbose            Print the runtime's events on stderr (the probes'
                       commands and output; configured values removed); also
                       SKILLRUN_LOG=debug
  -h, --help           Show this help

Exit codes: 0 when the runtime can work (warnings allowed); 1 when something
it needs is missing, or the runtime cannot be made; ${USAGE_EXIT_CODE} on a command-line mistake.

Example:
  deno run --allow-read=skills,.skillrun --allow-write=.skillrun \\
    --allow-run=bwrap,bash,rg --allow-env=PATH cli.ts doctor --skills skills \\
    --conversation demo --isolate
`;

/** Options of {@linkcode doctorCommand}. */
export interface DoctorCommandOptions {
  /** Where output goes; default the process's stdout and stderr. */
  readonly streams?: CliStreams;
  /** Stops the checks. */
  readonly signal?: AbortSignal;
}

/**
 * Runs `skillrun doctor` with its arguments (those after `doctor`).
 *
 * Permissions: none needed (it reports on what is granted); it makes the
 * runtime as `run` does (so a conversation workspace is created when
 * `--conversation` is given and write access allows it).
 *
 * @param args The arguments after `doctor`.
 * @param options The output streams and a signal.
 * @returns The exit code.
 * @throws Never for bad input: that becomes a message and an exit code.
 *
 * @example Showing the help
 * ```ts
 * import { doctorCommand } from "./doctor.ts";
 * import { assert } from "@std/assert";
 * const chunks: Uint8Array[] = [];
 * const sink = { write: (b: Uint8Array) => (chunks.push(b), Promise.resolve(b.length)) };
 * const code = await doctorCommand(["--help"], { streams: { stdout: sink, stderr: sink } });
 * assert(code === 0 && new TextDecoder().decode(chunks[0]).startsWith("Usage:"));
 * ```
 */
export async function doctorCommand(
  args: readonly string[],
  options: DoctorCommandOptions = {},
): Promise<number> {
  const streams = options.streams ??
    { stdout: Deno.stdout, stderr: Deno.stderr };
  const encoder = new TextEncoder();
  const write = async (
    stream: CliStreams["stdout"],
    text: string,
  ): Promise<void> => {
    let bytes = encoder.encode(text);
    while (bytes.length > 0) bytes = bytes.subarray(await stream.write(bytes));
  };
  const out = (text: string) => write(streams.stdout, escapeControl(text));
  const err = (text: string) => write(streams.stderr, escapeControl(text));
  let parsed;
  let egress: EgressOptions;
  let catalogBudget: number | undefined;
  let remoteKind: string | undefined;
  try {
    parsed = parseArgs(args, {
      "catalog-budget": "string",
      skills: "list",
      conversation: "string",
      root: "string",
      runtime: "string",
      sandbox: "string",
      isolate: "boolean",
      "allow-net": "boolean",
      json: "boolean",
      verbose: "boolean",
      ...EGRESS_FLAGS,
    });
    if (parsed.flags.help === true) {
      await out(DOCTOR_HELP);
      return 0;
    }
    if (parsed.positionals.length > 0 || parsed.rest !== undefined) {
      throw new UsageError(
        `Unexpected argument "${parsed.positionals[0] ?? "--"}"`,
      );
    }
    egress = egressOptions(parsed.lists, parsed.flags);
    catalogBudget = parseCatalogBudget(parsed.flags["catalog-budget"]);
    remoteKind = checkRuntimeFlag(parsed.flags);
    if (remoteKind !== undefined && parsed.lists.skills?.length) {
      throw new UsageError(
        `Option "--skills" goes with the local report; run doctor --skills without --${
          parsed.flags.sandbox !== undefined ? "sandbox" : "runtime"
        }`,
      );
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await err(`skillrun doctor: ${error.message}\n\n${DOCTOR_HELP}`);
    return USAGE_EXIT_CODE;
  }
  const skillRoots = (parsed.lists.skills ?? []).map((p) =>
    hostPath.resolve(p)
  );
  if (remoteKind !== undefined) {
    return await remoteDoctor(remoteKind, parsed.flags, out, err, options);
  }
  let runtime: LocalSkillRuntime | undefined;
  try {
    runtime = await createRuntime(
      parsed.flags,
      undefined,
      eventPrinter(parsed.flags, err),
      egress,
    );
    const report = await fenceReport(runtime, {
      skillRoots,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // A folder that cannot be loaded is already in the report's errors.
    const skills = skillRoots.length
      ? (await loadSkills(skillRoots).catch(() => undefined))?.skills
      : undefined;
    const allowed = skills ? allowedToolsOf(skills) : undefined;
    const catalog = skills ? catalogUsage(skills, catalogBudget) : undefined;
    await out(
      parsed.flags.json === true
        ? JSON.stringify(
          {
            ...report,
            ...(allowed ? { allowedTools: allowed } : {}),
            ...(catalog ? { catalog } : {}),
          },
          null,
          2,
        ) + "\n"
        : formatFenceReport(report) + (allowed ? formatAllowed(allowed) : "") +
          (catalog ? formatCatalogUsage(catalog) : ""),
    );
    return report.errors.length > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      await err(`skillrun doctor: ${error.message}\n\n${DOCTOR_HELP}`);
      return USAGE_EXIT_CODE;
    }
    const message = error instanceof Error ? error.message : String(error);
    if (parsed.flags.json === true) {
      await out(JSON.stringify({ error: message }, null, 2) + "\n");
    }
    await err(`skillrun doctor: ${message}\n`);
    return 1;
  } finally {
    await runtime?.close();
  }
}

/** What `doctor --runtime <remote kind>` found. */
interface RemoteReport {
  readonly runtime: string;
  /** Each variable the kind reads: set or not (never its value). */
  readonly variables: Record<string, "set" | "unset">;
  /** Deno's network permission. */
  readonly net: Deno.PermissionState;
  /** The probe: `true` in a sandbox. */
  readonly probe?: { readonly exitCode: number; readonly ms: number };
  readonly errors: readonly string[];
}

/**
 * `doctor` for a remote kind: its variables (names only), the network
 * permission, and `true` run in a sandbox made as `run` makes it.
 */
async function remoteDoctor(
  kind: string,
  flags: Readonly<Record<string, string | boolean>>,
  out: (text: string) => Promise<void>,
  err: (text: string) => Promise<void>,
  options: DoctorCommandOptions,
): Promise<number> {
  const variables = Object.fromEntries(
    (REMOTE_VARIABLES[kind] ?? []).map((name) => {
      let set = false;
      try {
        set = Boolean(Deno.env.get(name));
      } catch {
        // not readable under these permissions: unset for this process
      }
      return [name, set ? "set" : "unset"] as const;
    }),
  );
  const net = (await Deno.permissions.query({ name: "net" })).state;
  const errors: string[] = [];
  let probe: RemoteReport["probe"];
  let runtime: SkillRuntime | undefined;
  try {
    runtime = remoteRuntime(flags, undefined, eventPrinter(flags, err));
    if (net !== "granted") {
      errors.push(
        `network access is ${net}: run with --allow-net (of the service's host)`,
      );
    } else {
      const started = performance.now();
      const result = await runtime!.execute({
        command: "true",
        timeoutMs: 120_000,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      probe = {
        exitCode: result.exitCode,
        ms: Math.round(performance.now() - started),
      };
      if (result.exitCode !== 0) {
        errors.push(`"true" exited with ${result.exitCode} in the sandbox`);
      }
    }
  } catch (error) {
    if (error instanceof UsageError) {
      await err(`skillrun doctor: ${error.message}\n\n${DOCTOR_HELP}`);
      return USAGE_EXIT_CODE;
    }
    errors.push(error instanceof Error ? error.message : String(error));
  } finally {
    await runtime?.close().catch((error: unknown) => {
      errors.push(
        `the probe's sandbox could not be removed: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    });
  }
  const report: RemoteReport = {
    runtime: kind,
    variables,
    net,
    ...(probe ? { probe } : {}),
    errors,
  };
  if (flags.json === true) {
    await out(JSON.stringify(report, null, 2) + "\n");
  } else {
    const lines = [`runtime: ${kind} (a remote sandbox)`, "variables:"];
    for (const [name, state] of Object.entries(variables)) {
      lines.push(`  ${state === "set" ? "set    " : "unset  "} ${name}`);
    }
    lines.push(`network: ${net}`);
    if (probe) {
      lines.push(
        `probe: "true" in a sandbox: exit ${probe.exitCode} in ${probe.ms} ms`,
      );
    }
    for (const error of errors) lines.push(`error: ${error}`);
    await out(lines.join("\n") + "\n");
  }
  return errors.length > 0 ? 1 : 0;
}

/**
 * What each skill's `allowed-tools` would pre-approve, by skill name; none
 * when no skill has the field.
 */
function allowedToolsOf(
  skills: readonly Skill[],
): Record<string, AllowedToolsExplained> | undefined {
  const found = skills.filter((skill) => skill.allowedTools?.length);
  if (found.length === 0) return undefined;
  return Object.fromEntries(
    found.map((
      skill,
    ) => [skill.name, explainAllowedTools(skill.allowedTools!)]),
  );
}

function formatAllowed(
  allowed: Record<string, AllowedToolsExplained>,
): string {
  const lines = [
    "",
    "allowed-tools (pre-approve under an approval policy that asks, e.g. mcp --ask-for-approval, once the skill is loaded):",
  ];
  for (const [name, { preApproved, ignored }] of Object.entries(allowed)) {
    lines.push(`  ${name}`);
    for (const line of preApproved) lines.push(`    ok      ${line}`);
    for (const line of ignored) lines.push(`    ignored ${line}`);
  }
  return lines.join("\n") + "\n";
}
