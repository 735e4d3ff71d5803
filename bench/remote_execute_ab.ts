/**
 * On each remote kind's test server (in process): `execute("true")`, a
 * background command started and read to its end (`startBackground`, polls
 * until it exits: its output arrives through `onStdout`), and a write of a
 * 4 KiB file (`fs.writeText`), for a before/after comparison of two trees in
 * one run: the same file is copied into the other tree and both are run in
 * turn (see bench/README.md, issue 28). Prints one JSON line: the median and
 * p90 in ms per kind and operation.
 *
 * Run: `deno run -A bench/remote_execute_ab.ts [iterations] [operations]
 * [kinds]` (operations: a comma list of `execute`, `background`, `write`;
 * kinds: a comma list of `opensandbox`, `aio`, `e2b`, `vercel`; default all).
 *
 * @module
 */
import { startTestServer } from "../tests/helpers/opensandbox.ts";
import { startAioTestServer } from "../tests/helpers/aio.ts";
import { startE2BTestServer } from "../tests/helpers/e2b.ts";
import { startVercelTestServer } from "../tests/helpers/vercel.ts";
import type { SkillRuntime } from "../runtimes/types.ts";

const iterations = Number(Deno.args[0] ?? 200);
const operations = new Set(
  (Deno.args[1] ?? "execute,background,write").split(","),
);
const kinds = new Set(
  (Deno.args[2] ?? "opensandbox,aio,e2b,vercel").split(","),
);

async function timed(
  name: string,
  call: () => Promise<void>,
): Promise<[number, number] | null> {
  if (!operations.has(name)) return null;
  for (let i = 0; i < 20; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return [
    times[Math.floor(times.length / 2)]!,
    times[Math.floor(times.length * 0.9)]!,
  ];
}

const TEXT = "x".repeat(4095) + "\n";

function measure(
  runtime: SkillRuntime,
): Promise<Record<string, [number, number] | null>> {
  return (async () => ({
    execute: await timed("execute", async () => {
      const result = await runtime.execute({ command: "true" });
      if (result.exitCode !== 0) throw new Error("true failed");
    }),
    background: await timed("background", async () => {
      let out = "";
      try {
        await backgroundOnce(runtime, (text) => out += text);
      } catch {
        // A failure is counted, not timed away: see `failures` below.
        failures[runtime.name] = (failures[runtime.name] ?? 0) + 1;
        return;
      }
      if (!out.includes("started")) throw new Error(`read ${out}`);
    }),
    write: await timed(
      "write",
      () => runtime.fs.writeText("bench.txt", TEXT),
    ),
  }))();
}

/** Failed background runs per kind (the OpenSandbox server's logs race). */
const failures: Record<string, number> = {};

async function backgroundOnce(
  runtime: SkillRuntime,
  sink: (text: string) => void,
): Promise<void> {
  const process = await runtime.startBackground!({
    command: "echo started; sleep 0.05",
    onStdout: (chunk) => sink(new TextDecoder().decode(chunk)),
  });
  if (!process) throw new Error("no background facility");
  while ((await process.poll()).running) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const out: Record<string, Record<string, [number, number] | null>> = {};
for (
  const [name, start] of [
    ["opensandbox", startTestServer],
    ["aio", startAioTestServer],
    ["e2b", startE2BTestServer],
    ["vercel", startVercelTestServer],
  ] as const
) {
  if (!kinds.has(name)) continue;
  await using server = await (start as () => Promise<
    { runtime(): SkillRuntime } & AsyncDisposable
  >)();
  out[name] = await measure(server.runtime());
}
console.log(JSON.stringify({ ...out, failures }));
