/**
 * The benchmark harness: every case runs our code and its baseline side by side
 * in one run, each side in its own child process (so peak memory is its own),
 * alternating sides over several rounds, and reports the median ratio and the
 * peak resident memory of each side.
 *
 * A bench file exports `cases: BenchCase[]` and ends with
 * `if (import.meta.main) await runChild(cases);`. `bench/main.ts` lists the files.
 *
 * @module
 */

/** One side of a comparison. */
export interface BenchSide {
  /** What it is, e.g. `execute("true")` or `bare Deno.Command`. */
  readonly label: string;
  /** One timed iteration. */
  readonly fn: () => Promise<unknown> | unknown;
  /** Run before each iteration, untimed (e.g. to switch a global on or off). */
  readonly before?: () => Promise<unknown> | unknown;
}

/** A comparison of our code against its baseline. */
export interface BenchCase {
  /** Stable id, used to find the case in the child process. */
  readonly id: string;
  /** What is measured. */
  readonly title: string;
  /** The module that exports the case (`import.meta.url`). */
  readonly module: string;
  /** Our side. */
  readonly ours: BenchSide;
  /** The baseline. */
  readonly baseline: BenchSide;
  /** Further sides reported beside them (e.g. a floor), not part of the ratio. */
  readonly extra?: readonly BenchSide[];
  /** Prepares data once, in the parent, before any side runs. */
  readonly setup?: () => Promise<void>;
  /** Timed iterations per child process (after one warm-up). Default 5. */
  readonly iterations?: number;
  /** Child processes per side, alternating with the other sides. Default 3. */
  readonly rounds?: number;
  /** Whether to skip the warm-up iteration (for very long iterations). */
  readonly noWarmup?: boolean;
  /**
   * Every side in the same child process, iteration after iteration (the
   * order reversed every other time), so the machine's load hits every side
   * alike: for differences of about 1 % on a shared machine. Each round is
   * one such process; peak memory is then the process's, not a side's.
   */
  readonly interleaved?: boolean;
  /** The target for median(ours) / median(baseline). */
  readonly maxRatio?: number;
  /** The target for peak RSS of ours minus baseline, in MiB. */
  readonly maxRssDeltaMiB?: number;
  /** The target for our peak RSS, in MiB. */
  readonly maxRssMiB?: number;
  /** Why the case cannot run here (e.g. `rg` missing), or `undefined`. */
  readonly skipReason?: () => string | undefined;
}

/** What a child process reports for one side. */
export interface SideReport {
  /** Timed iterations in ms. */
  readonly times: number[];
  /** Peak resident set size of the child, KiB (VmHWM). */
  readonly peakRssKiB: number;
}

/** The measured outcome of one side. */
export interface SideResult {
  /** The side's label. */
  readonly label: string;
  /** Median of all timed iterations, ms. */
  readonly medianMs: number;
  /** Peak resident set size over its child processes, MiB. */
  readonly peakRssMiB: number;
}

/** The measured outcome of one case. */
export interface CaseResult {
  /** The case. */
  readonly id: string;
  /** What was measured. */
  readonly title: string;
  /** Our side. */
  readonly ours: SideResult;
  /** The baseline. */
  readonly baseline: SideResult;
  /** Further sides. */
  readonly extra: SideResult[];
  /** median(ours) / median(baseline). */
  readonly ratio: number;
  /** Whether every target the case names holds. */
  readonly pass: boolean;
  /** Which targets failed, or why it was skipped. */
  readonly notes: string[];
  /** Whether it was skipped. */
  readonly skipped: boolean;
}

