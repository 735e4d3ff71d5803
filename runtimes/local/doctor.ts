/**
 * The fence report of a local runtime: which Deno permissions this process
 * holds against what the runtime needs (broader ones are warnings), whether
 * the shell is isolated and how, where commands and the file tools can go,
 * and which optional tools are present and what their absence costs. The
 * `doctor` command of the CLI prints it.
 *
 * @module
 */
import {
  type BackgroundCommandInfo,
  listBackgroundCommands,
} from "../background.ts";
import { hostPath } from "../../_internal/std.ts";
import { commandSucceeds } from "../../_internal/command.ts";
import { detectRipgrep } from "../../search/ripgrep.ts";
import { BubblewrapLauncher, type IsolationReport } from "./isolated.ts";
import type { LocalSkillRuntime } from "./runtime.ts";

/** The permissions the report looks at. */
export type ReportedPermission = "read" | "write" | "run" | "net" | "env";

/** How one permission compares with the runtime's needs. */
export interface PermissionCheck {
  /** The permission. */
  readonly permission: ReportedPermission;
  /** What the runtime needs (paths, programs, variables); empty for none. */
  readonly needed: readonly string[];
  /** The needed entries Deno does not grant. */
  readonly missing: readonly string[];
  /** Whether every entry is granted (the unscoped flag). */
  readonly all: boolean;
  /** Entries beyond the needs that are granted (checked examples). */
  readonly beyond: readonly string[];
  /**
   * `ok`; `missing` (a needed entry is not granted: an error);
   * `optional` (an entry that only improves things is not granted);
   * `broader` (more than needed is granted: a warning).
   */
  readonly status: "ok" | "missing" | "optional" | "broader";
  /** One sentence for people. */
  readonly note: string;
}

/** One optional tool. */
export interface ToolCheck {
  /** `bash`, `rg`, `bwrap` or `deno`. */
  readonly name: string;
  /** Whether it runs. */
  readonly present: boolean;
  /**
   * Whether Deno lets this process run it. When not, whether it is installed
   * is unknown (`present` is `false`) and the report says "not permitted".
   */
  readonly permitted: boolean;
  /** Where it was looked for. */
  readonly where: string;
  /** What its absence costs (or what it gives when present). */
  readonly cost: string;
}

/** Where commands can go. */
export interface CommandReach {
  /** What commands can read: `everything the user may`, or folders. */
  readonly read: readonly string[];
  /** What commands can write. */
  readonly write: readonly string[];
  /** `none`, `host` (the host's network), or `unrestricted` (not isolated). */
  readonly network: "none" | "host" | "unrestricted";
}

/** Where the file tools (read, write, edit, ls, glob, grep) can go. */
export interface FileToolReach {
  /** `workspace` (fenced, symlinks resolved) or `process` (what Deno allows). */
  readonly scope: "workspace" | "process";
  /** The fence's folder, or the folders Deno allows that the runtime uses. */
  readonly paths: readonly string[];
}

/** The fence report of a local runtime. */
export interface FenceReport {
  /** The runtime. */
  readonly runtime: {
    readonly name: string;
    readonly mode: "plain" | "conversation";
    readonly isolated: boolean;
    readonly launcher: string;
    readonly cwd: string;
    readonly workspace: string | null;
    readonly skillRoots: readonly string[];
  };
  /** Deno permissions against needs. */
  readonly permissions: readonly PermissionCheck[];
  /** The shell: isolated or not, and the sandbox when it is. */
  readonly shell: {
    readonly isolated: boolean;
    readonly summary: string;
    readonly sandbox: IsolationReport | null;
  };
  /** Where commands can go. */
  readonly commands: CommandReach;
  /** Where the file tools can go. */
  readonly fileTools: FileToolReach;
  /** Optional tools. */
  readonly tools: readonly ToolCheck[];
  /** Things broader than needed or weaker than asked. */
  readonly warnings: readonly string[];
  /** Things that stop the runtime from working. */
  readonly errors: readonly string[];
  /** The runtime's background commands (running or not yet forgotten). */
  readonly backgroundCommands?: readonly BackgroundCommandInfo[];
}

/** Options of {@linkcode fenceReport}. */
export interface FenceReportOptions {
  /** The folders of skills the application loads (they must be readable). */
  readonly skillRoots?: readonly string[];
  /** Stops the checks. */
  readonly signal?: AbortSignal;
}

