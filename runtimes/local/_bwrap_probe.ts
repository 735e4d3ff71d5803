/**
 * The host probe of the isolated launcher: `bwrap --version`, one minimal
 * sandbox that learns whether namespaces work, the user id, which system
 * folders exist and which tools are on the sandbox's `PATH`, and the error
 * that says what to install or enable when the isolated mode cannot work.
 *
 * @module
 */
import { RuntimePermissionError } from "../errors.ts";

/** Why an isolated runtime cannot be made. */
export type IsolationProblem =
  | "unsupported"
  | "missing"
  | "namespaces"
  | "permission"
  | "failed";

/**
 * The isolated mode cannot work here: not Linux, `bwrap` missing, user
 * namespaces off, Deno refusing to run it, or a sandbox that does not start.
 * The message says what to install or enable. Nothing falls back to the
 * plain mode.
 *
 * @example Telling a missing bwrap apart
 * ```ts
 * import { assert } from "@std/assert";
 * import { IsolationUnavailableError } from "@skillrun/skillrun/runtime";
 * const error = new IsolationUnavailableError(
 *   'Cannot make an isolated runtime: "bwrap" is not installed; install bubblewrap (apt-get install bubblewrap)',
 *   { problem: "missing" },
 * );
 * assert(error.problem === "missing");
 * ```
 */
export class IsolationUnavailableError extends Error {
  /** The error's name. */
  override readonly name = "IsolationUnavailableError";
  /** What is wrong. */
  readonly problem: IsolationProblem;

  /**
   * Makes the error.
   *
   * @param message What is wrong and what to do.
   * @param options The problem and the underlying error.
   */
  constructor(
    message: string,
    options: { problem: IsolationProblem; cause?: unknown },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.problem = options.problem;
  }
}

/** What the probe learnt of the host. */
export interface Probe {
  readonly uid: number;
  readonly existing: ReadonlySet<string>;
  readonly tools: Readonly<Record<string, boolean>>;
}

/** What {@linkcode probeHost} looks for. */
export interface ProbeOptions {
  /** The paths whose existence (folder or file) is reported. */
  readonly candidates: readonly string[];
  /** The sandbox's `PATH`, searched for the optional tools. */
  readonly sandboxPath: string;
  /** The sandbox's `LANG`. */
  readonly lang: string;
  /** Whether the `deno` binary is known (it is bound in, not looked up). */
  readonly deno: boolean;
}

const RUN_HINT = "run with --allow-run=bwrap,bash";

/**
 * `bwrap --version`'s first line.
 *
 * @param bwrap The program.
 * @param signal Stops the probe.
 * @returns E.g. `bubblewrap 0.8.0`.
 * @throws {IsolationUnavailableError} `bwrap` missing, not allowed to run,
 * or failing.
 */
export async function bwrapVersion(
  bwrap: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(bwrap, {
      args: ["--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      ...(signal ? { signal } : {}),
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new IsolationUnavailableError(
        `Cannot make an isolated runtime: "${bwrap}" is not installed; install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)`,
        { problem: "missing", cause: error },
      );
    }
    if (error instanceof Deno.errors.NotCapable) {
      throw new IsolationUnavailableError(
        `Cannot make an isolated runtime: Deno denies run access to "${bwrap}"; ${RUN_HINT}`,
        {
          problem: "permission",
          cause: new RuntimePermissionError(error.message, {
            permission: "run",
            path: bwrap,
            source: "deno",
            cause: error,
          }),
        },
      );
    }
    throw new IsolationUnavailableError(
      `Cannot make an isolated runtime: "${bwrap}" cannot be run: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { problem: "failed", cause: error },
    );
  }
  const text = new TextDecoder().decode(output.stdout).trim();
  if (!output.success || !text) {
    throw new IsolationUnavailableError(
      `Cannot make an isolated runtime: "${bwrap} --version" failed: ${
        new TextDecoder().decode(output.stderr).trim() ||
        `exit code ${output.code}`
      }`,
      { problem: "failed" },
    );
  }
  return text.split("\n", 1)[0]!;
}

const OPTIONAL_TOOLS = ["bash", "rg", "deno", "python3", "git"] as const;

/**
 * Starts one minimal sandbox that sees the host read-only, to learn whether
 * namespaces work, the user id, which system folders and secrets exist (no
 * Deno read permission needed), and which tools exist.
 *
 * @param bwrap The program.
 * @param signal Stops the probe.
 * @param options The paths and the sandbox's environment.
 * @returns What exists.
 * @throws {IsolationUnavailableError} The sandbox does not start.
 */
export async function probeHost(
  bwrap: string,
  signal: AbortSignal | undefined,
  options: ProbeOptions,
): Promise<Probe> {
  const { candidates, sandboxPath, lang } = options;
  const script = [
    'echo "uid=$(id -u)"',
    `for p in ${candidates.join(" ")}; do`,
    '  if [ -d "$p" ] && [ ! -L "$p" ]; then echo "dir=$p"; elif [ -e "$p" ]; then echo "file=$p"; fi',
    "done",
    `for t in ${OPTIONAL_TOOLS.filter((t) => t !== "deno").join(" ")}; do`,
    `  PATH=${sandboxPath} command -v "$t" >/dev/null && echo "tool=$t"`,
    "done",
  ].join("\n");
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(bwrap, {
      args: [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "bash",
        "-c",
        script,
      ],
      clearEnv: true,
      env: { PATH: sandboxPath, LANG: lang },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      ...(signal ? { signal } : {}),
    }).output();
  } catch (error) {
    throw new IsolationUnavailableError(
      `Cannot make an isolated runtime: "${bwrap}" cannot be run: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { problem: "failed", cause: error },
    );
  }
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  if (!output.success) throw unavailable(stderr, `exit code ${output.code}`);
  const existing = new Set<string>();
  const tools: Record<string, boolean> = {};
  for (const tool of OPTIONAL_TOOLS) tools[tool] = false;
  let uid = -1;
  for (const line of stdout.split("\n")) {
    const [key, value] = [
      line.slice(0, line.indexOf("=")),
      line.slice(line.indexOf("=") + 1),
    ];
    if (key === "uid") uid = Number(value);
    if (key === "dir") existing.add(value).add(`${value}/`);
    if (key === "file") existing.add(value);
    if (key === "tool") tools[value] = true;
  }
  tools.deno = options.deno;
  return { uid, existing, tools };
}

/**
 * The error of a sandbox that did not start, from what bwrap said: user
 * namespaces off (with what to enable), or another failure.
 *
 * @param stderr What bwrap wrote.
 * @param fallback What to say when it wrote nothing.
 * @returns The error to throw.
 */
export function unavailable(
  stderr: string,
  fallback: string,
): IsolationUnavailableError {
  const said = stderr.trim().split("\n").slice(-3).join("; ") || fallback;
  if (
    /namespace|uid map|setting up uid|Operation not permitted|Permission denied|No permission/i
      .test(stderr)
  ) {
    return new IsolationUnavailableError(
      `Cannot make an isolated runtime: bubblewrap cannot create user namespaces (${said}); enable them: sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on older Debian kernels, or kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04 without a bwrap AppArmor profile); in a container, allow unshare (e.g. Docker --security-opt seccomp=unconfined)`,
      { problem: "namespaces" },
    );
  }
  return new IsolationUnavailableError(
    `Cannot make an isolated runtime: the sandbox does not start: ${said}`,
    { problem: "failed" },
  );
}