/** The peak resident set size of this process in KiB (Linux), else 0. */
export function peakRssKiB(): number {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const match = /VmHWM:\s+(\d+)\s+kB/.exec(status);
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** The median of numbers. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return NaN;
  return sorted.length % 2
    ? sorted[mid]!
    : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Runs one side of one case when this module was started as a child by
 * {@linkcode runCase}; does nothing otherwise.
 */
export async function runChild(cases: readonly BenchCase[]): Promise<void> {
  const [flag, id, sideIndex] = Deno.args;
  if (flag !== "--bench-child") return;
  const benchCase = cases.find((c) => c.id === id);
  if (!benchCase) throw new Error(`Unknown bench case "${id}"`);
  if (sideIndex === "all") {
    const sides = sidesOf(benchCase);
    const times: number[][] = sides.map(() => []);
    for (let i = -1; i < (benchCase.iterations ?? 5); i++) {
      const order = sides.map((_, j) => j);
      if (i % 2) order.reverse();
      for (const j of order) {
        await sides[j]!.before?.();
        const start = performance.now();
        await sides[j]!.fn();
        // The first pass warms every side up.
        if (i >= 0) times[j]!.push(performance.now() - start);
      }
    }
    const peak = peakRssKiB();
    const reports: SideReport[] = times.map((t) => ({
      times: t,
      peakRssKiB: peak,
    }));
    console.log(`BENCH-REPORT ${JSON.stringify(reports)}`);
    return;
  }
  const side = sidesOf(benchCase)[Number(sideIndex)];
  if (!side) throw new Error(`Unknown side ${sideIndex} of "${id}"`);
  if (!benchCase.noWarmup) await side.fn();
  const times: number[] = [];
  for (let i = 0; i < (benchCase.iterations ?? 5); i++) {
    const start = performance.now();
    await side.fn();
    times.push(performance.now() - start);
  }
  const report: SideReport = { times, peakRssKiB: peakRssKiB() };
  console.log(`BENCH-REPORT ${JSON.stringify(report)}`);
}

function sidesOf(benchCase: BenchCase): BenchSide[] {
  return [benchCase.ours, benchCase.baseline, ...(benchCase.extra ?? [])];
}

async function spawnSide(
  benchCase: BenchCase,
  index: number | "all",
): Promise<SideReport> {
  const path = new URL(benchCase.module).pathname;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      // Deno KV for the cases that use it (issue 27's store cases).
      "--unstable-kv",
      path,
      "--bench-child",
      benchCase.id,
      String(index),
    ],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const line = text.split("\n").find((l) => l.startsWith("BENCH-REPORT "));
  if (!output.success || !line) {
    throw new Error(
      `Bench "${benchCase.id}" side ${index} failed (exit ${output.code})`,
    );
  }
  return JSON.parse(line.slice("BENCH-REPORT ".length)) as SideReport;
}

/** Runs one case: every side in its own child processes, alternating over rounds. */
export async function runCase(benchCase: BenchCase): Promise<CaseResult> {
  const sides = sidesOf(benchCase);
  const skip = benchCase.skipReason?.();
  if (skip) {
    const empty = (s: BenchSide): SideResult => ({
      label: s.label,
      medianMs: NaN,
      peakRssMiB: NaN,
    });
    return {
      id: benchCase.id,
      title: benchCase.title,
      ours: empty(benchCase.ours),
      baseline: empty(benchCase.baseline),
      extra: (benchCase.extra ?? []).map(empty),
      ratio: NaN,
      pass: false,
      notes: [`SKIPPED: ${skip}`],
      skipped: true,
    };
  }
  await benchCase.setup?.();
  const reports: SideReport[][] = sides.map(() => []);
  for (let round = 0; round < (benchCase.rounds ?? 3); round++) {
    if (benchCase.interleaved) {
      const all = await spawnSide(benchCase, "all") as unknown as SideReport[];
      all.forEach((report, i) => reports[i]!.push(report));
      continue;
    }
    // Alternate which side goes first, so drift on a noisy machine evens out.
    const order = sides.map((_, i) => i);
    if (round % 2) order.reverse();
    for (const i of order) reports[i]!.push(await spawnSide(benchCase, i));
  }
  const results = sides.map((side, i): SideResult => ({
    label: side.label,
    medianMs: median(reports[i]!.flatMap((r) => r.times)),
    peakRssMiB: Math.max(...reports[i]!.map((r) => r.peakRssKiB)) / 1024,
  }));
  const [ours, baseline, ...extra] = results as [
    SideResult,
    SideResult,
    ...SideResult[],
  ];
  const ratio = ours.medianMs / baseline.medianMs;
  const notes: string[] = [];
  if (benchCase.maxRatio !== undefined && !(ratio <= benchCase.maxRatio)) {
    notes.push(`ratio ${ratio.toFixed(2)} > ${benchCase.maxRatio}`);
  }
  const delta = ours.peakRssMiB - baseline.peakRssMiB;
  if (
    benchCase.maxRssDeltaMiB !== undefined &&
    !(delta <= benchCase.maxRssDeltaMiB)
  ) {
    notes.push(
      `peak RSS +${delta.toFixed(1)} MiB > +${benchCase.maxRssDeltaMiB} MiB`,
    );
  }
  if (
    benchCase.maxRssMiB !== undefined &&
    !(ours.peakRssMiB <= benchCase.maxRssMiB)
  ) {
    notes.push(
      `peak RSS ${ours.peakRssMiB.toFixed(1)} MiB > ${benchCase.maxRssMiB} MiB`,
    );
  }
  return {
    id: benchCase.id,
    title: benchCase.title,
    ours,
    baseline,
    extra,
    ratio,
    pass: notes.length === 0,
    notes,
    skipped: false,
  };
}

