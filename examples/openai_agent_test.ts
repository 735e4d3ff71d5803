import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { buildSkillTools, type Tool } from "../tools/mod.ts";
import {
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ChatToolCall,
  openAIChatModel,
  runOpenAIAgent,
} from "./openai_agent.ts";

const skillsDir = hostPath.fromFileUrl(new URL("./skills", import.meta.url));

function reply(
  content: string | null,
  toolCalls?: ChatToolCall[],
): ChatResponse {
  return {
    choices: [{
      message: {
        role: "assistant",
        content,
        ...(toolCalls ? { tool_calls: toolCalls } : {}),
      },
      finish_reason: toolCalls ? "tool_calls" : "stop",
    }],
  };
}

function call(id: string, name: string, args: unknown): ChatToolCall {
  return {
    id,
    type: "function",
    function: { name, arguments: JSON.stringify(args) },
  };
}

function lastToolMessage(request: ChatRequest): string {
  const last = request.messages.at(-1) as Extract<
    ChatMessage,
    { role: "tool" }
  >;
  assertEquals(last.role, "tool");
  return last.content;
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

Deno.test("the OpenAI loop runs skill then bash for a scripted model and returns its answer", async () => {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using runtime = await LocalSkillRuntime.create({
      conversationsRoot: temp,
      conversationId: "openai-test",
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
    const requests: ChatRequest[] = [];
    // A stand-in model: loads the skill, runs its script from the base
    // directory it was told, then answers with a figure from the report.
    const model = (request: ChatRequest): Promise<ChatResponse> => {
      requests.push(request);
      switch (requests.length) {
        case 1:
          return Promise.resolve(
            reply(null, [call("call_1", "skill", { name: "csv-report" })]),
          );
        case 2: {
          const base = /Base directory: (.+)/.exec(lastToolMessage(request))
            ?.[1];
          assert(base, "the skill tool names the base directory");
          return Promise.resolve(reply("Running the report.", [
            call("call_2", "bash", {
              command:
                "bash scripts/report.sh data/sales.csv ../../report.md && cat ../../report.md",
              working_directory: base,
            }),
          ]));
        }
        default: {
          const report = lastToolMessage(request);
          const revenue = /\| revenue \| \d+ \| ([\d.]+) \|/.exec(report)?.[1];
          return Promise.resolve(reply(`Total revenue: ${revenue}.`));
        }
      }
    };
    const seen: string[] = [];
    const result = await runOpenAIAgent("Summarise the sales", {
      tools: built.tools,
      model,
      modelName: "stand-in",
      onToolCall: (record) => seen.push(record.name),
    });

    assertEquals(result.text, "Total revenue: 863.38.");
    assertEquals(result.turns, 3);
    assertEquals(seen, ["skill", "bash"]);
    assertEquals(result.toolCalls.map((c) => c.isError), [false, false]);
    assertStringIncludes(result.toolCalls[0]!.text, "# CSV report");
    // Configured values are secrets: the report's title is redacted for the model.
    assertStringIncludes(result.toolCalls[1]!.text, "# [redacted]");
    assert(!JSON.stringify(requests).includes("Quarterly sales"));
    const first = requests[0]!;
    assertEquals(first.model, "stand-in");
    assertEquals(
      first.tools.map((t) => t.function.name),
      built.tools.map((t) => t.name),
    );
    assertEquals(first.messages.map((m) => m.role), ["system", "user"]);
    assertEquals(
      requests[2]!.messages.map((m) => m.role),
      ["system", "user", "assistant", "tool", "assistant", "tool"],
    );
    const answered = requests[2]!.messages.filter((m) => m.role === "tool")
      .map((m) => (m as { tool_call_id: string }).tool_call_id);
    assertEquals(answered, ["call_1", "call_2"]);
    assertEquals(
      await Deno.readTextFile(hostPath.join(temp, "openai-test", "report.md"))
        .then((text) => text.startsWith("# Quarterly sales")),
      true,
    );
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the OpenAI loop answers bad tool calls with error messages and goes on", async () => {
  const requests: ChatRequest[] = [];
  const result = await runOpenAIAgent("Go", {
    tools: [echo],
    model: (request) => {
      requests.push(request);
      if (requests.length === 1) {
        return Promise.resolve(reply(null, [
          call("a", "nope", {}),
          {
            id: "b",
            type: "function",
            function: { name: "echo", arguments: "{not json" },
          },
          call("c", "echo", { text: "ok" }),
        ]));
      }
      return Promise.resolve(reply("done"));
    },
  });
  assertEquals(result.text, "done");
  const tools = requests[1]!.messages.filter((m) => m.role === "tool") as {
    content: string;
  }[];
  assertEquals(tools.length, 3);
  assert(tools[0]!.content.startsWith('Error: Unknown tool "nope"'));
  assert(
    tools[1]!.content.startsWith('Error: Invalid arguments for tool "echo"'),
  );
  assertEquals(tools[2]!.content, "echo: ok");
});

Deno.test("the OpenAI loop stops after maxTurns when the model keeps calling tools", async () => {
  let calls = 0;
  await assertRejects(
    () =>
      runOpenAIAgent("Loop", {
        tools: [echo],
        maxTurns: 3,
        model: () => {
          calls++;
          return Promise.resolve(
            reply(null, [call(`c${calls}`, "echo", { text: "again" })]),
          );
        },
      }),
    RangeError,
    "after 3 turns",
  );
  assertEquals(calls, 3);
});

Deno.test("openAIChatModel() posts the request with the key and reads the response over HTTP", async () => {
  const bodies: ChatRequest[] = [];
  const headers: Headers[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      assertEquals(new URL(request.url).pathname, "/v1/chat/completions");
      headers.push(request.headers);
      const body = await request.json() as ChatRequest;
      bodies.push(body);
      return Response.json(
        bodies.length === 1
          ? reply(null, [call("call_1", "echo", { text: "over http" })])
          : reply(`heard: ${lastToolMessage(body)}`),
      );
    },
  );
  const model = openAIChatModel({
    apiKey: "sk-test",
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1/`,
  });
  const result = await runOpenAIAgent("Say it", {
    tools: [echo],
    model,
    modelName: "gpt-test",
  });
  assertEquals(result.text, "heard: echo: over http");
  assertEquals(headers[0]!.get("authorization"), "Bearer sk-test");
  assertEquals(bodies[0]!.model, "gpt-test");
  assertEquals(bodies[0]!.tools[0]!.function.name, "echo");
  assertEquals<unknown>(
    bodies[0]!.tools[0]!.function.parameters,
    echo.inputSchema,
  );
});

Deno.test("openAIChatModel() turns an HTTP error into an error naming the status and the API's message", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      Response.json({ error: { message: "Incorrect API key" } }, {
        status: 401,
      }),
  );
  const model = openAIChatModel({
    apiKey: "sk-wrong",
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
  });
  await assertRejects(
    () => runOpenAIAgent("Hi", { tools: [], model }),
    Error,
    "OpenAI API error 401: Incorrect API key",
  );
});
