/**
 * Benchmarks of issue 18 (events, OpenTelemetry, live output):
 *
 * - `bash` tool `true` with an event listener and an active OpenTelemetry
 *   exporter (the official SDK, batching to an OTLP/HTTP receiver on
 *   loopback) against the same tools with nothing listening (target <= 1.05);
 * - `bash` tool `true` with nothing listening against the tools of the
 *   commit before this work (`BASE_COMMIT`, extracted by `git archive` into
 *   `bench/.data/`) (target <= 1.01);
 * - 1 GiB to stdout through the `bash` tool with a live-output listener
 *   against without one (target <= 1.2, memory flat).
 *
 * The first two run their sides interleaved in one process (`interleaved`
 * in `_harness.ts`), so that the load of a shared machine hits both alike
 * and about 1 % can be told apart; the OpenTelemetry provider is
 * registered before each iteration of a side that exports and removed
 * (`trace.disable()`: the API's no-op again) before the others. The 1 GiB
 * case runs each side in its own processes (its memory is its own).
 *
 * @module
 */
import type { TracerProvider } from "@opentelemetry/sdk-trace";
import { type BenchCase, runChild, startServerProcess } from "./_harness.ts";
import type { Tool } from "../tools/types.ts";

/** The commit before the observability work: the baseline of the tools. */
const BASE_COMMIT = "48d2201";
const DATA = new URL("./.data/", import.meta.url).pathname;
const BASE = `${DATA}observe_base_${BASE_COMMIT}/`;
const CALLS = 10;

async function extractBase(): Promise<void> {
  if (await Deno.stat(`${BASE}tools/builder.ts`).catch(() => null)) return;
  await Deno.mkdir(BASE, { recursive: true });
  const root = new URL("../", import.meta.url).pathname;
  const archive = new Deno.Command("git", {
    args: ["-C", root, "archive", BASE_COMMIT],
    stdout: "piped",
  }).spawn();
  const untar = new Deno.Command("tar", {
    args: ["-x", "-C", BASE],
    stdin: "piped",
  }).spawn();
  await archive.stdout.pipeTo(untar.stdin);
  if (!(await archive.status).success || !(await untar.status).success) {
    throw new Error(`Cannot extract ${BASE_COMMIT} into ${BASE}`);
  }
}

type Builder = (options: Record<string, unknown>) => Promise<{
  tool(name: string): Tool | undefined;
}>;

const tools = new Map<string, Tool>();

/** The bash tool of a builder with options, made once per key. */
async function bashTool(
  builderUrl: string,
  options: Record<string, unknown> = {},
  key = builderUrl,
): Promise<Tool> {
  const made = tools.get(key);
  if (made) return made;
  const { buildSkillTools } = await import(builderUrl) as {
    buildSkillTools: Builder;
  };
  const set = await buildSkillTools({ tools: ["bash"], ...options });
  const bash = set.tool("bash")!;
  tools.set(key, bash);
  return bash;
}

const OURS = new URL("../tools/builder.ts", import.meta.url).href;

async function trueCalls(tool: Tool): Promise<void> {
  for (let i = 0; i < CALLS; i++) {
    const result = await tool.execute({ command: "true" }, {
      toolCallId: `call-${i}`,
    });
    if (result.isError) throw new Error(result.text);
  }
}

let events = 0;
let exported = 0;

/** An OTLP/HTTP receiver that prints its port and answers every export. */
const RECEIVER = `
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen({ port }) {
  console.log(port);
} }, async (request) => {
  await request.arrayBuffer();
  return Response.json({});
});
`;
/** The bench's OpenTelemetry set-up (see {@linkcode startTelemetry}). */
export interface Telemetry {
  /** Registers the SDK (provider, context manager, propagator). */
  on(): void;
  /** Removes it: the API is the no-op again. */
  off(): void;
  /** The SDK's provider (its tracer, its flush). */
  readonly provider: TracerProvider;
}

let telemetry: Telemetry | undefined;

/**
 * Makes the official SDK with a batching OTLP/HTTP exporter (every 100 ms)
 * to a receiver in a process of its own, registered by `on()` and removed by
 * `off()`; made once per process.
 */
