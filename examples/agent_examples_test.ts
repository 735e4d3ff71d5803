// The agent examples run as their READMEs say, with a key, against a
// stand-in of the provider's API on loopback (`*_BASE_URL`).
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));

/** The `--allow-*` flags of the README's command line for `file`. */
async function documentedFlags(file: string): Promise<string[]> {
  const readme = await Deno.readTextFile(
    hostPath.join(repo, "examples", "README.md"),
  );
  const line = new RegExp(
    `\\bdeno(?:@[\\d.]+)? run ([^\`\\n]*?)examples/${file}`,
  ).exec(
    readme.replaceAll("\\\n", " "),
  )?.[1];
  assert(line, `examples/README.md shows how to run ${file}`);
  const flags = line.split(/\s+/).filter((word) => word !== "");
  assert(flags.every((flag) => flag.startsWith("--allow-")), line);
  return flags;
}

/** A scripted model: loads csv-report, runs its script, answers. */
type Turn = (toolResult: string | undefined) => {
  tool?: { name: string; input: Record<string, unknown> };
  text?: string;
};

const script: Turn[] = [
  () => ({ tool: { name: "skill", input: { name: "csv-report" } } }),
  (result) => {
    const base = /Base directory: (.+)/.exec(result ?? "")?.[1];
    assert(base, `the skill tool names its base directory: ${result}`);
    return {
      tool: {
        name: "bash",
        input: {
          command:
            "bash scripts/report.sh data/sales.csv ../../r.md && grep revenue ../../r.md",
          working_directory: base,
        },
      },
    };
  },
  (result) => ({ text: `Done. ${result?.trim()}` }),
];

interface Provider {
  file: string;
  env: string;
  path: string;
  /** The last tool result in a request, if any. */
  toolResult(body: Record<string, unknown>): string | undefined;
  /** A response body for a turn. */
  respond(turn: ReturnType<Turn>, n: number): unknown;
}

const providers: Provider[] = [{
  file: "openai_agent.ts",
  env: "OPENAI",
  path: "/v1/chat/completions",
  toolResult: (body) => {
    const last = (body.messages as { role: string; content: string }[]).at(-1);
    return last?.role === "tool" ? last.content : undefined;
  },
  respond: (turn, n) => ({
    choices: [{
      message: {
        role: "assistant",
        content: turn.text ?? null,
        ...(turn.tool
          ? {
            tool_calls: [{
              id: `call_${n}`,
              type: "function",
              function: {
                name: turn.tool.name,
                arguments: JSON.stringify(turn.tool.input),
              },
            }],
          }
          : {}),
      },
      finish_reason: turn.tool ? "tool_calls" : "stop",
    }],
  }),
}, {
  file: "anthropic_agent.ts",
  env: "ANTHROPIC",
  path: "/v1/messages",
  toolResult: (body) => {
    const last = (body.messages as { content: unknown }[]).at(-1)?.content;
    if (!Array.isArray(last)) return undefined;
    const content = (last[0] as { content: unknown }).content;
    return typeof content === "string"
      ? content
      : (content as { text: string }[]).map((b) => b.text).join("");
  },
  respond: (turn, n) => ({
    content: turn.tool
      ? [{ type: "tool_use", id: `toolu_${n}`, ...turn.tool }]
      : [{ type: "text", text: turn.text }],
    stop_reason: turn.tool ? "tool_use" : "end_turn",
  }),
}];

for (const provider of providers) {
  Deno.test(`examples/${provider.file} runs as its README says, with a key`, async () => {
    let turns = 0;
    const keys: (string | null)[] = [];
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (request) => {
        assertEquals(new URL(request.url).pathname, provider.path);
        keys.push(
          request.headers.get("x-api-key") ??
            request.headers.get("authorization"),
        );
        const body = await request.json() as Record<string, unknown>;
        const turn = script[turns]!(provider.toolResult(body));
        turns++;
        return Response.json(provider.respond(turn, turns));
      },
    );
    const flags = (await documentedFlags(provider.file)).map((flag) =>
      flag.startsWith("--allow-net=")
        ? `--allow-net=127.0.0.1:${server.addr.port}`
        : flag
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, `examples/${provider.file}`, "Summarise it"],
      cwd: repo,
      env: {
        NO_COLOR: "1",
        [`${provider.env}_API_KEY`]: "sk-test-key",
        [`${provider.env}_BASE_URL`]: `http://127.0.0.1:${server.addr.port}/v1`,
      },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    const workspace = /\(workspace: (.+)\)/.exec(stderr)?.[1];
    try {
      assertEquals(output.code, 0, stderr);
      assertEquals(turns, 3);
      assert(keys.every((key) => key?.endsWith("sk-test-key")), "key sent");
      assertEquals(
        stdout,
        "Done. csv-report: wrote ../../r.md\n" +
          "| revenue | 6 | 863.38 | 26.00 | 269.91 | 143.90 |\n",
      );
      assertStringIncludes(stderr, '→ skill {"name":"csv-report"}');
      assertStringIncludes(stderr, "→ bash ");
      assert(workspace?.startsWith(hostPath.join(repo, ".skillrun")), stderr);
      assertStringIncludes(
        await Deno.readTextFile(hostPath.join(workspace!, "r.md")),
        "# Sales report\n",
      );
    } finally {
      if (workspace) await Deno.remove(workspace, { recursive: true });
    }
  });
}

for (const provider of providers) {
  Deno.test(`examples/${provider.file} ends with one clear line when the key or the network is missing`, async () => {
    const flags = await documentedFlags(provider.file);
    // A port nothing listens on: open one, then close it.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    listener.close();
    const cases = [
      {
        env: {} as Record<string, string>,
        line: `error: Cannot call the ${
          provider.env === "OPENAI" ? "OpenAI" : "Anthropic"
        } API: set ${provider.env}_API_KEY or pass apiKey\n`,
        net: flags,
      },
      {
        env: {
          [`${provider.env}_API_KEY`]: "sk-test-key",
          [`${provider.env}_BASE_URL`]: `http://127.0.0.1:${port}/v1`,
        },
        line: `error: Cannot reach http://127.0.0.1:${port}/v1/`,
        net: flags.map((flag) =>
          flag.startsWith("--allow-net=")
            ? `--allow-net=127.0.0.1:${port}`
            : flag
        ),
      },
    ];
    for (const { env, line, net } of cases) {
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", ...net, `examples/${provider.file}`],
        cwd: repo,
        clearEnv: true,
        env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "", ...env },
        stdin: "null",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assertEquals(output.code, 1, stderr);
      assert(stderr.startsWith(line), stderr);
      assertEquals(stderr.trimEnd().split("\n").length, 1, stderr);
    }
  });
}