/**
 * The `curl -s -o` baseline of a download: fetches `url` into `target`, then,
 * with `sync`, flushes the file's data to disk (`sync --data`), as durable as
 * our downloads, which flush before their rename.
 *
 * @returns The size of the file written.
 */
export async function curlToFile(
  url: string,
  target: string,
  options: { headers?: readonly string[]; sync?: boolean } = {},
): Promise<number> {
  const headers = (options.headers ?? []).flatMap((h) => ["-H", h]);
  const status = await new Deno.Command("curl", {
    args: ["-s", "-f", ...headers, "-o", target, url],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`curl exited with ${status.code}`);
  if (options.sync) {
    const synced = await new Deno.Command("sync", {
      args: ["--data", target],
      stdin: "null",
    }).output();
    if (!synced.success) throw new Error(`sync exited with ${synced.code}`);
  }
  return (await Deno.stat(target)).size;
}

/** A server a bench started in a process of its own. */
export interface ServerProcess {
  /** The process. */
  readonly child: Deno.ChildProcess;
  /** The first line it printed (its URL or its port), trimmed. */
  readonly firstLine: string;
}

/**
 * Starts `deno <args>` as a server in a process of its own and waits for the
 * first line it prints (its URL or port); its later output is dropped. It is
 * killed when this process unloads and does not keep this process alive.
 *
 * @param args The arguments after `deno`.
 * @param options What it is (for the error when it prints nothing), its
 *   stdin (`"piped"`: it stops when this process's end closes it) and stderr.
 * @returns The process and its first line.
 */
export async function startServerProcess(
  args: readonly string[],
  options: {
    readonly what: string;
    readonly stdin?: "null" | "piped";
    readonly stderr?: "inherit" | "null";
  },
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    stdin: options.stdin ?? "null",
    stdout: "piped",
    stderr: options.stderr ?? "inherit",
  }).spawn();
  child.unref();
  globalThis.addEventListener("unload", () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // gone already
    }
  });
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${options.what} did not start`);
    text += value;
  }
  await reader.cancel().catch(() => {});
  return { child, firstLine: text.split("\n")[0]!.trim() };
}

/** Formats results as a Markdown table (what `bench/README.md` shows). */
export function formatResults(results: readonly CaseResult[]): string {
  const ms = (n: number) =>
    Number.isNaN(n) ? "-" : n < 10 ? n.toFixed(2) : n.toFixed(0);
  const mib = (n: number) => Number.isNaN(n) ? "-" : n.toFixed(0);
  const lines = [
    "| case | ours (ms, peak MiB) | baseline (ms, peak MiB) | ratio | target | others |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of results) {
    const target = r.skipped
      ? r.notes.join("; ")
      : r.pass
      ? "met"
      : `MISSED: ${r.notes.join("; ")}`;
    const others = r.extra.map((e) =>
      `${e.label}: ${ms(e.medianMs)} ms, ${mib(e.peakRssMiB)} MiB`
    )
      .join("; ");
    lines.push(
      `| ${r.title} | ${r.ours.label}: ${ms(r.ours.medianMs)}, ${
        mib(r.ours.peakRssMiB)
      } | ${r.baseline.label}: ${ms(r.baseline.medianMs)}, ${
        mib(r.baseline.peakRssMiB)
      } | ${Number.isNaN(r.ratio) ? "-" : r.ratio.toFixed(2)} | ${target} | ${
        others || "-"
      } |`,
    );
  }
  return lines.join("\n");
}