/**
 * Reports what a local runtime and this process can reach. It queries Deno's
 * permissions (never prompting), runs one short command through the runtime
 * (so the tools found are those on the commands' `PATH`, inside the sandbox
 * when isolated), and checks `rg` and `bwrap` on the host.
 *
 * Permissions are compared with what the runtime needs: `read` of the skill
 * folders and of the conversations root (conversation mode) or the working
 * folder (plain mode); `write` of the same folder; `run` of `bash` (plain)
 * or `bwrap` and `bash` (isolated), `rg` optional; `env` of `PATH`
 * (optional); no `net`. An unscoped permission, or a granted parent of a
 * needed folder, is reported as broader than needed.
 *
 * @example Reporting on a plain runtime
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   fenceReport,
 *   formatFenceReport,
 *   LocalSkillRuntime,
 * } from "@skillrun/skillrun/runtime";
 *
 * await using runtime = new LocalSkillRuntime();
 * const report = await fenceReport(runtime);
 * assert(!report.shell.isolated && report.commands.network === "unrestricted");
 * assert(formatFenceReport(report).includes("shell: not isolated"));
 * ```
 *
 * @param runtime The local runtime.
 * @param options The skill folders, a signal.
 * @returns The report.
 * @throws {Error} The runtime is closed.
 * Permissions: none needed; it reports on what is granted.
 */
export async function fenceReport(
  runtime: LocalSkillRuntime,
  options: FenceReportOptions = {},
): Promise<FenceReport> {
  const skillRoots = (options.skillRoots ?? []).map((p) => hostPath.resolve(p));
  const workspace = runtime.workspace;
  const mode = workspace === undefined ? "plain" : "conversation";
  const launcher = runtime.launcher;
  const sandbox = launcher instanceof BubblewrapLauncher
    ? launcher.report
    : undefined;
  const isolated = sandbox !== undefined;
  const home = workspace === undefined
    ? runtime.cwd
    : hostPath.dirname(workspace);
  const warnings: string[] = [];
  const errors: string[] = [];

  for (const root of skillRoots) {
    const problem = await skillRootProblem(root);
    if (problem) errors.push(problem);
  }

  const permissions: PermissionCheck[] = [
    await checkPaths("read", [...skillRoots, home]),
    await checkPaths("write", [home]),
    await checkRun(isolated ? ["bwrap", "bash"] : ["bash"]),
    await checkNet(),
    await checkEnv(),
  ];
  for (const check of permissions) {
    if (check.status === "missing") errors.push(check.note);
    if (check.status === "broader") warnings.push(check.note);
  }

  const writable = workspace === undefined
    ? [runtime.cwd, "the prepared skills' folders"]
    : [workspace];
  const commands: CommandReach = sandbox
    ? {
      read: [...sandbox.readOnly, ...writable],
      write: [...writable, "a private /tmp"],
      network: sandbox.allowNet ? "host" : "none",
    }
    : {
      read: ["everything the user running Deno may read"],
      write: ["everything the user running Deno may write"],
      network: "unrestricted",
    };
  const fileTools: FileToolReach = workspace === undefined
    ? { scope: "process", paths: [runtime.cwd] }
    : { scope: "workspace", paths: [workspace] };

  let summary: string;
  if (sandbox) {
    summary = `isolated with ${sandbox.version}: namespaces ${
      sandbox.namespaces.join(", ")
    }; ${
      sandbox.allowNet ? "the host's network" : "no network, loopback included"
    }; ${
      sandbox.descriptors === "stdio"
        ? "standard streams only"
        : "inherited descriptors reach commands"
    }; ${
      sandbox.syscallFilter
        ? `seccomp refuses ${sandbox.syscallFilter.join(", ")}`
        : "no seccomp filter"
    }`;
    if (!sandbox.syscallFilter) {
      warnings.push(
        "No seccomp filter here: commands can make setuid/setgid files and reach Unix sockets of host services under the mounted folders",
      );
    }
    for (const [name, limit] of Object.entries(sandbox.limits)) {
      if (limit.mechanism === "none") {
        warnings.push(
          `The ${limitName(name)} limit is not enforced: ${limit.note}`,
        );
      }
    }
    if (sandbox.allowNet) {
      warnings.push("Commands can reach the network (--allow-net)");
    }
  } else {
    summary =
      "not isolated: commands run as the user running Deno, with its environment, and reach whatever that user may, whatever Deno's permission flags say";
    warnings.push(
      "The shell is not isolated: use the isolated mode (--isolate) for skills or code you do not trust",
    );
  }

  const tools = await checkTools(runtime, sandbox, options.signal);
  for (const tool of tools) {
    if (tool.present) continue;
    (tool.name === "bash" ? errors : warnings).push(toolProblem(tool));
  }

  return {
    runtime: {
      name: runtime.name,
      mode,
      isolated,
      launcher: launcher.name,
      cwd: runtime.cwd,
      workspace: workspace ?? null,
      skillRoots,
    },
    permissions,
    shell: { isolated, summary, sandbox: sandbox ?? null },
    commands,
    fileTools,
    tools,
    warnings,
    errors,
    backgroundCommands: listBackgroundCommands(runtime),
  };
}

