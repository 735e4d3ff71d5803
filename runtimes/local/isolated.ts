/**
 * The isolated launcher of the local runtime: each command runs inside a
 * bubblewrap (`bwrap`) sandbox on Linux. The system is mounted read-only, the
 * runtime's own folders (the conversation workspace, or the plain runtime's
 * folder and its prepared skills) are the only writable places besides a
 * private `/tmp`, the network is cut unless allowed, the command has its own
 * PID, IPC, UTS, user and cgroup namespaces, a new session, a clean
 * environment, and limits on processes, file size and memory. It reuses
 * {@linkcode runProcessGroup} for the process group, the timeout, the abort
 * and the bounded output.
 *
 * Why one long file: the mount plan, the limits (rlimits, a pids cgroup, the
 * `/tmp` size), the probe that says why isolation is unavailable, and the
 * report of what a command can reach all read the same private plan of one
 * launcher; split, each part would have to export that plan's internals.
 *
 * @module
 */
import { shellQuote } from "../../_internal/shell_quote.ts";
import { hostPath } from "../../_internal/std.ts";
import {
  type EgressOptions,
  type EgressReport,
  INSIDE_DIR,
  SandboxEgress,
  wantsEgress,
} from "../../network/sandbox.ts";
import { EgressPolicy } from "../../network/policy.ts";
export type {
  NetworkPolicy,
  ResolveOption,
  SecretsOption,
  SecretSpec,
} from "../../network/policy.ts";
export type { NetworkEvent } from "../../network/proxy.ts";
export type { EgressOptions, EgressReport } from "../../network/sandbox.ts";
import {
  bwrapVersion,
  IsolationUnavailableError,
  type Probe,
  probeHost,
  unavailable,
} from "./_bwrap_probe.ts";
import { seccompFilter } from "./_seccomp.ts";
import type { ExecuteResult } from "../types.ts";
import { checkTimeoutMs } from "../command_core.ts";
import {
  DEFAULT_GRACE_MS,
  type GroupSignalMethod,
  type LaunchRequest,
  type ProcessLauncher,
  runCheckedGroup,
  streamsOf,
} from "./launcher.ts";

export {
  type IsolationProblem,
  IsolationUnavailableError,
} from "./_bwrap_probe.ts";

/** The default most processes (and threads) one command may have at once: 1024. */
export const DEFAULT_MAX_PROCESSES = 1024;

/** The default largest file one command may write: 1 GiB. */
export const DEFAULT_MAX_FILE_SIZE_BYTES = 1024 ** 3;

/** The default most memory one command may use: 4 GiB. */
export const DEFAULT_MAX_MEMORY_BYTES = 4 * 1024 ** 3;

/** The default size of a command's private `/tmp`: 512 MiB. */
export const DEFAULT_TMP_SIZE_BYTES = 512 * 1024 ** 2;

/** The `PATH` inside the sandbox (after the running `deno`'s folder). */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** `HOME` inside the sandbox: a folder of the private `/tmp`. */
export const SANDBOX_HOME = "/tmp/home";

/** The locale inside the sandbox. */
export const SANDBOX_LANG = "C.UTF-8";

/**
 * The system folders mounted read-only inside the sandbox (those that exist).
 * Nothing else of the host is visible, except the runtime's own folders and
 * the running `deno` binary.
 */
export const SYSTEM_PATHS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
  "/opt",
];

/**
 * Secrets of the system hidden inside the sandbox (an empty folder or an
 * unreadable file in their place): a command runs as the user running Deno,
 * which may be root.
 */
export const MASKED_PATHS: readonly string[] = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  "/etc/ssl/private",
  "/etc/security/opasswd",
];

/** Folders that can never be made writable inside the sandbox. */
const FORBIDDEN_WRITABLE = new Set(["/", "/tmp", "/proc", "/dev", "/sys"]);

/** Where the cgroup files a command enters are mounted inside the sandbox. */
const CGROUP_MOUNT = "/run/skillrun";

/** Limits on one command (all its processes together where the platform allows). */
export interface IsolationLimits {
  /**
   * The most processes (and threads) at once. Default
   * {@linkcode DEFAULT_MAX_PROCESSES}. Enforced by a cgroup `pids.max` when
   * the cgroup is writable (needed for root, whom `RLIMIT_NPROC` does not
   * limit), else by `RLIMIT_NPROC`.
   */
  readonly processes?: number;
  /**
   * The largest file a process may write, in bytes (`RLIMIT_FSIZE`). Default
   * {@linkcode DEFAULT_MAX_FILE_SIZE_BYTES}.
   */
  readonly fileSizeBytes?: number;
  /**
   * The most memory, in bytes. Default {@linkcode DEFAULT_MAX_MEMORY_BYTES}.
   * A cgroup memory limit for the whole command when writable, else
   * `RLIMIT_DATA` for each process.
   */
  readonly memoryBytes?: number;
  /** The size of the private `/tmp` (memory-backed). Default {@linkcode DEFAULT_TMP_SIZE_BYTES}. */
  readonly tmpBytes?: number;
}

