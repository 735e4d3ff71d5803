/**
 * `deno task bench`: every benchmark, each beside its baseline, in one run.
 * `deno task bench <id-substring>` runs only the matching cases.
 *
 * @module
 */
import {
  type BenchCase,
  type CaseResult,
  formatResults,
  runCase,
} from "./_harness.ts";

/** The bench files; each exports `cases`. */
const FILES = [
  "./skill_bench.ts",
  "./workspace_bench.ts",
  "./local_bench.ts",
  "./tools_bench.ts",
  "./search_bench.ts",
  "./opensandbox_bench.ts",
  "./remote_bench.ts",
  "./aio_bench.ts",
  "./hosted_bench.ts",
  "./mcp_bench.ts",
  "./mcp_store_bench.ts",
  "./mcp_scale_bench.ts",
  "./egress_bench.ts",
  "./package_bench.ts",
  "./observe_bench.ts",
  "./approval_bench.ts",
  "./catalog_bench.ts",
  "./skills_extension_bench.ts",
  "./daytona_bench.ts",
  "./deno_sandbox_bench.ts",
] as const;

const filter = Deno.args[0];
const all: BenchCase[] = [];
for (const file of FILES) {
  all.push(...(await import(file) as { cases: BenchCase[] }).cases);
}
const chosen = all.filter((c) => !filter || c.id.includes(filter));
if (chosen.length === 0) {
  console.error(
    `Unknown bench filter "${filter}": no case id contains it; the ids are:\n${
      all.map((c) => `  ${c.id}`).join("\n")
    }`,
  );
  Deno.exit(2);
}
const results: CaseResult[] = [];
for (const benchCase of chosen) {
  console.error(`bench: ${benchCase.title} ...`);
  const result = await runCase(benchCase);
  console.error(
    `bench:   ratio ${result.ratio.toFixed(2)} ${
      result.pass ? "(target met)" : result.notes.join("; ")
    }`,
  );
  results.push(result);
}
console.log(formatResults(results));