/**
 * Formats a {@linkcode fenceReport} for people: one fact per line, a status
 * word first where there is one (`ok`, `warn`, `error`, `missing`).
 *
 * @example Formatting a report
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   fenceReport,
 *   formatFenceReport,
 *   LocalSkillRuntime,
 * } from "@skillrun/skillrun/runtime";
 * await using runtime = new LocalSkillRuntime();
 * const text = formatFenceReport(await fenceReport(runtime));
 * assert(text.startsWith("runtime: local, plain mode, not isolated"));
 * ```
 *
 * @param report The report.
 * @returns The text, ending with a newline.
 */
export function formatFenceReport(report: FenceReport): string {
  const lines: string[] = [];
  const r = report.runtime;
  lines.push(
    `runtime: ${r.name}, ${r.mode} mode, ${
      r.isolated
        ? `isolated (${report.shell.sandbox!.version})`
        : "not isolated"
    }`,
  );
  if (r.workspace !== null) lines.push(`workspace: ${r.workspace}`);
  lines.push(`working directory: ${r.cwd}`);
  if (r.skillRoots.length) lines.push(`skills: ${r.skillRoots.join(", ")}`);
  lines.push("");
  lines.push("Deno permissions (this process):");
  for (const check of report.permissions) {
    const word =
      { ok: "ok", missing: "error", optional: "warn", broader: "warn" }[
        check.status
      ];
    lines.push(
      `  ${word.padEnd(5)} ${check.permission.padEnd(5)} ${check.note}`,
    );
  }
  lines.push("");
  lines.push(`shell: ${report.shell.summary}`);
  const sandbox = report.shell.sandbox;
  if (sandbox) {
    lines.push(`  system, read-only: ${sandbox.readOnly.join(", ")}`);
    if (sandbox.masked.length) {
      lines.push(`  hidden: ${sandbox.masked.join(", ")}`);
    }
    if (sandbox.deno) lines.push(`  deno, read-only: ${sandbox.deno}`);
    lines.push(
      `  limits: ${
        Object.entries(sandbox.limits).map(([name, limit]) =>
          `${limitName(name)} ${formatLimit(name, limit.value)} (${
            limit.mechanism === "none" ? "not enforced" : limit.mechanism
          })`
        ).join(", ")
      }`,
    );
    lines.push(
      `  environment: PATH=${sandbox.environment.PATH}, HOME=${sandbox.environment.HOME}, LANG=${sandbox.environment.LANG} and the runtime's variables; nothing of the host's`,
    );
    lines.push(
      `  user: ${sandbox.uid}${
        sandbox.uid === 0 ? " (root, without capabilities)" : ""
      }; new session; dies with its parent; no process outlives its command`,
    );
  }
  lines.push("");
  lines.push("commands can:");
  lines.push(`  read: ${report.commands.read.join(", ")}`);
  lines.push(`  write: ${report.commands.write.join(", ")}`);
  lines.push(`  network: ${
    {
      none: "none (loopback included)",
      host: "the host's network",
      unrestricted: "whatever the user may reach",
    }[report.commands.network]
  }`);
  lines.push(
    report.fileTools.scope === "workspace"
      ? `file tools can reach: only ${
        report.fileTools.paths[0]
      } (lexically and with symlinks resolved)`
      : `file tools can reach: whatever Deno's read and write permissions allow; relative paths resolve in ${
        report.fileTools.paths[0]
      }`,
  );
  lines.push("");
  lines.push("optional tools:");
  for (const tool of report.tools) {
    const word = tool.present
      ? "ok"
      : tool.permitted
      ? "missing"
      : "not permitted";
    lines.push(
      `  ${word.padEnd(7)} ${tool.name.padEnd(5)} ${tool.where}: ${tool.cost}`,
    );
  }
  lines.push("");
  const background = report.backgroundCommands ?? [];
  if (background.length) {
    lines.push("background commands:");
    for (const command of background) {
      lines.push(
        `  ${command.id} ${
          command.running ? "running" : `exit ${command.exitCode}`
        }: ${command.command}`,
      );
    }
    lines.push("");
  }
  // Each fact once: what a section above already shows is only counted.
  const shown = new Set([
    ...report.permissions.map((check) => check.note),
    ...report.tools.filter((tool) => !tool.present).map(toolProblem),
  ]);
  for (const warning of report.warnings) {
    if (!shown.has(warning)) lines.push(`warning: ${warning}`);
  }
  for (const error of report.errors) {
    if (!shown.has(error)) lines.push(`error: ${error}`);
  }
  lines.push(
    `${report.errors.length} error${
      report.errors.length === 1 ? "" : "s"
    }, ${report.warnings.length} warning${
      report.warnings.length === 1 ? "" : "s"
    }`,
  );
  return lines.join("\n") + "\n";
}

