/**
 * Paired A/B of issue 18's exporter case, call by call: the `bash` tool
 * running `true`, the sides alternating at every call (the order reversed
 * every other time), so that the machine's load hits them alike, with the
 * bench's SDK set-up (`BatchSpanProcessor` every 100 ms, OTLP/HTTP to a
 * receiver in its own process, `AsyncLocalStorage` context):
 *
 * - nothing listening (no provider: the API's no-op);
 * - an event listener and the OpenTelemetry SDK registered;
 * - the SDK registered, no listener;
 * - the SDK's floor: no provider for our code, but the same two spans
 *   (`execute_tool bash` and its child `runtime.execute`, same attributes,
 *   each made active) made around the call directly with the SDK's tracer.
 *
 * Prints each side's median and mean wall time and its CPU time per call
 * (user + system of the whole process while the call ran), and each one's
 * ratio to nothing listening. When the SDK floor costs what our instrumented
 * path costs, the overhead is the SDK's and not our code's.
 *
 * `deno run -A bench/observe_pair_ab.ts [calls per side, default 1500]`
 *
 * @module
 */
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { cpuUsage } from "node:process";
import { buildSkillTools } from "../tools/builder.ts";
import { median } from "./_harness.ts";
import { startTelemetry } from "./observe_bench.ts";

const CALLS = Number(Deno.args[0] ?? 1500);

// The bench's own set-up: the same SDK, exporter, receiver and context.
const { on, off, provider } = await startTelemetry();

const plain = (await buildSkillTools({ tools: ["bash"] })).tool("bash")!;
let events = 0;
const listening = (await buildSkillTools({
  tools: ["bash"],
  onEvent: () => void events++,
})).tool("bash")!;
const run = (tool: typeof plain) => () =>
  tool.execute({ command: "true" }, { toolCallId: "call-ab" });

// The SDK's floor: its own tracer and context manager, our code untraced.
const sdkTracer = provider.getTracer("floor", "1");
const floorManager = new AsyncLocalStorageContextManager().enable();
const floor = async () => {
  const tool = sdkTracer.startSpan("execute_tool bash", {
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "bash",
      "gen_ai.tool.call.id": "call-ab",
    },
  }, ROOT_CONTEXT);
  try {
    return await floorManager.with(
      trace.setSpan(ROOT_CONTEXT, tool),
      async () => {
        const parent = floorManager.active();
        const execute = sdkTracer.startSpan("runtime.execute", {
          attributes: { "skillrun.runtime": "local" },
        }, parent);
        try {
          return await floorManager.with(
            trace.setSpan(parent, execute),
            async () => {
              const result = await plain.execute({ command: "true" }, {
                toolCallId: "call-ab",
              });
              execute.setAttribute("process.exit.code", 0);
              return result;
            },
          );
        } finally {
          execute.end();
        }
      },
    );
  } finally {
    tool.end();
  }
};

const sides: [string, () => void, () => Promise<unknown>][] = [
  ["nothing listening", off, run(plain)],
  ["events + OTel SDK", on, run(listening)],
  ["OTel SDK only", on, run(plain)],
  ["SDK floor (2 bare spans)", off, floor],
];
const wall: number[][] = sides.map(() => []);
const cpu: number[] = sides.map(() => 0);
for (let i = -50; i < CALLS; i++) {
  const order = sides.map((_, k) => k);
  if (i % 2) order.reverse();
  for (const k of order) {
    const [, before, fn] = sides[k]!;
    before();
    const startCpu = cpuUsage();
    const start = performance.now();
    await fn();
    const ms = performance.now() - start;
    const used = cpuUsage(startCpu);
    if (i >= 0) {
      wall[k]!.push(ms);
      cpu[k]! += used.user + used.system;
    }
  }
}
const mean = (values: number[]) =>
  values.reduce((a, b) => a + b, 0) / values.length;
const load = Deno.loadavg().map((l) => l.toFixed(2)).join(" ");
console.log(`${CALLS} calls per side, load ${load}`);
sides.forEach(([name], k) => {
  const us = (ms: number) => `${Math.round(ms * 1000)} us`;
  const ratio = k === 0
    ? ""
    : ` | ratio median ${
      (median(wall[k]!) / median(wall[0]!)).toFixed(3)
    }, mean ${(mean(wall[k]!) / mean(wall[0]!)).toFixed(3)}, CPU +${
      Math.round((cpu[k]! - cpu[0]!) / CALLS)
    } us`;
  console.log(
    `${name}: median ${us(median(wall[k]!))}, mean ${us(mean(wall[k]!))}, CPU ${
      Math.round(cpu[k]! / CALLS)
    } us${ratio}`,
  );
});
await provider.forceFlush();
if (events === 0) throw new Error("No event was observed");
