// dispatchToolCall() and tracing: the call's own id reaches the execute_tool
// span (a real tracer provider of the OpenTelemetry SDK, spans kept in memory).
import { trace } from "@opentelemetry/api";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { assert, assertEquals } from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { buildSkillTools } from "../builder.ts";
import { tempDir, writeSkill } from "../../tests/helpers/tools.ts";
import { dispatchToolCall } from "./dispatch.ts";

Deno.test("dispatchToolCall() gives the execute_tool span the OpenAI or Anthropic call's own id", async () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  trace.setGlobalTracerProvider(provider);
  try {
    await using dir = await tempDir();
    await writeSkill(dir.path, "alpha");
    const runtime = new LocalSkillRuntime({ cwd: dir.path });
    await using set = await buildSkillTools({ skills: dir.path, runtime });
    const calls = [
      // OpenAI Chat Completions tool call.
      {
        id: "call_openai_1",
        type: "function",
        function: { name: "ls", arguments: '{"path":"."}' },
      },
      // Anthropic tool_use block.
      {
        type: "tool_use",
        id: "toolu_anthropic_1",
        name: "ls",
        input: { path: "." },
      },
      // OpenAI Responses function_call.
      {
        type: "function_call",
        call_id: "call_responses_1",
        name: "ls",
        arguments: '{"path":"."}',
      },
    ];
    for (const call of calls) {
      const result = await dispatchToolCall(set.tools, call);
      assert(!result.isError, result.text);
    }
    // An explicit toolCallId still wins.
    await dispatchToolCall(set.tools, calls[0]!, { toolCallId: "given" });
    await provider.forceFlush();
    const ids = exporter.getFinishedSpans()
      .filter((span) => span.name === "execute_tool ls")
      .map((span) => span.attributes["gen_ai.tool.call.id"]);
    assertEquals(ids, [
      "call_openai_1",
      "toolu_anthropic_1",
      "call_responses_1",
      "given",
    ]);
  } finally {
    trace.disable();
    await provider.shutdown();
  }
});