/**
 * Options of {@linkcode BubblewrapLauncher.create}. With `network`, `secrets`
 * or `resolve`, the sandbox keeps no network but its own loopback and goes
 * out only through the egress proxy on the host (see `network/sandbox.ts`).
 */
export interface BubblewrapLauncherOptions extends EgressOptions {
  /**
   * Whether commands may use the network (the host's). Default `false`: none
   * at all, loopback included. `true` is the shorthand of allowing every
   * host; with `secrets` it goes through the egress proxy (every host
   * tunnelled, the secrets' hosts intercepted); it cannot be given with
   * `network`.
   */
  readonly allowNet?: boolean;
  /** Limits on each command. */
  readonly limits?: IsolationLimits;
  /** The `bwrap` program. Default `bwrap` (looked up on `PATH`). */
  readonly bwrap?: string;
  /**
   * Whether to use cgroups for the process and memory limits: `"auto"`
   * (default) when `/sys/fs/cgroup` is writable (Deno's `--allow-read` and
   * `--allow-write` of it, and the system's), `false` never.
   */
  readonly cgroups?: "auto" | false;
  /** Time between SIGTERM and SIGKILL, in ms. Default {@linkcode DEFAULT_GRACE_MS}. */
  readonly graceMs?: number;
  /** How the process group is signalled. Default `auto`. */
  readonly groupSignal?: GroupSignalMethod;
  /** Stops the checks made while creating. */
  readonly signal?: AbortSignal;
  /**
   * The fences against what a sandbox could otherwise carry out or reach.
   * Default `true`: every command starts with no file descriptor but its
   * standard streams (none inherited from this process), and a seccomp
   * filter (x86_64, aarch64) refuses setuid and setgid modes and
   * `socket(AF_UNIX)` (see `_seccomp.ts`). `false` only to measure what they
   * cost: never where the sandbox matters.
   */
  readonly hardening?: boolean;
}

/** How one limit is enforced. */
export interface LimitReport {
  /** The value: a count, or bytes. */
  readonly value: number;
  /**
   * The mechanism: `cgroup` (all processes of the command together),
   * `rlimit` (each process, or each user for processes), `tmpfs` (the size
   * of the private `/tmp`), or `none` (the platform does not allow it; `note`
   * says why).
   */
  readonly mechanism: "cgroup" | "rlimit" | "tmpfs" | "none";
  /** Why a limit is weaker than asked, when it is. */
  readonly note?: string;
}

/** What a {@linkcode BubblewrapLauncher} does, for reports. */
export interface IsolationReport {
  /** `bubblewrap`. */
  readonly kind: "bubblewrap";
  /** `bwrap`'s version line, e.g. `bubblewrap 0.8.0`. */
  readonly version: string;
  /** Whether the command may use the host's network. */
  readonly allowNet: boolean;
  /** The egress policy and where it is enforced, when a proxy mediates the network. */
  readonly egress: EgressReport | null;
  /** The namespaces each command gets. */
  readonly namespaces: readonly string[];
  /** The host folders mounted read-only (those that exist). */
  readonly readOnly: readonly string[];
  /** The secrets hidden inside. */
  readonly masked: readonly string[];
  /** The `deno` binary mounted read-only, when known. */
  readonly deno: string | undefined;
  /** The user id commands run as, inside and outside. */
  readonly uid: number;
  /** The limits and how each is enforced. */
  readonly limits: {
    readonly processes: LimitReport;
    readonly fileSizeBytes: LimitReport;
    readonly memoryBytes: LimitReport;
    readonly tmpBytes: LimitReport;
  };
  /** The environment's fixed part: `PATH`, `HOME`, `LANG`. */
  readonly environment: Readonly<Record<string, string>>;
  /** Which optional programs exist inside the sandbox's `PATH`. */
  readonly tools: Readonly<Record<string, boolean>>;
  /**
   * The file descriptors a command starts with: `stdio` (0, 1 and 2 only)
   * or `inherited` (also those this process left open without close-on-exec).
   */
  readonly descriptors: "stdio" | "inherited";
  /**
   * What the seccomp filter refuses (`setuid-setgid-modes`,
   * `unix-sockets`), or `null` without one (hardening off, or an
   * architecture other than x86_64 and aarch64).
   */
  readonly syscallFilter: readonly string[] | null;
}

interface CgroupController {
  /** `pids` or `memory`. */
  readonly kind: "pids" | "memory";
  /** The folder in which a leaf per command is made. */
  readonly parent: string;
  /** The file that takes the limit. */
  readonly limitFile: string;
}

