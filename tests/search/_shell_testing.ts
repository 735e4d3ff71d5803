/**
 * Test helpers of the shell engine: a {@linkcode SearchShell} that runs a real
 * local `bash`, optionally with a `PATH` that hides some tools (`rg`).
 *
 * @module
 */
import type { SearchShell, SearchShellResult } from "../../search/shell.ts";

/** A folder of links to every command on `PATH` except the hidden ones. */
export async function pathWithout(hidden: readonly string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-path-" });
  const seen = new Set<string>();
  for (const folder of (Deno.env.get("PATH") ?? "").split(":")) {
    if (folder === "") continue;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(folder)];
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (hidden.includes(entry.name) || seen.has(entry.name)) continue;
      seen.add(entry.name);
      try {
        await Deno.symlink(`${folder}/${entry.name}`, `${dir}/${entry.name}`);
      } catch {
        // A name that cannot be linked is left out.
      }
    }
  }
  return dir;
}

/** A local bash as a search shell; counts what it sent back. */
export interface BashShell extends SearchShell {
  /** Commands run. */
  readonly commands: string[];
  /** Bytes of stdout sent back. */
  stdoutBytes: number;
}

/**
 * A {@linkcode SearchShell} over a real `bash -c`, with its own timeout,
 * abort and output cap (the middle of stdout dropped past it, as a runtime
 * does).
 *
 * @param options The `PATH` the commands see.
 * @returns The shell.
 */
export function bashShell(options: { path?: string } = {}): BashShell {
  const shell: BashShell = {
    commands: [],
    stdoutBytes: 0,
    async exec(command, execOptions): Promise<SearchShellResult> {
      shell.commands.push(command);
      const env: Record<string, string> = {};
      if (options.path !== undefined) env.PATH = options.path;
      const child = new Deno.Command("/bin/bash", {
        args: ["-c", command],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        env,
        // Its own process group, killed whole (a `sleep` holding the pipes too).
        detached: true,
      }).spawn();
      let timedOut = false;
      let aborted = false;
      const killGroup = (): void => {
        try {
          Deno.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, execOptions.timeoutMs);
      const onAbort = (): void => {
        aborted = true;
        killGroup();
      };
      execOptions.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const output = await child.output();
        const max = execOptions.maxOutputBytes ?? Infinity;
        let stdout = output.stdout;
        const stdoutTruncated = stdout.length > max;
        if (stdoutTruncated) {
          const half = Math.floor(max / 2);
          stdout = new Uint8Array([
            ...stdout.subarray(0, half),
            ...stdout.subarray(stdout.length - half),
          ]);
        }
        shell.stdoutBytes += stdout.length;
        const decoder = new TextDecoder();
        return {
          stdout: decoder.decode(stdout),
          stderr: decoder.decode(output.stderr),
          exitCode: timedOut || aborted ? -1 : output.code,
          timedOut,
          aborted,
          stdoutTruncated,
        };
      } finally {
        clearTimeout(timer);
        execOptions.signal?.removeEventListener("abort", onAbort);
      }
    },
  };
  return shell;
}
