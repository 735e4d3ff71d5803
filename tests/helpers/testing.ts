/**
 * Helpers for the tests: running a Deno script under chosen permission flags
 * in a real subprocess, and finding the live members of a process group.
 *
 * @module
 */
import { hostPath } from "../../_internal/std.ts";

/** The project's `deno.json`, so that a subprocess resolves `@std/...`. */
export const PROJECT_CONFIG: string = hostPath.fromFileUrl(
  new URL("../../deno.json", import.meta.url),
);

/** What a finished `deno run` printed and returned. */
export interface DenoRunResult {
  /** The exit code. */
  readonly code: number;
  /** Standard output, decoded. */
  readonly stdout: string;
  /** Standard error, decoded. */
  readonly stderr: string;
}

/**
 * Runs `deno run --no-prompt --config=<deno.json> <flags> <script> <args>`
 * with stdin closed, and waits for it.
 *
 * @param script The script's path.
 * @param flags Permission flags (none for no permission at all).
 * @param args Arguments for the script.
 * @returns Its exit code and output.
 */
export async function runDenoScript(
  script: string,
  flags: readonly string[],
  args: readonly string[] = [],
): Promise<DenoRunResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      `--config=${PROJECT_CONFIG}`,
      ...flags,
      script,
      ...args,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/**
 * The live (not zombie) processes whose process group is `pgid` (Linux).
 *
 * @param pgid The process group.
 * @returns Their pids.
 */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[2]) === pgid) {
      members.push(Number(entry.name));
    }
  }
  return members;
}

let denoDirOnce: Promise<string> | undefined;

/**
 * This Deno's cache folder (`deno info --json`'s `denoDir`), for a child
 * `deno` whose `HOME` is changed: by default its cache follows `HOME`, and
 * a cold one downloads every npm package again (tens of seconds).
 *
 * @returns The folder's path (asked once per process).
 */
export function hostDenoDir(): Promise<string> {
  denoDirOnce ??= (async () => {
    const fromEnv = Deno.env.get("DENO_DIR");
    if (fromEnv) return fromEnv;
    const info = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    return JSON.parse(new TextDecoder().decode(info.stdout)).denoDir as string;
  })();
  return denoDirOnce;
}