function limitName(name: string): string {
  return {
    processes: "processes",
    fileSizeBytes: "file size",
    memoryBytes: "memory",
    tmpBytes: "/tmp",
  }[name] ?? name;
}

function formatLimit(name: string, value: number): string {
  if (name === "processes") return String(value);
  for (
    const [unit, size] of [["GiB", 1024 ** 3], ["MiB", 1024 ** 2], [
      "KiB",
      1024,
    ]] as const
  ) {
    if (value >= size && value % size === 0) return `${value / size} ${unit}`;
  }
  return `${value} bytes`;
}

function state(descriptor: Deno.PermissionDescriptor): boolean {
  return Deno.permissions.querySync(descriptor).state === "granted";
}

async function checkPaths(
  name: "read" | "write",
  paths: readonly string[],
): Promise<PermissionCheck> {
  await Promise.resolve();
  const needed = [...new Set(paths)];
  const missing = needed.filter((path) => !state({ name, path }));
  const all = state({ name });
  const flag = `--allow-${name}`;
  // A granted parent of a needed folder reaches its siblings too.
  const beyond = all ? ["every path"] : [
    ...new Set(
      needed.map((path) => hostPath.dirname(path)).filter((parent) =>
        !needed.some((path) => inside(parent, path)) &&
        state({ name, path: parent })
      ),
    ),
  ];
  if (missing.length) {
    return {
      permission: name,
      needed,
      missing,
      all,
      beyond,
      status: "missing",
      note: `${name} of ${
        missing.join(", ")
      } is not granted: run with ${flag}=${needed.join(",")}`,
    };
  }
  if (beyond.length) {
    return {
      permission: name,
      needed,
      missing,
      all,
      beyond,
      status: "broader",
      note: `${name} is granted for ${
        all ? "every path" : beyond.join(", ")
      }: broader than needed (${flag}=${needed.join(",")})`,
    };
  }
  return {
    permission: name,
    needed,
    missing,
    all,
    beyond,
    status: "ok",
    note: `${name} of ${needed.join(", ") || "nothing"}`,
  };
}

async function checkRun(needed: readonly string[]): Promise<PermissionCheck> {
  await Promise.resolve();
  const missing = needed.filter((command) => !state({ name: "run", command }));
  const all = state({ name: "run" });
  const rg = state({ name: "run", command: "rg" });
  const flag = `--allow-run=${[...needed, "rg"].join(",")}`;
  const beyond = all
    ? ["every program"]
    : ["sh", "python3", "curl"].filter((command) =>
      state({ name: "run", command })
    );
  const base = { permission: "run" as const, needed, missing, all, beyond };
  if (missing.length) {
    return {
      ...base,
      status: "missing",
      note: `run of ${missing.join(", ")} is not granted: run with ${flag}`,
    };
  }
  if (beyond.length) {
    return {
      ...base,
      status: "broader",
      note: `run is granted for ${
        all ? "every program" : beyond.join(", ")
      }: broader than needed (${flag})`,
    };
  }
  if (!rg) {
    return {
      ...base,
      status: "optional",
      note: `run of ${
        needed.join(", ")
      }; not rg, so grep and glob use the TypeScript fallback (${flag})`,
    };
  }
  return {
    ...base,
    status: "ok",
    note: `run of ${[...needed, "rg"].join(", ")}`,
  };
}

async function checkNet(): Promise<PermissionCheck> {
  await Promise.resolve();
  const all = state({ name: "net" });
  const beyond = all
    ? ["every host"]
    : ["localhost", "127.0.0.1", "example.com"].filter((host) =>
      state({ name: "net", host })
    );
  const base = {
    permission: "net" as const,
    needed: [],
    missing: [],
    all,
    beyond,
  };
  if (beyond.length) {
    return {
      ...base,
      status: "broader",
      note: `net is granted for ${
        all ? "every host" : beyond.join(", ")
      }: the local runtime needs none`,
    };
  }
  return { ...base, status: "ok", note: "net: none, as needed" };
}

