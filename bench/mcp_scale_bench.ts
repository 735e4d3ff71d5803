/**
 * Issue 27, many sessions at once, each `cli.ts mcp --http` a process of its
 * own (local runtime, loopback HTTP, raw JSON-RPC over `fetch` so that the
 * client costs little):
 *
 * - `mcp-scale-replicas`: 100 sessions × 10 calls spread over 3 instances
 *   sharing a KV file (`--store`), each call sent to the next instance in
 *   turn, against the same on a single instance without a store. Sessions run
 *   in waves (25 at once); after each wave every session is deleted, and each
 *   instance's resident and peak memory is read from `/proc`, so that the
 *   figures show whether an instance keeps anything of sessions it no longer
 *   serves.
 * - `mcp-scale-one-address`: one instance, 100 concurrent sessions from one
 *   address (limits raised by `--max-sessions`/`--max-sessions-per-client`) ×
 *   50 rounds of `write`/`bash`/`read`, against the baseline shape (16
 *   sessions × 200 rounds under the default limits).
 *
 * Every call checks its answer: no failed call, and each session reads back
 * only what it wrote (a marker of its own). At the end no workspace is left.
 * p50/p99 per call and each instance's peak memory go to stderr and to the
 * `--report` table. `SKILLRUN_BENCH_SCALE` (default 1) multiplies the rounds
 * and calls, for a shorter run on a loaded machine.
 *
 * `deno run -A --unstable-kv bench/mcp_scale_bench.ts --report` prints the
 * table of bench/README.md's issue 27 section.
 *
 * @module
 */
import { type BenchCase, median, runChild } from "./_harness.ts";

const REPO = new URL("../", import.meta.url).pathname;
const CLI = `${REPO}cli.ts`;
const SCALE = Number(Deno.env.get("SKILLRUN_BENCH_SCALE") ?? "1");
if (!(SCALE > 0)) {
  throw new TypeError(
    `Cannot use SKILLRUN_BENCH_SCALE "${
      Deno.env.get("SKILLRUN_BENCH_SCALE")
    }": it must be a positive number`,
  );
}

interface Instance {
  child: Deno.ChildProcess;
  url: string;
}

