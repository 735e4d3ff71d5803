/**
 * `deno task test`: runs `deno test` with the flags it is given (and any file
 * arguments), then closes with one line saying how many tests were skipped
 * because third-party data is not beside the clone (`../shared/`) and what
 * they need. The tests record such skips through `tests/helpers/shared_data.ts`
 * in a file named by `SKILLRUN_SKIP_LOG`, which works across the workers of
 * `--parallel`. With `CI=true` nothing is skipped: a missing `../shared` fails.
 *
 * ```sh
 * npx -y deno@2.9.6 run --allow-run --allow-env --allow-read --allow-write scripts/test.ts --allow-all --doc
 * ```
 *
 * @module
 */
import { SKIP_LOG_ENV } from "../tests/helpers/shared_data.ts";

interface Skip {
  readonly name: string;
  readonly needs: readonly string[];
}

/** The closing line for the recorded skips (empty when none). */
export function closingLine(skips: readonly Skip[]): string {
  if (skips.length === 0) return "";
  const byNeed = new Map<string, number>();
  for (const skip of skips) {
    for (const need of skip.needs) {
      const top = need.split("/").slice(0, 2).join("/");
      byNeed.set(top, (byNeed.get(top) ?? 0) + 1);
    }
  }
  const needs = [...byNeed].sort(([a], [b]) => a < b ? -1 : 1)
    .map(([need, count]) => `${count} need ../shared/${need}`).join(", ");
  return `skipped ${skips.length} test${
    skips.length === 1 ? "" : "s"
  }: ../shared (third-party data beside the clone) is absent (${needs}); each says what it needs above; with CI=true its absence is a failure`;
}

/**
 * How many test modules `--parallel` runs at once: `DENO_JOBS` when set, else
 * twice the CPUs and at least 4. The modules wait on processes, servers and
 * timers much of the time; with Deno's default (one per CPU) a 2-CPU machine
 * ran `deno task test` in 11m01s, with 4 in 3m33s (CI simulations of stop 35
 * and stop 37, the same suite).
 */
export function testJobs(env: string | undefined, cpus: number): string {
  if (env !== undefined && /^[1-9][0-9]*$/.test(env)) return env;
  return String(Math.max(4, 2 * cpus));
}

if (import.meta.main) {
  const log = await Deno.makeTempFile({ prefix: "skillrun-skips-" });
  let code = 1;
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["test", ...Deno.args],
      env: {
        [SKIP_LOG_ENV]: log,
        DENO_JOBS: testJobs(
          Deno.env.get("DENO_JOBS"),
          navigator.hardwareConcurrency,
        ),
      },
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      Deno.addSignalListener(signal, () => {
        try {
          child.kill(signal);
        } catch {
          // already gone
        }
      });
    }
    code = (await child.status).code;
    const skips = (await Deno.readTextFile(log)).split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Skip);
    const line = closingLine(skips);
    if (line !== "") console.log(line);
  } finally {
    await Deno.remove(log).catch(() => {});
  }
  Deno.exit(code);
}
