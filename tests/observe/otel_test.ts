import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { assert, assertEquals } from "../helpers/assert.ts";
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/mod.ts";
import { startOpenSandboxServer } from "../../tests/servers/opensandbox.ts";
import { buildSkillTools } from "../../tools/builder.ts";
import { tempDir, writeSkill } from "../helpers/tools.ts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
}

/** A real OTLP/HTTP receiver: decodes the JSON export requests it gets. */
function startReceiver() {
  const spans: OtlpSpan[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      if (new URL(request.url).pathname !== "/v1/traces") {
        return new Response("not found", { status: 404 });
      }
      assertEquals(request.headers.get("content-type"), "application/json");
      const body = await request.json() as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const resource of body.resourceSpans) {
        for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      return Response.json({});
    },
  );
  return {
    spans,
    url: `http://127.0.0.1:${server.addr.port}/v1/traces`,
    close: () => server.shutdown(),
  };
}

function attr(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
}

Deno.test("spans reach a real OTLP receiver with GenAI attributes, parent links and traceparent on remote calls", async () => {
  const receiver = startReceiver();
  const provider = new TracerProvider({
    spanProcessors: [
      new SimpleSpanProcessor({
        exporter: new OTLPTraceExporter({ url: receiver.url }),
      }),
    ],
  });
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  try {
    await using dir = await tempDir();
    await writeSkill(`${dir.path}/skills`, "alpha");
    await using server = await startOpenSandboxServer({
      apiKey: "otel-key-123456",
    });
    const traceparents: string[] = [];
    const runtime = new OpenSandboxSkillRuntime({
      baseUrl: server.url,
      apiKey: "otel-key-123456",
      cwd: dir.path,
      skillsRoot: `${dir.path}/uploaded`,
      fetch: (input, init) => {
        const header = new Headers(init?.headers).get("traceparent");
        if (header) traceparents.push(header);
        return fetch(input, init);
      },
    });
    await using set = await buildSkillTools({
      skills: `${dir.path}/skills`,
      runtime,
      configs: { alpha: { bootstrap: ["echo boot"] } },
    });
    const loaded = await set.tool("skill")!.execute({ name: "alpha" }, {
      toolCallId: "call-otel-1",
    });
    assert(!loaded.isError, loaded.text);
    const failed = await set.tool("bash")!.execute({ command: "exit 3" }, {
      toolCallId: "call-otel-2",
    });
    assert(failed.isError, failed.text);
    await runtime.close();
    await provider.forceFlush();

    const spans = receiver.spans;
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const ancestors = (span: OtlpSpan): OtlpSpan[] => {
      const out: OtlpSpan[] = [];
      let parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
      while (parent) {
        out.push(parent);
        parent = parent.parentSpanId
          ? byId.get(parent.parentSpanId)
          : undefined;
      }
      return out;
    };
    const skillSpan = spans.find((s) => s.name === "execute_tool skill")!;
    assert(skillSpan, spans.map((s) => s.name).join(", "));
    assertEquals(attr(skillSpan, "gen_ai.operation.name"), "execute_tool");
    assertEquals(attr(skillSpan, "gen_ai.tool.name"), "skill");
    assertEquals(attr(skillSpan, "gen_ai.tool.call.id"), "call-otel-1");
    assertEquals(skillSpan.status?.code ?? 0, 0);

    const prepare = spans.find((s) => s.name === "prepare_skill alpha")!;
    assertEquals(prepare.parentSpanId, skillSpan.spanId);
    assertEquals(prepare.traceId, skillSpan.traceId);

    // HTTP calls made for the preparation are client spans under it.
    const http = spans.filter((s) => attr(s, "http.request.method"));
    const underPrepare = http.filter((s) => ancestors(s).includes(prepare));
    assert(underPrepare.length >= 2, String(underPrepare.length));
    for (const span of underPrepare) {
      assertEquals(span.kind, 3); // SPAN_KIND_CLIENT
      assert(
        String(attr(span, "url.full")).startsWith(new URL(server.url).origin),
      );
      assert(typeof attr(span, "http.response.status_code") === "number");
    }
    // Each carried its trace to the server.
    const traceIds = new Set(traceparents.map((t) => t.split("-")[1]));
    assert(traceIds.has(skillSpan.traceId), [...traceIds].join(","));
    const sentIds = new Set(traceparents.map((t) => t.split("-")[2]));
    for (const span of underPrepare) {
      assert(sentIds.has(span.spanId), `${span.spanId} not in ${[...sentIds]}`);
    }

    const bashSpan = spans.find((s) => s.name === "execute_tool bash")!;
    assertEquals(attr(bashSpan, "gen_ai.tool.call.id"), "call-otel-2");
    assertEquals(bashSpan.status?.code, 2); // STATUS_CODE_ERROR
    const execute = spans.find((s) => s.name === "runtime.execute")!;
    assertEquals(execute.parentSpanId, bashSpan.spanId);
    assertEquals(attr(execute, "process.exit.code"), 3);
    assert(
      http.some((s) => ancestors(s).includes(execute)),
      "the command's HTTP calls are under runtime.execute",
    );
    assert(!JSON.stringify(spans).includes("otel-key-123456"));
  } finally {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
    await receiver.close();
  }
});