/** Resident and peak memory of a process in MiB, from `/proc`. */
function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kib = (key: string) =>
    Number(new RegExp(`${key}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? NaN);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

async function startInstance(
  root: string,
  flags: readonly string[],
): Promise<Instance> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      "--unstable-kv",
      CLI,
      "mcp",
      "--skills",
      `${REPO}examples/skills`,
      "--root",
      `${root}/conversations`,
      "--http",
      "127.0.0.1:0",
      ...flags,
    ],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    first += value;
  }
  reader.releaseLock();
  if (!first.startsWith("http://")) {
    child.kill("SIGKILL");
    throw new Error(`The MCP server printed no URL: "${first}"`);
  }
  return { child, url: first.trim() };
}

async function stopInstances(instances: readonly Instance[]): Promise<void> {
  for (const instance of instances) {
    instance.child.kill("SIGTERM");
    await instance.child.status;
    await instance.child.stdout.cancel().catch(() => {});
  }
}

const HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
};

/** One JSON-RPC POST; the answer's `result` (SSE or JSON), else throws. */
async function post(
  url: string,
  body: Record<string, unknown>,
  session?: string,
): Promise<{ result: Record<string, unknown>; session: string | null }> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...(session ? { "mcp-session-id": session } : {}) },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status >= 300) {
    throw new Error(`${body.method}: HTTP ${answer.status}: ${text}`);
  }
  const sessionId = answer.headers.get("mcp-session-id");
  if (body.id === undefined) return { result: {}, session: sessionId };
  const messages = text.startsWith("{") ? [text] : text.split("\n")
    .filter((line) => line.startsWith("data: ") && line.length > 6)
    .map((line) => line.slice(6));
  for (const message of messages) {
    const parsed = JSON.parse(message);
    if (parsed.id !== body.id) continue;
    if (parsed.error) {
      throw new Error(`${body.method}: ${JSON.stringify(parsed.error)}`);
    }
    return { result: parsed.result, session: sessionId };
  }
  throw new Error(`${body.method}: no answer in "${text}"`);
}

let nextId = 1;

async function openSession(url: string): Promise<string> {
  const { session } = await post(url, {
    jsonrpc: "2.0",
    id: nextId++,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench", version: "1" },
    },
  });
  if (!session) throw new Error("initialize: no session id");
  await post(
    url,
    { jsonrpc: "2.0", method: "notifications/initialized" },
    session,
  );
  return session;
}

async function endSession(url: string, session: string): Promise<void> {
  const answer = await fetch(url, {
    method: "DELETE",
    headers: {
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-11-25",
    },
  });
  await answer.body?.cancel();
  if (answer.status >= 300) throw new Error(`DELETE: HTTP ${answer.status}`);
}

function textOf(result: Record<string, unknown>): string {
  return ((result.content ?? []) as { text?: string }[])
    .map((c) => c.text ?? "").join("\n");
}

/**
 * Call `k` of a session: `write` of its marker, `bash` `cat`, `read`, in
 * turn; each answer is checked (no error; the session's own marker, no other).
 */
async function oneCall(
  url: string,
  session: string,
  marker: string,
  k: number,
  times: number[],
): Promise<void> {
  const [name, args] = k % 3 === 0
    ? ["write", { file_path: "mine.txt", content: `${marker}:${k}` }]
    : k % 3 === 1
    ? ["bash", { command: "cat mine.txt" }]
    : ["read", { file_path: "mine.txt" }];
  const start = performance.now();
  const { result } = await post(url, {
    jsonrpc: "2.0",
    id: nextId++,
    method: "tools/call",
    params: { name, arguments: args },
  }, session);
  times.push(performance.now() - start);
  const text = textOf(result);
  if (result.isError) throw new Error(`${name} failed: ${text}`);
  if (name !== "write") {
    const written = `${marker}:${k - (k % 3)}`;
    const seen = text.match(/s\d+-\d+:\d+/g) ?? [];
    if (!text.includes(written) || seen.some((s) => s !== written)) {
      throw new Error(`${name} of ${marker} saw "${text}", not "${written}"`);
    }
  }
}

/** What one scenario measured. */
export interface ScaleReport {
  readonly label: string;
  readonly calls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly wallMs: number;
  /** Per instance: peak memory (MiB) after each wave. */
  readonly peaksMiB: number[][];
  /** Per instance: resident memory (MiB) after each wave. */
  readonly rssMiB: number[][];
  readonly leftWorkspaces: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * `sessions` sessions in waves of `concurrent`, each `calls` calls, the
 * calls sent to the instances in turn.
 */
async function scenario(options: {
  label: string;
  instances: number;
  flags: readonly string[];
  sessions: number;
  concurrent: number;
  calls: number;
}): Promise<ScaleReport> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-bench-scale-" }),
  );
  const flags = options.flags.map((f) => f.replace("{root}", root));
  const instances: Instance[] = [];
  const times: number[] = [];
  const peaks: number[][] = [];
  const rss: number[][] = [];
  let turn = 0;
  const next = () => instances[turn++ % instances.length]!.url;
  const start = performance.now();
  try {
    for (let i = 0; i < options.instances; i++) {
      instances.push(await startInstance(root, flags));
      peaks.push([]);
      rss.push([]);
    }
    for (let wave = 0; wave * options.concurrent < options.sessions; wave++) {
      const count = Math.min(
        options.concurrent,
        options.sessions - wave * options.concurrent,
      );
      await Promise.all(
        Array.from({ length: count }, async (_, s) => {
          const marker = `s${wave}-${s}`;
          const session = await openSession(next());
          for (let k = 0; k < options.calls; k++) {
            await oneCall(next(), session, marker, k, times);
          }
          await endSession(next(), session);
        }),
      );
      instances.forEach((instance, i) => {
        const memory = memoryMiB(instance.child.pid);
        peaks[i]!.push(Math.round(memory.peak));
        rss[i]!.push(Math.round(memory.rss));
      });
    }
    const wallMs = performance.now() - start;
    let left = 0;
    try {
      for await (const _ of Deno.readDir(`${root}/conversations`)) left++;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const sorted = [...times].sort((a, b) => a - b);
    const report: ScaleReport = {
      label: options.label,
      calls: times.length,
      p50Ms: median(sorted),
      p99Ms: percentile(sorted, 0.99),
      wallMs,
      peaksMiB: peaks,
      rssMiB: rss,
      leftWorkspaces: left,
    };
    console.error(`bench-scale: ${JSON.stringify(report)}`);
    if (left > 0) {
      throw new Error(`${options.label}: ${left} workspaces left`);
    }
    return report;
  } finally {
    await stopInstances(instances);
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

const scaled = (n: number) => Math.max(1, Math.round(n * SCALE));

/** 100 sessions × 10 calls over 3 instances sharing a KV file. */
export function replicas(): Promise<ScaleReport> {
  return scenario({
    label: "3 instances, KV store",
    instances: 3,
    flags: [
      "--store",
      "{root}/store.kv",
      // Sessions ended on another instance leave this one's memory at its
      // next sweep (default every 60 s: longer than this run).
      "--sweep-interval",
      "2",
      "--max-sessions",
      "200",
      "--max-sessions-per-client",
      "200",
    ],
    sessions: scaled(100),
    concurrent: 25,
    calls: 10,
  });
}

/** The same on one instance, sessions in memory. */
export function single(): Promise<ScaleReport> {
  return scenario({
    label: "1 instance, memory",
    instances: 1,
    flags: ["--max-sessions", "200", "--max-sessions-per-client", "200"],
    sessions: scaled(100),
    concurrent: 25,
    calls: 10,
  });
}

/** 100 concurrent sessions from one address × 50 rounds of 3 calls. */
export function hundredAtOnce(): Promise<ScaleReport> {
  return scenario({
    label: "100 sessions at once",
    instances: 1,
    flags: ["--max-sessions", "100", "--max-sessions-per-client", "100"],
    sessions: 100,
    concurrent: 100,
    calls: 3 * scaled(50),
  });
}

/** The baseline shape: 16 sessions × 200 rounds, default limits. */
export function sixteenAtOnce(): Promise<ScaleReport> {
  return scenario({
    label: "16 sessions at once",
    instances: 1,
    flags: [],
    sessions: 16,
    concurrent: 16,
    calls: 3 * scaled(200),
  });
}

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "mcp-scale-replicas",
  title:
    "MCP: 100 sessions × 10 calls over 3 `cli.ts mcp --http` instances sharing a KV store vs one instance (whole run)",
  module: import.meta.url,
  iterations: 1,
  rounds: 1,
  noWarmup: true,
  ours: {
    label: "3 instances, KV store",
    fn: async () => void await replicas(),
  },
  baseline: {
    label: "1 instance, memory",
    fn: async () => void await single(),
  },
}, {
  id: "mcp-scale-one-address",
  title:
    "MCP: one `cli.ts mcp --http`, 100 concurrent sessions from one address × 50 rounds of write/bash/read vs 16 × 200 (whole run)",
  module: import.meta.url,
  iterations: 1,
  rounds: 1,
  noWarmup: true,
  ours: {
    label: "100 sessions × 50 rounds",
    fn: async () => void await hundredAtOnce(),
  },
  baseline: {
    label: "16 sessions × 200 rounds",
    fn: async () => void await sixteenAtOnce(),
  },
}];

function row(report: ScaleReport): string {
  const peaks = report.peaksMiB.map((p) => p.join("→")).join("; ");
  const rss = report.rssMiB.map((p) => p.join("→")).join("; ");
  return `| ${report.label} | ${report.calls} | ${report.p50Ms.toFixed(0)} | ${
    report.p99Ms.toFixed(0)
  } | ${
    (report.wallMs / 1000).toFixed(1)
  } | ${peaks} | ${rss} | ${report.leftWorkspaces} |`;
}

if (import.meta.main) {
  if (Deno.args[0] === "--report") {
    const which = Deno.args[1] ?? "all";
    const runs: (() => Promise<ScaleReport>)[] = [];
    if (which !== "one-address") runs.push(single, replicas);
    if (which !== "replicas") runs.push(sixteenAtOnce, hundredAtOnce);
    console.log(
      "| run | calls | p50 (ms) | p99 (ms) | wall (s) | peak MiB per instance, after each wave | RSS MiB per instance, after each wave | workspaces left |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const run of runs) {
      const report = await run();
      console.log(row(report));
      const load = await Deno.readTextFile("/proc/loadavg").catch(() => "");
      console.log(`<!-- load average after it: ${load.trim()} -->`);
    }
  } else {
    await runChild(cases);
  }
}
