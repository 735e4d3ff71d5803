/**
 * In-process A/B of the idle cost of issue 18: the `bash` tool running
 * `true` with nothing listening, this branch against the tools at `48d2201`
 * (extracted into `bench/.data/` by `deno task bench observe-idle` first),
 * sides interleaved over 40 rounds.
 *
 * `deno run -A bench/observe_idle_ab.ts`
 *
 * @module
 */
import { buildSkillTools as ours } from "../tools/builder.ts";
// Not a static import: the folder exists only after the bench extracted it.
const baseUrl = new URL(
  "./.data/observe_base_48d2201/tools/builder.ts",
  import.meta.url,
).href;
const { buildSkillTools: base } = await import(baseUrl) as {
  buildSkillTools: typeof ours;
};
const a = (await ours({ tools: ["bash"] })).tool("bash")!;
const b = (await base({ tools: ["bash"] })).tool("bash")!;
const sides: [string, () => Promise<unknown>][] = [
  ["ours", () => a.execute({ command: "true" })],
  ["base", () => b.execute({ command: "true" })],
];
const times: Record<string, number[]> = {};
for (let round = 0; round < 40; round++) {
  for (const [name, fn] of round % 2 ? sides : [...sides].reverse()) {
    const t = performance.now();
    for (let i = 0; i < 5; i++) await fn();
    (times[name] ??= []).push((performance.now() - t) / 5);
  }
}
for (const [name, list] of Object.entries(times)) {
  list.sort((x, y) => x - y);
  console.log(name, list[list.length >> 1]!.toFixed(3));
}