export async function startTelemetry(): Promise<Telemetry> {
  if (telemetry) return telemetry;
  const { context, propagation, trace } = await import("@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = await import(
    "@opentelemetry/context-async-hooks"
  );
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const { OTLPTraceExporter } = await import(
    "@opentelemetry/exporter-trace-otlp-http"
  );
  const { TracerProvider, BatchSpanProcessor } = await import(
    "@opentelemetry/sdk-trace"
  );
  // The receiver runs in a process of its own, as a collector would: the
  // timed process pays for making and sending spans, not for receiving them.
  const { firstLine } = await startServerProcess(["eval", RECEIVER], {
    what: "The OTLP receiver",
  });
  const port = Number(firstLine);
  exported = -1; // counted by the receiver, in its own process
  const provider = new TracerProvider({
    spanProcessors: [
      // Exports every 100 ms, so that exports happen while calls are timed.
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({
          url: `http://127.0.0.1:${port}/v1/traces`,
        }),
        scheduledDelayMillis: 100,
      }),
    ],
  });
  const manager = new AsyncLocalStorageContextManager();
  const propagator = new W3CTraceContextPropagator();
  globalThis.addEventListener("unload", () => {
    if (exported === 0 && events === 0) {
      console.error(`observed ${events} events, exported ${exported} spans`);
    }
  });
  telemetry = {
    provider,
    on() {
      manager.enable();
      context.setGlobalContextManager(manager);
      trace.setGlobalTracerProvider(provider);
      propagation.setGlobalPropagator(propagator);
    },
    off() {
      trace.disable();
      context.disable();
      propagation.disable();
      manager.disable();
    },
  };
  return telemetry;
}

const listening = { onEvent: () => void events++ };

const ONE_GIB = 1024 * 1024 * 1024;
const BIG_COMMAND = `head -c ${ONE_GIB} /dev/zero | tr '\\0' a`;

async function bigOutput(tool: Tool): Promise<void> {
  const result = await tool.execute({ command: BIG_COMMAND });
  if (result.isError) throw new Error(result.text);
}

let outputBytes = 0;

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "observe-events-otel",
  title:
    `bash tool "true" x${CALLS}: onEvent listener + active OTel SDK exporter (OTLP/HTTP, batched) vs nothing listening (no provider: the API's no-op), sides interleaved in one process`,
  module: import.meta.url,
  interleaved: true,
  iterations: 60,
  rounds: 3,
  maxRatio: 1.05,
  ours: {
    label: "events + OTel exporter",
    before: async () => (await startTelemetry()).on(),
    fn: async () =>
      await trueCalls(await bashTool(OURS, listening, "listening")),
  },
  baseline: {
    label: "nothing listening",
    before: async () => (await startTelemetry()).off(),
    fn: async () => await trueCalls(await bashTool(OURS)),
  },
  extra: [{
    label: "events only",
    before: async () => (await startTelemetry()).off(),
    fn: async () =>
      await trueCalls(await bashTool(OURS, listening, "listening")),
  }, {
    label: "OTel exporter only",
    before: async () => (await startTelemetry()).on(),
    fn: async () => await trueCalls(await bashTool(OURS)),
  }],
}, {
  id: "observe-idle",
  title:
    `bash tool "true" x${CALLS} with nothing listening: this branch vs ${BASE_COMMIT} (before events and spans), sides interleaved in one process`,
  module: import.meta.url,
  setup: extractBase,
  interleaved: true,
  iterations: 100,
  rounds: 3,
  maxRatio: 1.01,
  ours: {
    label: "this branch, no listener",
    fn: async () => await trueCalls(await bashTool(OURS)),
  },
  baseline: {
    label: `tools at ${BASE_COMMIT}`,
    fn: async () =>
      await trueCalls(
        await bashTool(new URL(`${BASE}tools/builder.ts`, "file:").href),
      ),
  },
}, {
  id: "observe-live-1gib",
  title: "1 GiB to stdout through the bash tool: live-output listener vs none",
  module: import.meta.url,
  iterations: 2,
  rounds: 4,
  noWarmup: true,
  maxRatio: 1.2,
  maxRssDeltaMiB: 32,
  ours: {
    label: "command_output listener",
    fn: async () =>
      await bigOutput(
        await bashTool(OURS, {
          onEvent: (event: { type: string; text?: string }) => {
            if (event.type === "command_output") {
              outputBytes += event.text!.length;
            }
          },
        }),
      ),
  },
  baseline: {
    label: "no listener",
    fn: async () => await bigOutput(await bashTool(OURS)),
  },
}];

if (import.meta.main) await runChild(cases);