let launchCounter = 0;
const INSTANCE = crypto.randomUUID().slice(0, 8);

/** One command's cgroup of one controller. */
interface Leaf {
  readonly kind: "pids" | "memory";
  readonly path: string;
}

/** Every cgroup made by this process, removed when it exits. */
const allLeaves = new Set<string>();
let removeAtExit = false;
function trackLeaves(): void {
  if (removeAtExit) return;
  removeAtExit = true;
  globalThis.addEventListener("unload", () => {
    for (const path of allLeaves) {
      try {
        Deno.removeSync(path);
      } catch {
        // Still busy or already gone.
      }
    }
  });
}

/**
 * A {@linkcode ProcessLauncher} that runs each command in a bubblewrap
 * sandbox. Make one with {@linkcode BubblewrapLauncher.create} (it checks
 * that sandboxes start here), or let `LocalSkillRuntime.create({ isolate })`
 * make it.
 *
 * Inside: the {@linkcode SYSTEM_PATHS} read-only (with
 * {@linkcode MASKED_PATHS} hidden), the running `deno` binary read-only at
 * its own path, the request's writable folders at their own paths (so paths
 * mean the same inside and outside), a fresh `/proc` and `/dev`, a private
 * `/tmp` emptied after each command (`HOME` is `/tmp/home`), everything else
 * absent. Namespaces: user (all capabilities dropped, no nested user
 * namespaces), PID, IPC, UTS, cgroup, and network unless `allowNet`. The
 * command is the leader of a new session, dies when Deno dies, and every
 * process it started ends with it: when the command ends, the PID namespace
 * ends, background jobs included. Environment: only `PATH` (the `deno`
 * folder and {@linkcode SANDBOX_PATH}), `HOME`, `LANG` and the request's
 * variables; nothing of the host's.
 *
 * Permissions: `--allow-run=bwrap` (and `bash` to signal the group without
 * unscoped `--allow-run`); for cgroup limits, `--allow-read` and
 * `--allow-write` of `/sys/fs/cgroup` and `--allow-read=/proc/self/cgroup`.
 *
 * @example Running a command in a sandbox
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   BubblewrapLauncher,
 *   checkExecuteRequest,
 *   IsolationUnavailableError,
 * } from "@skillrun/skillrun/runtime";
 *
 * let launcher: BubblewrapLauncher | undefined;
 * try {
 *   launcher = await BubblewrapLauncher.create();
 * } catch (error) {
 *   // No silent fallback: the message says what to install or enable.
 *   if (!(error instanceof IsolationUnavailableError)) throw error;
 *   console.error(error.message);
 * }
 * if (launcher) {
 *   const folder = await Deno.makeTempDir();
 *   const result = await launcher.launch({
 *     ...checkExecuteRequest({
 *       command: "echo hi > out.txt; echo $HOME; ls /root/.ssh 2>/dev/null",
 *       timeoutMs: 10_000,
 *       maxOutputBytes: 1024,
 *     }),
 *     cwd: folder,
 *     writablePaths: [folder],
 *   });
 *   assert(result.stdout === "/tmp/home\n");
 *   assert(await Deno.readTextFile(`${folder}/out.txt`) === "hi\n");
 *   await Deno.remove(folder, { recursive: true });
 * }
 * ```
 */
export class BubblewrapLauncher implements ProcessLauncher {
  /** The launcher's name. */
  readonly name = "bubblewrap";
  /** Commands start from an empty environment. */
  readonly inheritsEnvironment = false;
  readonly #bwrap: string;
  /** The `bwrap` the nested step runs inside the sandbox. */
  readonly #bwrapInside: string;
  readonly #allowNet: boolean;
  readonly #graceMs: number;
  readonly #groupSignal: GroupSignalMethod;
  readonly #baseArgs: readonly string[];
  readonly #controllers: readonly CgroupController[];
  readonly #limits: Required<IsolationLimits>;
  readonly #report: IsolationReport;
  readonly #deno: string | undefined;
  readonly #egress: SandboxEgress | undefined;
  /** The seccomp program, when there is one. */
  readonly #seccomp: Uint8Array | undefined;
  /**
   * With an egress proxy: the command's own seccomp program (the sandbox's
   * lets the bridge make Unix sockets; this one refuses them), loaded by a
   * nested bwrap step from {@linkcode COMMAND_FILTER} inside.
   */
  readonly #commandSeccomp: Uint8Array | undefined;
  /** Whether inherited descriptors are closed before the command. */
  readonly #closeDescriptors: boolean;
  /** Empty cgroups of finished commands, ready for the next ones. */
  readonly #freeLeaves: Leaf[][] = [];