async function checkEnv(): Promise<PermissionCheck> {
  await Promise.resolve();
  const all = state({ name: "env" });
  const path = state({ name: "env", variable: "PATH" });
  const beyond = all
    ? ["every variable"]
    : ["HOME", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"].filter((variable) =>
      state({ name: "env", variable })
    );
  const base = {
    permission: "env" as const,
    needed: ["PATH"],
    missing: path ? [] : ["PATH"],
    all,
    beyond,
  };
  if (beyond.length) {
    return {
      ...base,
      status: "broader",
      note: `env is granted for ${
        all ? "every variable" : beyond.join(", ")
      }: broader than needed (--allow-env=PATH)`,
    };
  }
  if (!path) {
    return {
      ...base,
      status: "optional",
      note:
        "env of PATH is not granted: commands keep the inherited PATH without the running deno's folder (--allow-env=PATH)",
    };
  }
  return { ...base, status: "ok", note: "env of PATH" };
}

async function checkTools(
  runtime: LocalSkillRuntime,
  sandbox: IsolationReport | undefined,
  signal: AbortSignal | undefined,
): Promise<ToolCheck[]> {
  const where = sandbox ? "the sandbox's PATH" : "the commands' PATH";
  let found = new Set<string>();
  let bash = true;
  try {
    const result = await runtime.execute({
      command:
        "for t in bash deno; do command -v $t >/dev/null && echo $t; done",
      timeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
    found = new Set(result.stdout.split("\n").filter(Boolean));
  } catch {
    bash = false;
  }
  const rgPermitted = state({ name: "run", command: "rg" });
  const rg = rgPermitted ? await detectRipgrep() : null;
  const bwrapPermitted = sandbox !== undefined ||
    state({ name: "run", command: "bwrap" });
  let bwrap: boolean;
  if (sandbox) {
    bwrap = true;
  } else if (bwrapPermitted) {
    bwrap = await commandSucceeds("bwrap", ["--version"]);
  } else {
    bwrap = false;
  }
  return [
    {
      name: "bash",
      present: bash && found.has("bash"),
      permitted: true,
      where,
      cost: "required: without it no command runs (the bash tool, bootstrap)",
    },
    {
      name: "rg",
      present: rg !== null,
      permitted: rgPermitted,
      where: "this process (grep, glob)",
      cost: rg
        ? `ripgrep ${rg.version} answers grep and glob`
        : rgPermitted
        ? "grep and glob use the TypeScript fallback: the same answers, slower on large folders (install ripgrep and allow --allow-run=rg)"
        : "grep and glob use the TypeScript fallback: the same answers, slower on large folders (run with --allow-run=rg to use ripgrep where it is installed)",
    },
    {
      name: "bwrap",
      present: bwrap,
      permitted: bwrapPermitted,
      where: "this process",
      cost: bwrap
        ? "the isolated mode is available"
        : bwrapPermitted
        ? "no isolated mode: the shell reaches whatever the user may (install bubblewrap and allow --allow-run=bwrap)"
        : "no isolated mode: the shell reaches whatever the user may (run with --allow-run=bwrap to use bubblewrap where it is installed)",
    },
    {
      name: "deno",
      present: found.has("deno"),
      permitted: true,
      where,
      cost: found.has("deno")
        ? "skills written for Deno can run deno"
        : "skills written for Deno cannot run deno",
    },
  ];
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(`${folder}/`);
}

/** How a tool that does not run is reported among the warnings or errors. */
function toolProblem(tool: ToolCheck): string {
  return `${tool.name} is ${
    tool.permitted ? "not available" : "not permitted"
  }: ${tool.cost}`;
}

/** Why a skills folder cannot be used, or `undefined` (also when unreadable: the read check says so). */
async function skillRootProblem(root: string): Promise<string | undefined> {
  // Never a prompt: without read permission the read check reports it.
  if (!state({ name: "read", path: root })) return undefined;
  try {
    const info = await Deno.stat(root);
    if (info.isDirectory) return undefined;
    if (info.isFile && hostPath.basename(root).toUpperCase() === "SKILL.MD") {
      return undefined;
    }
    return `the skills folder "${root}" is not a folder or a SKILL.md`;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return `the skills folder "${root}" does not exist`;
    }
    return undefined;
  }
}
