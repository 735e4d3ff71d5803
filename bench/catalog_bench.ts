/**
 * Many skills (issue 32): the catalog budget and `skill_search`.
 *
 * - `deno run -A bench/catalog_bench.ts --report` prints, side by side, the
 *   characters (and an estimate of tokens, characters / 4) of every tool
 *   definition `buildSkillTools` hands to the model for 10, 100, 1,000 and
 *   9,000 generated skills, before the budget (the whole catalog with its
 *   enum, descriptions shortened to the old 16,000-character catalog budget)
 *   and after it (default 8,000); then `skill_search`'s median and p99
 *   latency over 9,000 skills, and the index's build time and heap.
 * - The harness case `catalog-index-9000` (`deno task bench catalog`): loading
 *   9,000 skill folders and building their search index, against loading
 *   alone (peak RSS per side).
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { hostPath } from "../_internal/std.ts";
import { loadSkills } from "../skill/load.ts";
import { SkillIndex } from "../skill/skill_index.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { buildSkillTools } from "../tools/builder.ts";
import type { Tool } from "../tools/types.ts";
import {
  manySkillName,
  manySkillQuery,
  manySkills,
  writeManySkills,
} from "../tools/testdata/many_skills.ts";

const COUNT = 9_000;
const ROOT = hostPath.fromFileUrl(
  new URL("./.data/skills-9000-topics/", import.meta.url),
);
const MARKER = hostPath.join(ROOT, ".complete");

/** Writes the 9,000 generated skills once; later runs reuse them. */
async function setup(): Promise<void> {
  try {
    if ((await Deno.readTextFile(MARKER)).trim() === String(COUNT)) return;
  } catch {
    // Not generated yet.
  }
  await Deno.remove(ROOT, { recursive: true }).catch(() => {});
  await writeManySkills(ROOT, COUNT);
  await Deno.writeTextFile(MARKER, String(COUNT));
}

/** The bench cases of the catalog budget. */
export const cases: BenchCase[] = [
  {
    id: "catalog-index-9000",
    title: "load 9,000 skills and build their skill_search index",
    module: import.meta.url,
    setup,
    iterations: 3,
    rounds: 2,
    ours: {
      label: "loadSkills + new SkillIndex",
      fn: async () => {
        const { skills } = await loadSkills(ROOT);
        const index = new SkillIndex(skills);
        if (index.size !== COUNT) throw new Error(`Indexed ${index.size}`);
      },
    },
    baseline: {
      label: "loadSkills alone",
      fn: async () => {
        const { skills } = await loadSkills(ROOT);
        if (skills.length !== COUNT) throw new Error(`Got ${skills.length}`);
      },
    },
  },
];

function definitionChars(tools: readonly Tool[]): number {
  return JSON.stringify(tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema,
  }))).length;
}

function percentile(sorted: readonly number[], share: number): number {
  return sorted[
    Math.min(sorted.length - 1, Math.floor(sorted.length * share))
  ]!;
}

async function report(): Promise<void> {
  const load = Deno.loadavg().map((l) => l.toFixed(2)).join(" ");
  console.log(`Load average at start: ${load}`);
  console.log(
    "| skills | before: chars (≈tokens) | after: chars (≈tokens) | skill tool after | listed | ratio |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|");
  await using runtime = new LocalSkillRuntime();
  for (const count of [10, 100, 1_000, 9_000]) {
    const skills = manySkills(count);
    await using before = await buildSkillTools({
      skills,
      runtime,
      catalogBudget: Number.MAX_SAFE_INTEGER,
      catalog: {
        maxChars: 16_000,
        maxDescriptionChars: Number.MAX_SAFE_INTEGER,
      },
    });
    await using after = await buildSkillTools({ skills, runtime });
    const b = definitionChars(before.tools);
    const a = definitionChars(after.tools);
    const skill = after.tool("skill")!;
    const listed = skill.description.match(/<name>/g)?.length ?? 0;
    const n = (v: number) => v.toLocaleString("en-US");
    console.log(
      `| ${n(count)} | ${n(b)} (${n(Math.round(b / 4))}) | ${n(a)} (${
        n(Math.round(a / 4))
      }) | ${
        n(skill.description.length + JSON.stringify(skill.inputSchema).length)
      } | ${n(listed)} | ${(b / a).toFixed(1)}x |`,
    );
  }

  // The index over 9,000 skills: build time and heap, then search latency.
  const skills = manySkills(COUNT);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = Deno.memoryUsage().heapUsed;
  const started = performance.now();
  const index = new SkillIndex(skills);
  const buildMs = performance.now() - started;
  gc?.();
  const heapMiB = (Deno.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  console.log(
    `\nSkillIndex over ${n0(COUNT)} skills: built in ${
      buildMs.toFixed(0)
    } ms, heap +${heapMiB.toFixed(1)} MiB${
      gc ? "" : " (without --v8-flags=--expose-gc: rough)"
    }`,
  );
  const times: number[] = [];
  let found = 0;
  const queries = 900;
  for (let round = 0; round < 2; round++) {
    times.length = 0;
    found = 0;
    for (let k = 0; k < queries; k++) {
      const i = k * 10 + (k % 10);
      const t = performance.now();
      const matches = index.search(manySkillQuery(i), 3);
      times.push(performance.now() - t);
      if (matches.some((m) => m.skill.name === manySkillName(i))) found++;
    }
  }
  times.sort((a, b) => a - b);
  console.log(
    `skill_search over ${
      n0(COUNT)
    } skills, ${queries} queries (second pass): median ${
      percentile(times, 0.5).toFixed(2)
    } ms, p99 ${
      percentile(times, 0.99).toFixed(2)
    } ms, described skill in the first 3 for ${
      (found / queries * 100).toFixed(1)
    }%`,
  );

  // Build including loading, from the files.
  await setup();
  const loadStarted = performance.now();
  const { skills: loaded } = await loadSkills(ROOT);
  const loadedMs = performance.now() - loadStarted;
  const built = new SkillIndex(loaded);
  const totalMs = performance.now() - loadStarted;
  console.log(
    `Loading ${n0(built.size)} skill folders: ${
      loadedMs.toFixed(0)
    } ms; with the index: ${
      totalMs.toFixed(0)
    } ms; peak RSS of this process ${peakRssMiB()} MiB`,
  );
  console.log(
    `Load average at end: ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
  );
}

function n0(value: number): string {
  return value.toLocaleString("en-US");
}

function peakRssMiB(): string {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const kib = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return (kib / 1024).toFixed(0);
  } catch {
    return "?";
  }
}

if (import.meta.main) {
  if (Deno.args[0] === "--report") await report();
  else await runChild(cases);
}