  private constructor(
    bwrap: string,
    options: BubblewrapLauncherOptions,
    limits: Required<IsolationLimits>,
    probe: Probe,
    controllers: readonly CgroupController[],
    version: string,
    egress: SandboxEgress | undefined,
  ) {
    this.#bwrap = bwrap;
    this.#egress = egress;
    // With an egress proxy the host's network is never shared.
    this.#allowNet = (options.allowNet ?? false) && !egress;
    this.#graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.#groupSignal = options.groupSignal ?? "auto";
    this.#limits = limits;
    this.#controllers = controllers;
    this.#deno = denoBinary();
    const hardening = options.hardening ?? true;
    this.#closeDescriptors = hardening;
    // The egress bridge inside must make Unix sockets (to the proxy's socket)
    // for its whole life; the command must not. So with an egress the
    // sandbox's filter allows them, the bridge starts, and the command runs
    // under a nested bwrap step that adds the full filter (and forbids user
    // namespaces, which the sandbox then allows for that step only).
    this.#seccomp = hardening
      ? seccompFilter(Deno.build.arch, { refuseUnixSockets: !egress })
      : undefined;
    this.#commandSeccomp = this.#seccomp && egress
      ? seccompFilter(Deno.build.arch, { refuseUnixSockets: true })
      : undefined;
    const readOnly = SYSTEM_PATHS.filter((path) => probe.existing.has(path));
    const masked = MASKED_PATHS.filter((path) => probe.existing.has(path));
    // A bwrap outside the system folders is bound in at its own path for the
    // nested step; a bare name is looked up on the sandbox's PATH.
    this.#bwrapInside = bwrap;
    const bwrapBinding = this.#commandSeccomp && hostPath.isAbsolute(bwrap) &&
        !readOnly.some((path) => inside(bwrap, path))
      ? ["--ro-bind", bwrap, bwrap]
      : [];
    this.#baseArgs = baseArgs({
      allowNet: this.#allowNet,
      // The nested step needs a user namespace of its own; it disables them.
      disableUserns: this.#commandSeccomp === undefined,
      // Root inside maps root again in the nested step, which the kernel
      // allows only to a creator holding CAP_SETFCAP (verify_root_map); the
      // step drops every capability before the command.
      keepSetfcap: this.#commandSeccomp !== undefined && probe.uid === 0,
      readOnly,
      masked,
      maskedFolders: new Set(
        masked.filter((path) => probe.existing.has(`${path}/`)),
      ),
      deno: this.#deno,
      tmpBytes: limits.tmpBytes,
      extra: [...(egress?.bwrapArgs ?? []), ...bwrapBinding],
    });
    const cgroupOf = (kind: "pids" | "memory") =>
      controllers.some((c) => c.kind === kind);
    const root = probe.uid === 0;
    this.#report = {
      kind: "bubblewrap",
      version,
      allowNet: this.#allowNet,
      egress: egress?.report ?? null,
      namespaces: [
        "user",
        "pid",
        "ipc",
        "uts",
        "cgroup",
        ...(this.#allowNet ? [] : ["net"]),
      ],
      readOnly,
      masked,
      deno: this.#deno,
      uid: probe.uid,
      limits: {
        processes: cgroupOf("pids")
          ? { value: limits.processes, mechanism: "cgroup" }
          : root
          ? {
            value: limits.processes,
            mechanism: "none",
            note:
              "root is not limited by RLIMIT_NPROC and no writable pids cgroup was found (allow --allow-read=/proc/self/cgroup,/sys/fs/cgroup and --allow-write=/sys/fs/cgroup, or run as another user)",
          }
          : { value: limits.processes, mechanism: "rlimit" },
        fileSizeBytes: { value: limits.fileSizeBytes, mechanism: "rlimit" },
        memoryBytes: cgroupOf("memory")
          ? { value: limits.memoryBytes, mechanism: "cgroup" }
          : {
            value: limits.memoryBytes,
            mechanism: "rlimit",
            note: "RLIMIT_DATA: each process, not the command as a whole",
          },
        tmpBytes: { value: limits.tmpBytes, mechanism: "tmpfs" },
      },
      environment: {
        PATH: this.#sandboxPath(),
        HOME: SANDBOX_HOME,
        LANG: SANDBOX_LANG,
      },
      tools: probe.tools,
      descriptors: hardening ? "stdio" : "inherited",
      syscallFilter: this.#seccomp
        ? ["setuid-setgid-modes", "unix-sockets"]
        : null,
    };
  }

  /**
   * Checks that bubblewrap sandboxes start here and makes the launcher.
   *
   * @param options Network, limits, the `bwrap` program, cgroups, grace period.
   * @returns The launcher.
   * @throws {IsolationUnavailableError} Not Linux; `bwrap` missing; user
   * namespaces off or restricted; Deno refusing to run `bwrap`; a sandbox
   * that does not start. The message says what to install or enable.
   * @throws {RangeError} A limit that is not a positive integer.
   */
  static async create(
    options: BubblewrapLauncherOptions = {},
  ): Promise<BubblewrapLauncher> {
    const limits = checkLimits(options.limits ?? {});
    // A bad pattern is refused before anything is probed or started.
    if (wantsEgress(options)) EgressPolicy.create(options);
    if (Deno.build.os !== "linux") {
      throw new IsolationUnavailableError(
        `Cannot make an isolated runtime on "${Deno.build.os}": the isolated mode needs Linux and bubblewrap; use a remote sandbox runtime instead`,
        { problem: "unsupported" },
      );
    }
    const bwrap = options.bwrap ?? "bwrap";
    const version = await bwrapVersion(bwrap, options.signal);
    const probe = await probeHost(bwrap, options.signal, {
      candidates: [...SYSTEM_PATHS, ...MASKED_PATHS],
      sandboxPath: SANDBOX_PATH,
      lang: SANDBOX_LANG,
      deno: denoBinary() !== undefined,
    });
    const controllers = options.cgroups === false
      ? []
      : await findCgroups(limits);
    if (wantsEgress(options) && denoBinary() === undefined) {
      throw new IsolationUnavailableError(
        "Cannot make an isolated runtime with a network policy: the bridge inside the sandbox runs the deno binary, and its path is unknown here",
        { problem: "unsupported" },
      );
    }
    const egress = wantsEgress(options)
      ? await SandboxEgress.start(options)
      : undefined;
    try {
      const launcher = new BubblewrapLauncher(
        bwrap,
        options,
        limits,
        probe,
        controllers,
        version,
        egress,
      );
      if (egress && launcher.#commandSeccomp) {
        await Deno.writeFile(
          hostPath.join(egress.directory, COMMAND_FILTER_FILE),
          launcher.#commandSeccomp,
        );
      }
      // The real sandbox once, so that a problem shows now, not at the first command.
      const check = await launcher.launch({
        command: "true",
        cwd: "/",
        env: {},
        writablePaths: [],
        timeoutMs: checkTimeoutMs(30_000),
        maxOutputBytes: 4096,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (check.exitCode !== 0) {
        throw unavailable(check.stderr, `exit code ${check.exitCode}`);
      }
      return launcher;
    } catch (error) {
      await egress?.close();
      throw error;
    }
  }

  /** What the sandbox is and how each limit is enforced. */
  get report(): IsolationReport {
    return this.#report;
  }

  /** Whether commands may use the host's network directly. */
  get allowNet(): boolean {
    return this.#allowNet;
  }

  /**
   * Stops the egress proxy, when there is one (the runtime that made the
   * launcher calls it when closed). Idempotent.
   *
   * @returns When done.
   */
  async close(): Promise<void> {
    await this.#egress?.close();
  }

  /**
   * Runs the command in a new sandbox. See {@linkcode runProcessGroup} for
   * the timeout and abort rules; in addition, when the command ends every
   * process it started ends too.
   *
   * @param request The resolved request; `writablePaths` (default: the
   * working directory) are mounted read-write at their own paths.
   * @returns The result; a failing command is not an error.
   * @throws {RangeError} A writable path that is not absolute, or is `/`,
   * `/tmp`, `/proc`, `/dev`, `/sys` or a parent of a system folder; or a
   * working directory the sandbox cannot see. (A writable path inside a
   * system folder stays read-only.)
   * @throws {RuntimePermissionError} Deno refuses to run `bwrap`.
   */
  async launch(request: LaunchRequest): Promise<ExecuteResult> {
    const writable = checkWritable(request.writablePaths ?? [request.cwd]);
    const cwd = hostPath.resolve(request.cwd);
    if (!visible(cwd, writable, this.#report.readOnly)) {
      throw new RangeError(
        `Cannot run a command in "${cwd}": the isolated shell sees only the system folders and ${
          writable.length
            ? writable.map((p) => `"${p}"`).join(", ")
            : "no folder of its own"
        }`,
      );
    }
    const leaves = await this.#takeLeaves();
    let reusable = false;
    try {
      const args = [...this.#baseArgs];
      for (const path of writable) args.push("--bind", path, path);
      for (const leaf of leaves) {
        args.push(
          "--bind",
          `${leaf.path}/cgroup.procs`,
          `${CGROUP_MOUNT}/${leaf.kind}.procs`,
        );
      }
      args.push("--remount-ro", "/", "--chdir", cwd, "--");
      // The seccomp program reaches bwrap on a descriptor: standard input
      // when the command has none of its own (bwrap reads it to the end and
      // closes it; the prelude gives the command /dev/null instead), else a
      // pipe that a bash in front of bwrap opens (one more process).
      const seccomp = this.#seccomp;
      const viaStdin = seccomp !== undefined && !request.stdin;
      // The limits are set on the command's own line, so that it runs in the
      // same shell (no second exec) and its line numbers stay its own.
      args.push(
        "bash",
        "-c",
        `${
          prelude(this.#limits, leaves.map((l) => l.kind), this.#report, {
            closeDescriptors: this.#closeDescriptors,
            stdinToNull: viaStdin,
          })
        } ${this.#egress?.prelude(this.#deno!) ?? ""} ${
          this.#commandSeccomp
            ? nestedCommand(this.#bwrapInside, cwd, request.command)
            : request.command
        }`,
      );
      let program = this.#bwrap;
      let streams = streamsOf(request);
      if (seccomp && viaStdin) {
        args.unshift("--seccomp", "0");
        streams = { ...streams, stdin: bytesStream(seccomp) };
      } else if (seccomp) {
        args.unshift(this.#bwrap, "--seccomp", "9");
        args.unshift(
          "-c",
          'exec 9< <(printf "$1"); shift; exec "$@"',
          "skillrun-seccomp",
          printfEscaped(seccomp),
        );
        program = "bash";
      }
      const result = await runCheckedGroup({
        program,
        args,
        cwd,
        env: this.#environment(request.env),
        clearEnv: true,
        timeoutMs: request.timeoutMs,
        maxOutputBytes: request.maxOutputBytes,
        graceMs: this.#graceMs,
        groupSignal: this.#groupSignal,
        ...(request.signal ? { signal: request.signal } : {}),
        ...streams,
      });
      // A command that ended by itself took its PID namespace with it: its
      // cgroups are empty and serve the next command. After a kill the
      // kernel may still be reaping: those are removed (waiting) instead.
      reusable = !result.timedOut && !result.aborted;
      return result;
    } finally {
      if (leaves.length > 0) {
        if (reusable) this.#freeLeaves.push(leaves);
        else await Promise.all(leaves.map((leaf) => removeLeaf(leaf.path)));
      }
    }
  }

  #sandboxPath(): string {
    return this.#deno
      ? `${hostPath.dirname(this.#deno)}:${SANDBOX_PATH}`
      : SANDBOX_PATH;
  }

  #environment(
    env: Readonly<Record<string, string>>,
  ): Record<string, string> {
    return {
      PATH: this.#sandboxPath(),
      HOME: SANDBOX_HOME,
      LANG: SANDBOX_LANG,
      ...env,
      ...this.#egress?.environment,
    };
  }

  async #takeLeaves(): Promise<Leaf[]> {
    if (this.#controllers.length === 0) return [];
    const free = this.#freeLeaves.pop();
    if (free) return free;
    const leaves = await this.#makeLeaves();
    trackLeaves();
    for (const leaf of leaves) allLeaves.add(leaf.path);
    return leaves;
  }

  async #makeLeaves(): Promise<Leaf[]> {
    const leaves: Leaf[] = [];
    try {
      // Unique across processes and across workers of one process (tests
      // run in parallel share a pid).
      const name = `skillrun-${Deno.pid}-${INSTANCE}-${++launchCounter}`;
      for (const controller of this.#controllers) {
        const path = `${controller.parent}/${name}`;
        await Deno.mkdir(path);
        leaves.push({ kind: controller.kind, path });
        await Deno.writeTextFile(
          `${path}/${controller.limitFile}`,
          String(
            controller.kind === "pids"
              ? this.#limits.processes
              : this.#limits.memoryBytes,
          ),
        );
      }
      return leaves;
    } catch (error) {
      await Promise.all(leaves.map((leaf) => removeLeaf(leaf.path)));
      throw new Error(
        `Cannot limit the command: the cgroup cannot be made: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  }
}

function checkLimits(limits: IsolationLimits): Required<IsolationLimits> {
  const value = (
    name: keyof IsolationLimits,
    fallback: number,
    min: number,
  ) => {
    const v = limits[name] ?? fallback;
    if (!Number.isSafeInteger(v) || v < min) {
      throw new RangeError(
        `Cannot use the limit ${name} "${v}": it must be an integer of at least ${min}`,
      );
    }
    return v;
  };
  return {
    processes: value("processes", DEFAULT_MAX_PROCESSES, 8),
    fileSizeBytes: value("fileSizeBytes", DEFAULT_MAX_FILE_SIZE_BYTES, 1024),
    memoryBytes: value("memoryBytes", DEFAULT_MAX_MEMORY_BYTES, 16 * 1024 ** 2),
    tmpBytes: value("tmpBytes", DEFAULT_TMP_SIZE_BYTES, 1024 ** 2),
  };
}

function baseArgs(options: {
  allowNet: boolean;
  readOnly: readonly string[];
  masked: readonly string[];
  maskedFolders: ReadonlySet<string>;
  deno: string | undefined;
  tmpBytes: number;
  extra: readonly string[];
  disableUserns: boolean;
  keepSetfcap: boolean;
}): string[] {
  const args = [
    "--unshare-all",
    "--unshare-user",
    ...(options.allowNet ? ["--share-net"] : []),
    ...(options.disableUserns ? ["--disable-userns"] : []),
    "--cap-drop",
    "ALL",
    ...(options.keepSetfcap ? ["--cap-add", "CAP_SETFCAP"] : []),
    "--die-with-parent",
    "--new-session",
    "--hostname",
    "sandbox",
  ];
  for (const path of options.readOnly) args.push("--ro-bind", path, path);
  for (const path of options.masked) {
    if (options.maskedFolders.has(path)) {
      args.push("--tmpfs", path, "--remount-ro", path);
    } else args.push("--ro-bind", "/dev/null", path);
  }
  if (options.allowNet) {
    // Where /etc/resolv.conf often points.
    args.push(
      "--ro-bind-try",
      "/run/systemd/resolve",
      "/run/systemd/resolve",
    );
  }
  if (
    options.deno &&
    !options.readOnly.some((path) => inside(options.deno!, path))
  ) {
    args.push("--ro-bind", options.deno, options.deno);
  }
  args.push(...options.extra);
  args.push(
    "--proc",
    "/proc",
    // PID 1 inside is bwrap: its command line names host paths (the
    // workspace, the cgroups, this process's id); reading it is refused.
    "--ro-bind",
    "/dev/null",
    "/proc/1/cmdline",
    "--dev",
    "/dev",
    "--size",
    String(options.tmpBytes),
    "--tmpfs",
    "/tmp",
    "--dir",
    SANDBOX_HOME,
  );
  return args;
}

/**
 * What runs first inside, on one line before the command: enter the cgroups
 * and set the limits (hard and soft, so the command cannot raise them). A
 * command that does not parse stops the whole line, so it never runs
 * without its limits.
 */
function prelude(
  limits: Required<IsolationLimits>,
  cgroups: readonly string[],
  report: IsolationReport,
  options: { closeDescriptors: boolean; stdinToNull: boolean },
): string {
  const lines: string[] = [];
  if (options.closeDescriptors) {
    // Nothing but the standard streams: a descriptor this process inherited
    // without close-on-exec (a host file, a socket) must not reach the
    // command. (bwrap's own init, PID 1 inside, keeps none of them.)
    lines.push(
      "for __skillrun_fd in /proc/self/fd/*; do __skillrun_fd=${__skillrun_fd##*/}; case $__skillrun_fd in 0|1|2) ;; *) exec {__skillrun_fd}>&- ;; esac; done; unset __skillrun_fd",
    );
  }
  if (options.stdinToNull) lines.push("exec 0</dev/null");
  for (const kind of cgroups) {
    lines.push(
      `printf '%s\\n' "$$" > ${CGROUP_MOUNT}/${kind}.procs || { echo "skillrun: cannot enter the ${kind} cgroup" >&2; exit 125; }`,
    );
  }
  const ulimits = [`-f ${Math.floor(limits.fileSizeBytes / 1024)}`];
  if (report.limits.processes.mechanism === "rlimit") {
    ulimits.push(`-u ${limits.processes}`);
  }
  if (report.limits.memoryBytes.mechanism === "rlimit") {
    ulimits.push(`-d ${Math.floor(limits.memoryBytes / 1024)}`);
  }
  lines.push(
    `ulimit ${
      ulimits.join(" ")
    } || { echo "skillrun: cannot set the limits" >&2; exit 125; }`,
  );
  return lines.map((line) => `${line};`).join(" ");
}

/** The command's seccomp program in the egress folder (see {@linkcode nestedCommand}). */
const COMMAND_FILTER_FILE = "command.bpf";

/** Where the command's seccomp program is inside the sandbox. */
const COMMAND_FILTER = `${INSIDE_DIR}/${COMMAND_FILTER_FILE}`;

/**
 * The command run by a nested bwrap step that loads the command's seccomp
 * program (refusing Unix sockets) on top of the sandbox's: what the
 * sandbox's own shell started before (the egress bridge) keeps its Unix
 * sockets, the command's whole process tree never gets one. The step adds
 * a user namespace (with no capability, further ones disabled) and a mount
 * namespace that binds the sandbox's root as it is, devices included
 * (`--dev-bind`: a plain `--bind` would make `/dev/null` unusable;
 * read-only parts stay read-only, `nodev` ones `nodev`); it replaces the sandbox's shell, so exit codes, signals and
 * the standard streams pass as before.
 */
function nestedCommand(bwrap: string, cwd: string, command: string): string {
  return `exec ${
    shellQuote(bwrap)
  } --unshare-user --disable-userns --cap-drop ALL --die-with-parent --dev-bind / / --chdir ${
    shellQuote(cwd)
  } --seccomp 9 -- bash -c ${shellQuote(command)} 9<${COMMAND_FILTER}`;
}

/** A stream of one chunk. */
function bytesStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes.slice());
      controller.close();
    },
  });
}

/** Bytes as a `printf` format that writes them (`\xHH` each). */
function printfEscaped(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += `\\x${byte.toString(16).padStart(2, "0")}`;
  return text;
}

function checkWritable(paths: readonly string[]): string[] {
  const checked: string[] = [];
  for (const path of paths) {
    if (typeof path !== "string" || !hostPath.isAbsolute(path)) {
      throw new RangeError(
        `Cannot make "${path}" writable in the sandbox: it must be an absolute path`,
      );
    }
    const normal = hostPath.resolve(path);
    if (FORBIDDEN_WRITABLE.has(normal)) {
      throw new RangeError(
        `Cannot make "${normal}" writable in the sandbox: it would expose the host`,
      );
    }
    // Inside a system folder: it stays read-only (visible, not writable).
    if (SYSTEM_PATHS.some((system) => inside(normal, system))) continue;
    if (SYSTEM_PATHS.some((system) => inside(system, normal))) {
      throw new RangeError(
        `Cannot make "${normal}" writable in the sandbox: it overlaps the system folders mounted read-only`,
      );
    }
    if (!checked.includes(normal)) checked.push(normal);
  }
  // Parents first, so that a child's bind is not hidden by its parent's.
  return checked.sort((a, b) => a.length - b.length);
}

function visible(
  cwd: string,
  writable: readonly string[],
  readOnly: readonly string[],
): boolean {
  return cwd === "/" ||
    [...writable, ...readOnly].some((path) => inside(cwd, path));
}

function inside(path: string, folder: string): boolean {
  return path === folder ||
    path.startsWith(folder.endsWith("/") ? folder : `${folder}/`);
}

function denoBinary(): string | undefined {
  try {
    return Deno.execPath();
  } catch {
    return undefined;
  }
}

async function removeLeaf(path: string): Promise<void> {
  // The PID namespace is gone once bwrap has exited, but the kernel may
  // still be reaping its last processes for a moment.
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await Deno.remove(path);
      allLeaves.delete(path);
      return;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        allLeaves.delete(path);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/**
 * The writable pids and memory cgroups of this process (v1, or v2 with the
 * controllers enabled below our cgroup), each checked by making and removing
 * a probe leaf. Empty when Deno or the system refuses.
 */
async function findCgroups(
  limits: Required<IsolationLimits>,
): Promise<CgroupController[]> {
  const granted = (name: "read" | "write", path: string) =>
    Deno.permissions.querySync({ name, path }).state === "granted";
  if (
    !granted("read", "/proc/self/cgroup") ||
    !granted("read", "/sys/fs/cgroup") ||
    !granted("write", "/sys/fs/cgroup")
  ) {
    return [];
  }
  let own: string;
  try {
    own = await Deno.readTextFile("/proc/self/cgroup");
  } catch {
    return [];
  }
  const found: CgroupController[] = [];
  const candidates: CgroupController[] = [];
  for (const line of own.split("\n")) {
    const [, controllers, path] = line.split(":");
    if (controllers === undefined || path === undefined) continue;
    const names = controllers.split(",");
    if (names.includes("pids")) {
      candidates.push({
        kind: "pids",
        parent: `/sys/fs/cgroup/pids${path === "/" ? "" : path}`,
        limitFile: "pids.max",
      });
    }
    if (names.includes("memory")) {
      candidates.push({
        kind: "memory",
        parent: `/sys/fs/cgroup/memory${path === "/" ? "" : path}`,
        limitFile: "memory.limit_in_bytes",
      });
    }
    if (controllers === "" && line.startsWith("0::")) {
      const dir = `/sys/fs/cgroup${path === "/" ? "" : path}`;
      let enabled: string[] = [];
      try {
        enabled = (await Deno.readTextFile(`${dir}/cgroup.subtree_control`))
          .trim().split(/\s+/);
      } catch {
        enabled = [];
      }
      if (enabled.includes("pids")) {
        candidates.push({ kind: "pids", parent: dir, limitFile: "pids.max" });
      }
      if (enabled.includes("memory")) {
        candidates.push({
          kind: "memory",
          parent: dir,
          limitFile: "memory.max",
        });
      }
    }
  }
  for (const candidate of candidates) {
    if (found.some((c) => c.kind === candidate.kind)) continue;
    const probe = `${candidate.parent}/skillrun-probe-${Deno.pid}-${INSTANCE}`;
    try {
      await Deno.mkdir(probe);
      try {
        await Deno.writeTextFile(
          `${probe}/${candidate.limitFile}`,
          String(
            candidate.kind === "pids" ? limits.processes : limits.memoryBytes,
          ),
        );
        found.push(candidate);
      } finally {
        await removeLeaf(probe);
      }
    } catch {
      // Not writable here: the rlimit (or nothing) stands in.
    }
  }
  return found;
}
