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
 * Each run is timed by bash's `time` (wall time, and CPU time: user +
 * system, less moved than wall time by other work on a busy machine) and
 * GNU `time` (`/usr/bin/time`, peak memory of the process).
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
  /** Flags of `deno run` besides `-A --unstable-kv`. */
  flags?: string[];
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
    label: "floor of . (std yaml, POSIX path)",
    root: here,
    source:
      `import * as y from "@std/yaml";\nimport * as p from "@std/path/posix";\n` +
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
  {
    // What the modules `./mcp` reaches only through `import()` cost: Deno
    // reads them all at start (denoland/deno#23149) unless told to wait for
    // the call. A bound, not a figure users get by default.
    label: `${
      before ? "after" : "skillrun"
    } ./mcp, --unstable-lazy-dynamic-imports`,
    root: here,
    source: `import * as m from "${here}/tools/mcp/mod.ts";\nvoid m;\n`,
    flags: ["--unstable-lazy-dynamic-imports"],
  },
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

/** One run's wall and CPU milliseconds and peak memory (MiB). */
interface Run {
  wall: number;
  cpu: number;
  peak: number;
}

const runOnce = async (file: string, flags: string[] = []): Promise<Run> => {
  const { code, stderr } = await new Deno.Command("bash", {
    args: [
      "-c",
      'TIMEFORMAT="cold-start %3R %3U %3S"; ' +
      'time /usr/bin/time -f "peak %M" "$1" run -A --unstable-kv "${@:3}" "$2"',
      "bash",
      Deno.execPath(),
      file,
      ...flags,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stderr);
  const lines = text.split("\n");
  const line = lines.find((l) => l.startsWith("cold-start "));
  const peak = lines.find((l) => l.startsWith("peak "));
  if (code !== 0 || !line || !peak) {
    throw new Error(`${file} failed (exit ${code}): ${text}`);
  }
  const [wall, user, system] = line.split(" ").slice(1).map(Number);
  const peakKiB = Number(peak.split(" ")[1]);
  return {
    wall: wall! * 1000,
    cpu: (user! + system!) * 1000,
    peak: peakKiB / 1024,
  };
};

// Warm the caches.
for (const [index, file] of scripts.entries()) {
  await runOnce(file, all[index]!.flags);
}
const times: Run[][] = all.map(() => []);
for (let round = 0; round < rounds; round++) {
  for (const [index, file] of scripts.entries()) {
    times[index]!.push(await runOnce(file, all[index]!.flags));
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
console.log(
  "| script | wall ms (median) | wall min-max | CPU ms (median) | peak MiB |",
);
console.log(
  "| ------ | ---------------- | ------------ | --------------- | -------- |",
);
for (const [index, entry] of all.entries()) {
  const runs = times[index]!;
  const walls = runs.map((r) => r.wall);
  console.log(
    `| ${entry.label} | ${median(walls).toFixed(0)} | ${
      Math.min(...walls).toFixed(0)
    }-${Math.max(...walls).toFixed(0)} | ${
      median(runs.map((r) => r.cpu)).toFixed(0)
    } | ${median(runs.map((r) => r.peak)).toFixed(0)} |`,
  );
}

// Each `./mcp` against its floor, by the medians (the target: 1.15).
const medians = (label: string) => {
  const runs = times[all.findIndex((e) => e.label === label)]!;
  return [median(runs.map((r) => r.wall)), median(runs.map((r) => r.cpu))];
};
const [floorWall, floorCpu] = medians(all[2]!.label);
for (const entry of all.slice(3).filter((e) => e.label.includes("./mcp"))) {
  const [wall, cpu] = medians(entry.label);
  console.log(
    `${entry.label} / floor of ./mcp: wall ${
      (wall! / floorWall!).toFixed(2)
    }, CPU ${(cpu! / floorCpu!).toFixed(2)}`,
  );
}
