/**
 * In-process A/B of issue 18's overhead: the `bash` tool running `true`, in
 * one process, sides interleaved over 30 rounds (so machine load hits every
 * side alike): nothing listening; an event listener; an OpenTelemetry SDK
 * (batching OTLP/HTTP exporter to a loopback receiver, AsyncLocalStorage
 * context) registered and removed between sides. `flush` as first argument
 * also flushes the exporter after each side's five calls.
 *
 * `deno run -A bench/observe_ab.ts [flush]`
 *
 * @module
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { buildSkillTools } from "../tools/builder.ts";
let exported = 0;
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen() {} },
  async (r) => {
    const b = await r.json() as {
      resourceSpans: { scopeSpans: { spans: unknown[] }[] }[];
    };
    for (const x of b.resourceSpans) {
      for (const s of x.scopeSpans) {
        exported += s.spans.length;
      }
    }
    return Response.json({});
  },
);
server.unref();
const provider = new TracerProvider({
  spanProcessors: [
    new BatchSpanProcessor({
      exporter: new OTLPTraceExporter({
        url: `http://127.0.0.1:${server.addr.port}/v1/traces`,
      }),
    }),
  ],
});
const manager = new AsyncLocalStorageContextManager();
const on = () => {
  manager.enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
};
const off = () => {
  trace.disable();
  context.disable();
  propagation.disable();
  manager.disable();
};
const plain = (await buildSkillTools({ tools: ["bash"] })).tool("bash")!;
let n = 0;
const ev = (await buildSkillTools({
  tools: ["bash"],
  onEvent: () => {
    n++;
  },
})).tool("bash")!;
const sides: [string, () => void, () => Promise<unknown>][] = [
  ["nothing", off, () => plain.execute({ command: "true" })],
  [
    "events+otel",
    on,
    () => ev.execute({ command: "true" }, { toolCallId: "x" }),
  ],
  ["otel only", on, () => plain.execute({ command: "true" })],
  ["events only", off, () => ev.execute({ command: "true" })],
];
const times: Record<string, number[]> = {};
for (let round = 0; round < 30; round++) {
  for (const [name, setup, fn] of sides) {
    setup();
    const t = performance.now();
    for (let i = 0; i < 5; i++) await fn();
    if (name.includes("otel") && Deno.args[0] === "flush") {
      await provider.forceFlush();
    }
    (times[name] ??= []).push((performance.now() - t) / 5);
  }
}
for (const [name, list] of Object.entries(times)) {
  list.sort((a, b) => a - b);
  console.log(name, list[list.length >> 1]!.toFixed(3), "ms/call");
}
await provider.forceFlush();
console.log("exported", exported, "events", n);
