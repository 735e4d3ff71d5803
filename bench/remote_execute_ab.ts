/**
 * `execute("true")` on each remote kind's test server (in process), for a
 * before/after comparison of two trees in one run: the same file is copied
 * into the other tree and both are run in turn (see bench/README.md, issue
 * 28). Prints one JSON line: the median and p90 in ms per kind.
 *
 * Run: `deno run -A bench/remote_execute_ab.ts [iterations]`.
 *
 * @module
 */
import { startTestServer } from "../tests/helpers/opensandbox.ts";
import { startAioTestServer } from "../tests/helpers/aio.ts";
import { startE2BTestServer } from "../tests/helpers/e2b.ts";
import { startVercelTestServer } from "../tests/helpers/vercel.ts";
import type { SkillRuntime } from "../runtimes/types.ts";

const iterations = Number(Deno.args[0] ?? 200);

async function measure(runtime: SkillRuntime): Promise<[number, number]> {
  for (let i = 0; i < 20; i++) await runtime.execute({ command: "true" });
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const started = performance.now();
    const result = await runtime.execute({ command: "true" });
    times.push(performance.now() - started);
    if (result.exitCode !== 0) throw new Error("true failed");
  }
  times.sort((a, b) => a - b);
  return [
    times[Math.floor(times.length / 2)]!,
    times[Math.floor(times.length * 0.9)]!,
  ];
}

const out: Record<string, [number, number]> = {};
for (
  const [name, start] of [
    ["opensandbox", startTestServer],
    ["aio", startAioTestServer],
    ["e2b", startE2BTestServer],
    ["vercel", startVercelTestServer],
  ] as const
) {
  await using server = await (start as () => Promise<
    { runtime(): SkillRuntime } & AsyncDisposable
  >)();
  out[name] = await measure(server.runtime());
}
console.log(JSON.stringify(out));
