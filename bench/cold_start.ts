/**
 * Cold start: the time of `deno run` of a script that only imports one of
 * skillrun's entry points (`.`, `./opensandbox`, `./mcp`), beside an empty
 * script and beside a script that imports only what that entry point needs
 * from its dependencies (its floor). Edge platforms pay this on every new
 * instance.
 *
 * Each run is a new process; the scripts alternate process by process (one
 * round runs every script once), so that a drift of the machine's speed moves
 * every script alike. The module graph is cached before the first round (a
 * warm-up run of each), as on a deployed instance.
 *
 * ```sh
 * deno run -A bench/cold_start.ts [--rounds 15] [--before <checkout of main>]
 * ```
 *
 * `--before <folder>` times the same entry points of another checkout (for
 * example `git archive main | tar -x -C /tmp/main`) in the same rounds.
 *
 * @module
 */

const args = Deno.args;
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const rounds = Number(option("--rounds") ?? "15");
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error("Invalid --rounds: a whole number of at least 1");
  Deno.exit(2);
}
const before = option("--before");

const here = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** One script to time: its label, and its source (relative to `root`). */
interface Entry {
  label: string;
  root: string;
  source: string;
}

const SDK = "npm:@modelcontextprotocol/sdk@1.32.2";
const entries = (root: string, tag: string): Entry[] => [
  {
    label: `${tag} .`,
    root,
    source: `import * as m from "${root}/mod.ts";\nvoid m;\n`,
  },
  {
    label: `${tag} ./opensandbox`,
    root,
    source:
      `import * as m from "${root}/runtimes/opensandbox/mod.ts";\nvoid m;\n`,
  },
  {
    label: `${tag} ./mcp`,
    root,
    source: `import * as m from "${root}/tools/mcp/mod.ts";\nvoid m;\n`,
  },
];

const all: Entry[] = [
  { label: "empty script", root: here, source: "\n" },
  {
    // What `.` and the kinds need from their dependencies at import time:
    // std's YAML (SKILL.md front matter) and path functions.
    label: "floor of . (std yaml, path)",
    root: here,
    source:
      `import * as y from "@std/yaml";\nimport * as p from "@std/path";\n` +
      `void y; void p;\n`,
  },
  {
    // What `./mcp` needs from the MCP SDK: its server, web-standard
    // transport and types.
    label: "floor of ./mcp (SDK server, transport, types)",
    root: here,
    source: `import * as s from "${SDK}/server";\n` +
      `import * as t from "${SDK}/server/webStandardStreamableHttp.js";\n` +
      `import * as y from "${SDK}/types.js";\nvoid s; void t; void y;\n`,
  },
  ...(before ? entries(before, "before") : []),
  ...entries(here, before ? "after" : "skillrun"),
];

// The scripts live in each checkout's bench/.data (ignored by git), so that
// each resolves its imports through that checkout's deno.json.
const scripts: string[] = [];
for (const [index, entry] of all.entries()) {
  const folder = `${entry.root}/bench/.data/cold_start`;
  await Deno.mkdir(folder, { recursive: true });
  const file = `${folder}/entry_${index}.ts`;
  await Deno.writeTextFile(file, entry.source);
  scripts.push(file);
}

const runOnce = async (file: string): Promise<number> => {
  const started = performance.now();
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-kv", file],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const elapsed = performance.now() - started;
  if (code !== 0) {
    throw new Error(
      `${file} failed (exit ${code}): ${new TextDecoder().decode(stderr)}`,
    );
  }
  return elapsed;
};

for (const file of scripts) await runOnce(file); // warm the caches
const times: number[][] = all.map(() => []);
for (let round = 0; round < rounds; round++) {
  for (const [index, file] of scripts.entries()) {
    times[index]!.push(await runOnce(file));
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? sorted[middle]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "?"))
  .split(" ").slice(0, 3).join(" ");
console.log(
  `cold start, ${rounds} rounds, deno ${Deno.version.deno}, load ${load}`,
);
console.log("| script | median ms | min ms | max ms |");
console.log("| ------ | --------- | ------ | ------ |");
for (const [index, entry] of all.entries()) {
  const values = times[index]!;
  console.log(
    `| ${entry.label} | ${median(values).toFixed(1)} | ${
      Math.min(...values).toFixed(1)
    } | ${Math.max(...values).toFixed(1)} |`,
  );
}
