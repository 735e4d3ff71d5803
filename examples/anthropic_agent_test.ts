import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import {
  type AnthropicToolResultBlock,
  buildSkillTools,
  type Tool,
} from "../tools/mod.ts";
import {
  ANTHROPIC_VERSION,
  anthropicMessagesModel,
  type AssistantBlock,
  type MessagesRequest,
  type MessagesResponse,
  runAnthropicAgent,
} from "./anthropic_agent.ts";

const skillsDir = hostPath.fromFileUrl(new URL("./skills", import.meta.url));

function reply(...content: AssistantBlock[]): MessagesResponse {
  return {
    content,
    stop_reason: content.some((b) => b.type === "tool_use")
      ? "tool_use"
      : "end_turn",
  };
}

function use(id: string, name: string, input: unknown): AssistantBlock {
  return { type: "tool_use", id, name, input } as AssistantBlock;
}

function text(value: string): AssistantBlock {
  return { type: "text", text: value } as AssistantBlock;
}

function lastResults(request: MessagesRequest): AnthropicToolResultBlock[] {
  const last = request.messages.at(-1)!;
  assertEquals(last.role, "user");
  assert(Array.isArray(last.content), "tool results are blocks");
  return last.content as AnthropicToolResultBlock[];
}

const echo: Tool = {
  name: "echo",
  description: "Repeats the text",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string" } },
    required: ["text"],
    additionalProperties: false,
  },
  execute: (input) =>
    Promise.resolve({
      text: `echo: ${(input as { text: string }).text}`,
      isError: false,
    }),
};

Deno.test("the Anthropic loop runs skill then bash for a scripted model and returns its answer", async () => {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using runtime = await LocalSkillRuntime.create({
      conversationsRoot: temp,
      conversationId: "anthropic-test",
    });
    await using built = await buildSkillTools({
      skills: skillsDir,
      runtime,
      configs: {
        "csv-report": new SkillRuntimeConfig({
          env: { REPORT_TITLE: "Quarterly sales" },
          bootstrap: ["bash scripts/bootstrap.sh"],
        }),
      },
    });
    const requests: MessagesRequest[] = [];
    // A stand-in model: loads the skill, runs its script from the base
    // directory it was told, then answers with a figure from the report.
    const model = (request: MessagesRequest): Promise<MessagesResponse> => {
      requests.push(request);
      switch (requests.length) {
        case 1:
          return Promise.resolve(reply(
            text("I will load the skill."),
            use("toolu_1", "skill", { name: "csv-report" }),
          ));
        case 2: {
          const [loaded] = lastResults(request);
          assertEquals(loaded!.tool_use_id, "toolu_1");
          const base = /Base directory: (.+)/.exec(loaded!.content)?.[1];
          assert(base, "the skill tool names the base directory");
          return Promise.resolve(reply(use("toolu_2", "bash", {
            command:
              "bash scripts/report.sh data/sales.csv ../../report.md && cat ../../report.md",
            working_directory: base,
          })));
        }
        default: {
          const [report] = lastResults(request);
          const units = /\| units \| \d+ \| ([\d.]+) \|/.exec(report!.content)
            ?.[1];
          return Promise.resolve(reply(text(`Units sold: ${units}.`)));
        }
      }
    };
    const seen: string[] = [];
    const result = await runAnthropicAgent("Summarise the sales", {
      tools: built.tools,
      model,
      modelName: "stand-in",
      onToolCall: (record) => seen.push(record.name),
    });

    assertEquals(result.text, "Units sold: 50.00.");
    assertEquals(result.turns, 3);
    assertEquals(seen, ["skill", "bash"]);
    assertEquals(result.toolCalls.map((c) => c.isError), [false, false]);
    assertStringIncludes(result.toolCalls[0]!.text, "# CSV report");
    // Configured values are secrets: the report's title is redacted for the model.
    assertStringIncludes(result.toolCalls[1]!.text, "# [redacted]");
    assert(!JSON.stringify(requests).includes("Quarterly sales"));
    const first = requests[0]!;
    assertEquals(first.model, "stand-in");
    assertEquals(first.max_tokens, 4096);
    assertEquals(
      first.tools.map((t) => t.name),
      built.tools.map((t) => t.name),
    );
    assertEquals(
      requests[2]!.messages.map((m) => m.role),
      ["user", "assistant", "user", "assistant", "user"],
    );
    assertEquals(lastResults(requests[2]!)[0]!.is_error, false);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the Anthropic loop answers several tool_use blocks in one message, errors flagged", async () => {
  const requests: MessagesRequest[] = [];
  const result = await runAnthropicAgent("Go", {
    tools: [echo],
    model: (request) => {
      requests.push(request);
      if (requests.length === 1) {
        return Promise.resolve(reply(
          use("a", "nope", {}),
          use("b", "echo", { text: 42 }),
          use("c", "echo", { text: "ok" }),
        ));
      }
      return Promise.resolve(reply(text("first"), text("second")));
    },
  });
  assertEquals(result.text, "first\nsecond");
  const results = lastResults(requests[1]!);
  assertEquals(results.map((r) => r.tool_use_id), ["a", "b", "c"]);
  assertEquals(results.map((r) => r.is_error), [true, false, false]);
  assertStringIncludes(results[0]!.content, 'Unknown tool "nope"');
  assertEquals(results[2]!.content, "echo: ok");
});

Deno.test("the Anthropic loop stops after maxTurns when the model keeps calling tools", async () => {
  let calls = 0;
  await assertRejects(
    () =>
      runAnthropicAgent("Loop", {
        tools: [echo],
        maxTurns: 2,
        model: () => {
          calls++;
          return Promise.resolve(
            reply(use(`t${calls}`, "echo", { text: "x" })),
          );
        },
      }),
    RangeError,
    "after 2 turns",
  );
  assertEquals(calls, 2);
});

Deno.test("anthropicMessagesModel() posts the request with the key and version over HTTP", async () => {
  const bodies: MessagesRequest[] = [];
  const headers: Headers[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      assertEquals(new URL(request.url).pathname, "/v1/messages");
      headers.push(request.headers);
      const body = await request.json() as MessagesRequest;
      bodies.push(body);
      return Response.json(
        bodies.length === 1
          ? reply(use("toolu_1", "echo", { text: "over http" }))
          : reply(text(`heard: ${lastResults(body)[0]!.content}`)),
      );
    },
  );
  const model = anthropicMessagesModel({
    apiKey: "sk-ant-test",
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
  });
  const result = await runAnthropicAgent("Say it", {
    tools: [echo],
    model,
    modelName: "claude-test",
    maxTokens: 100,
  });
  assertEquals(result.text, "heard: echo: over http");
  assertEquals(headers[0]!.get("x-api-key"), "sk-ant-test");
  assertEquals(headers[0]!.get("anthropic-version"), ANTHROPIC_VERSION);
  assertEquals(bodies[0]!.model, "claude-test");
  assertEquals(bodies[0]!.max_tokens, 100);
  assertEquals<unknown>(bodies[0]!.tools[0]!.input_schema, echo.inputSchema);
});

Deno.test("anthropicMessagesModel() turns an HTTP error into an error naming the status and the API's message", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      Response.json({
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
      }, { status: 401 }),
  );
  const model = anthropicMessagesModel({
    apiKey: "sk-ant-wrong",
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
  });
  await assertRejects(
    () => runAnthropicAgent("Hi", { tools: [], model }),
    Error,
    "Anthropic API error 401: invalid x-api-key",
  );
});
