import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import denoJson from "../deno.json" with { type: "json" };
import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ElicitRequestSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { buildSkillTools } from "../tools/mod.ts";
import { parseListenAddress } from "./_mcp_http.ts";
import { mcpCommand } from "./mcp.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
} from "../runtimes/local/isolated.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));
const cli = hostPath.join(repo, "cli.ts");
const exampleSkills = hostPath.join(repo, "examples", "skills");

interface TextContent {
  type: string;
  text: string;
}

function texts(result: Record<string, unknown>): string {
  return (result.content as TextContent[]).map((c) => c.text).join("\n");
}

async function withServer(
  fn: (client: Client, root: string) => Promise<void>,
  config?: unknown,
  flags: readonly string[] = [],
  client: Client = new Client({ name: "cli-test", version: "1.0.0" }),
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const extra: string[] = [...flags];
  if (config !== undefined) {
    const file = hostPath.join(root, "config.json");
    await Deno.writeTextFile(file, JSON.stringify(config));
    extra.push("--config", file);
  }
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--allow-read=${repo},${root}`,
      `--allow-write=${root}`,
      "--allow-run",
      "--allow-env",
      cli,
      "mcp",
      "--skills",
      "examples/skills",
      "--conversation",
      "mcp-test",
      "--root",
      root,
      ...extra,
    ],
    cwd: repo,
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  try {
    await client.connect(transport);
    await fn(client, root);
  } finally {
    await client.close();
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("mcp serves the skill tools with their JSON Schemas to an MCP client over stdio", async () => {
  await using expected = await buildSkillTools({ skills: exampleSkills });
  await withServer(async (client, root) => {
    assertEquals(client.getServerVersion(), {
      name: denoJson.name,
      version: denoJson.version,
    });
    assertStringIncludes(
      client.getInstructions() ?? "",
      `resolve, in ${hostPath.join(root, "mcp-test")}`,
    );
    const { tools } = await client.listTools();
    assertEquals(
      tools.map((t) => t.name),
      [
        "skill",
        "bash",
        "bash_output",
        "kill_bash",
        "read",
        "write",
        "edit",
        "ls",
        "glob",
        "grep",
      ],
    );
    for (const tool of tools) {
      const ours = expected.tool(tool.name);
      assert(ours, tool.name);
      assertEquals(
        tool.inputSchema,
        JSON.parse(JSON.stringify(ours.inputSchema)),
        tool.name,
      );
    }
    const skill = tools.find((t) => t.name === "skill")!;
    assertStringIncludes(skill.description ?? "", "csv-report");
    assertStringIncludes(skill.description ?? "", "json-to-table");
    const { prompts } = await client.listPrompts();
    assertEquals(prompts.map((p) => p.name), ["csv-report", "json-to-table"]);
    const { resources } = await client.listResources();
    assert(resources.some((r) => r.uri === "skill://csv-report/SKILL.md"));
  });
});

Deno.test("mcp takes several skill folders: --skills repeated and comma lists", async () => {
  for (
    const flags of [["--skills", "examples/edge/skills"], [
      "--skills",
      "examples/edge/skills/word-count,examples/edge/skills/sandbox-facts",
    ]]
  ) {
    await withServer(
      async (client) => {
        const { tools } = await client.listTools();
        const skill = tools.find((t) => t.name === "skill")!;
        for (const name of ["csv-report", "word-count", "sandbox-facts"]) {
          assertStringIncludes(skill.description ?? "", `<name>${name}</name>`);
        }
      },
      undefined,
      flags,
    );
  }
});

Deno.test("mcp calls skill and bash in the conversation workspace", async () => {
  await withServer(async (client, root) => {
    const loaded = await client.callTool({
      name: "skill",
      arguments: { name: "csv-report" },
    });
    assertEquals(loaded.isError, false, texts(loaded));
    assertStringIncludes(texts(loaded), "# CSV report");
    assertStringIncludes(texts(loaded), "scripts/report.sh");
    const workspace = hostPath.join(root, "mcp-test");
    assertStringIncludes(texts(loaded), hostPath.join(workspace, "skills"));

    const ran = await client.callTool({
      name: "bash",
      arguments: { command: "pwd && ls skills/*/scripts" },
    });
    assertEquals(ran.isError, false, texts(ran));
    assertStringIncludes(texts(ran), workspace);
    assertStringIncludes(texts(ran), "report.sh");

    const written = await client.callTool({
      name: "write",
      arguments: { file_path: "notes/a.txt", content: "hello\n" },
    });
    assertEquals(written.isError, false, texts(written));
    assertEquals(
      await Deno.readTextFile(hostPath.join(workspace, "notes", "a.txt")),
      "hello\n",
    );
  });
});

Deno.test("mcp without --root works in the absolute XDG state place, whatever folder it starts in", async () => {
  const state = await Deno.realPath(await Deno.makeTempDir());
  const elsewhere = await Deno.realPath(await Deno.makeTempDir());
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--allow-all",
      cli,
      "mcp",
      "--skills",
      exampleSkills,
      "--conversation",
      "from-anywhere",
    ],
    cwd: elsewhere,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", XDG_STATE_HOME: state },
    stderr: "pipe",
  });
  const client = new Client({ name: "cli-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    const ran = await client.callTool({
      name: "bash",
      arguments: { command: "pwd" },
    });
    assertEquals(ran.isError, false, texts(ran));
    assertStringIncludes(
      texts(ran),
      hostPath.join(state, "skillrun", "conversations", "from-anywhere"),
    );
    // Nothing was made in the folder it started in.
    assertEquals([...Deno.readDirSync(elsewhere)], []);
  } finally {
    await client.close();
    await Deno.remove(state, { recursive: true });
    await Deno.remove(elsewhere, { recursive: true });
  }
});

Deno.test("mcp --config prepares a skill with its environment and bootstrap, values hidden from the model", async () => {
  await withServer(async (client, root) => {
    const loaded = await client.callTool({
      name: "skill",
      arguments: { name: "csv-report" },
    });
    assertEquals(loaded.isError, false, texts(loaded));
    const ran = await client.callTool({
      name: "bash",
      arguments: {
        command: "bash scripts/report.sh data/sales.csv ../../report.md",
        working_directory: /Base directory: (.+)/.exec(texts(loaded))![1],
      },
    });
    assertEquals(ran.isError, false, texts(ran));
    const read = await client.callTool({
      name: "read",
      arguments: { file_path: "report.md" },
    });
    assertStringIncludes(texts(read), "# [redacted]");
    assert(!texts(read).includes("Served title"));
    const report = await Deno.readTextFile(
      hostPath.join(root, "mcp-test", "report.md"),
    );
    assert(report.startsWith("# Served title\n"), report);
  }, {
    "csv-report": {
      env: { REPORT_TITLE: "Served title" },
      bootstrap: ["bash scripts/bootstrap.sh"],
    },
  });
});

Deno.test("mcp returns failures as tool errors, never protocol errors", async () => {
  await withServer(async (client) => {
    const unknownSkill = await client.callTool({
      name: "skill",
      arguments: { name: "no-such-skill" },
    });
    assertEquals(unknownSkill.isError, true);
    assertStringIncludes(texts(unknownSkill), "no-such-skill");

    const missing = await client.callTool({
      name: "read",
      arguments: { file_path: "missing.txt" },
    });
    assertEquals(missing.isError, true);
    assertStringIncludes(texts(missing), "missing.txt");

    const escape = await client.callTool({
      name: "read",
      arguments: { file_path: "/etc/passwd" },
    });
    assertEquals(escape.isError, true);

    const badInput = await client.callTool({
      name: "bash",
      arguments: { command: 42 },
    });
    assertEquals(badInput.isError, true);
    assertStringIncludes(texts(badInput), "command");

    const unknownTool = await client.callTool({ name: "nope", arguments: {} });
    assertEquals(unknownTool.isError, true);
    assertMatch(texts(unknownTool), /Unknown tool "nope"/);
  });
});

Deno.test("mcp --help prints its usage; bad options and configurations are refused", async () => {
  const run = async (args: string[]) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "-A", cli, "mcp", ...args],
      cwd: repo,
      stdin: "null",
      env: { NO_COLOR: "1" },
    }).output();
    return {
      code: output.code,
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
  };
  const help = await run(["--help"]);
  assertEquals(help.code, 0, help.stderr);
  assertMatch(help.stdout, /^Usage: skillrun mcp --skills <dir>/);
  const missing = await run([]);
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, 'Option "--skills" is required');
  const extra = await run(["--skills", "examples/skills", "extra"]);
  assertEquals(extra.code, 2);
  assertStringIncludes(extra.stderr, 'Unexpected argument "extra"');
  const config = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(config, '{"no-such-skill": {}}');
    const unknown = await run([
      "--skills",
      "examples/skills",
      "--config",
      config,
    ]);
    assertEquals(unknown.code, 1);
    assertStringIncludes(unknown.stderr, '"no-such-skill"');
    await Deno.writeTextFile(config, "{");
    const broken = await run([
      "--skills",
      "examples/skills",
      "--config",
      config,
    ]);
    assertEquals(broken.code, 2);
    assertStringIncludes(broken.stderr, "not valid JSON");
  } finally {
    await Deno.remove(config);
  }
});

/** `cli.ts mcp --http 127.0.0.1:0` in a subprocess, its URL read from stdout. */
async function withHttpServer(
  fn: (url: URL, root: string) => Promise<void>,
  env: Record<string, string> = {},
  extraArgs: string[] = [],
): Promise<{ code: number; stderr: string }> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--allow-read=${repo},${root}`,
      `--allow-write=${root}`,
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      cli,
      "mcp",
      "--skills",
      "examples/skills",
      "--root",
      root,
      "--http",
      "127.0.0.1:0",
      ...extraArgs,
    ],
    cwd: repo,
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  try {
    while (!first.includes("\n")) {
      const { done, value } = await lines.read();
      if (done) break;
      first += value;
    }
    if (!/^http:\/\/127\.0\.0\.1:\d+\/mcp\n$/.test(first)) {
      child.kill("SIGTERM");
      throw new Error(`No URL on stdout: "${first}"\n${await stderr}`);
    }
    await fn(new URL(first.trim()), root);
  } finally {
    child.kill("SIGTERM");
    await lines.cancel();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
  const status = await child.status;
  return { code: status.code, stderr: await stderr };
}

Deno.test("mcp --http serves the tools, prompts and resources over HTTP, one workspace per session", async () => {
  const { code, stderr } = await withHttpServer(async (url, root) => {
    const sessions = [];
    for (let i = 0; i < 2; i++) {
      const transport = new StreamableHTTPClientTransport(url);
      const client = new Client({ name: "cli-http-test", version: "1.0.0" });
      await client.connect(transport);
      sessions.push({ client, transport });
    }
    try {
      for (const { client, transport } of sessions) {
        const { tools } = await client.listTools();
        assertEquals(
          tools.map((t) => t.name),
          [
            "skill",
            "bash",
            "bash_output",
            "kill_bash",
            "read",
            "write",
            "edit",
            "ls",
            "glob",
            "grep",
          ],
        );
        const ran = await client.callTool({
          name: "bash",
          arguments: { command: "pwd" },
        });
        assertEquals(
          texts(ran).trim(),
          hostPath.join(root, transport.sessionId!),
        );
        const loaded = await client.callTool({
          name: "skill",
          arguments: { name: "csv-report" },
        });
        assertEquals(loaded.isError, false, texts(loaded));
        const { prompts } = await client.listPrompts();
        assertEquals(prompts.map((p) => p.name), [
          "csv-report",
          "json-to-table",
        ]);
        const skillMd = await client.readResource({
          uri: "skill://csv-report/SKILL.md",
        });
        assertStringIncludes(
          (skillMd.contents[0] as { text: string }).text,
          "# CSV report",
        );
      }
      await sessions[0]!.transport.terminateSession();
    } finally {
      for (const { client } of sessions) await client.close();
    }
  });
  assertEquals(code, 0, stderr);
});

Deno.test("mcp --http asks for the bearer token of SKILLRUN_MCP_TOKEN", async () => {
  const token = "cli-token-value";
  const { code, stderr } = await withHttpServer(async (url) => {
    const refused = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    });
    await refused.body?.cancel();
    assertEquals(refused.status, 401);
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: "cli-http-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      assertEquals((await client.listTools()).tools.length, 10);
    } finally {
      await client.close();
    }
  }, { SKILLRUN_MCP_TOKEN: token });
  assertEquals(code, 0, stderr);
  assert(!stderr.includes(token));
});

Deno.test("mcp --http refuses a bad address and a fixed conversation", async () => {
  const chunks: Uint8Array[] = [];
  const sink = {
    write: (b: Uint8Array) => (chunks.push(b), Promise.resolve(b.length)),
  };
  const run = (args: string[]) =>
    mcpCommand(["--skills", exampleSkills, ...args], {
      streams: { stdout: sink, stderr: sink },
    });
  const text = () =>
    new TextDecoder().decode(
      chunks.splice(0).reduce(
        (a, b) => new Uint8Array([...a, ...b]),
        new Uint8Array(),
      ),
    );
  assertEquals(await run(["--http", "localhost:99999"]), 2);
  assertStringIncludes(
    text(),
    'Cannot listen on "localhost:99999": expected [host:]port with a port from 0 to 65535',
  );
  assertEquals(await run(["--http", "x:y"]), 2);
  assertStringIncludes(text(), 'Cannot listen on "x:y"');
  assertEquals(await run(["--json-response"]), 2);
  assertStringIncludes(text(), 'Option "--json-response" needs "--http"');
  assertEquals(await run(["--http", "0", "--conversation", "c1"]), 2);
  assertStringIncludes(
    text(),
    'Option "--conversation" does not go with "--http"',
  );
  assertEquals(await run(["--http", "0", "--sweep-interval", "0"]), 2);
  assertStringIncludes(
    text(),
    'Option "--sweep-interval" takes a positive whole number, not "0"',
  );
});

Deno.test("parseListenAddress() reads [host:]port", () => {
  assertEquals(parseListenAddress("8080"), {
    hostname: "127.0.0.1",
    port: 8080,
  });
  assertEquals(parseListenAddress("0.0.0.0:0"), {
    hostname: "0.0.0.0",
    port: 0,
  });
  assertEquals(parseListenAddress("[::1]:9000"), {
    hostname: "::1",
    port: 9000,
  });
  assertEquals(parseListenAddress("localhost:1"), {
    hostname: "localhost",
    port: 1,
  });
});

Deno.test("mcp --http --json-response answers with plain JSON", async () => {
  const { code, stderr } = await withHttpServer(
    async (url) => {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "raw", version: "1" },
          },
        }),
      });
      assertEquals(response.headers.get("content-type"), "application/json");
      const body = await response.json();
      assertEquals(body.result.serverInfo.name, denoJson.name);
      const transport = new StreamableHTTPClientTransport(url);
      const client = new Client({ name: "cli-http-test", version: "1.0.0" });
      await client.connect(transport);
      try {
        const ran = await client.callTool({
          name: "bash",
          arguments: { command: "echo json" },
        });
        assertEquals(texts(ran).trim(), "json");
      } finally {
        await client.close();
      }
    },
    {},
    ["--json-response"],
  );
  assertEquals(code, 0, stderr);
});

const NO_SANDBOX: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);
if (NO_SANDBOX !== null) {
  console.error(`Ignoring "mcp --isolate ...": ${NO_SANDBOX}`);
}

Deno.test({
  name:
    "mcp --isolate runs the bash tool in a sandbox and says so in its instructions",
  ignore: NO_SANDBOX !== null,
  fn: async () => {
    await withServer(
      async (client, root) => {
        assertStringIncludes(
          client.getInstructions() ?? "",
          "Commands run in a sandbox",
        );
        const workspace = hostPath.join(root, "mcp-test");
        const ran = await client.callTool({
          name: "bash",
          arguments: {
            command:
              `echo $HOME; echo in > in.txt; echo out > ${root}/out.txt; ls ${repo}`,
          },
        });
        assertStringIncludes(texts(ran), "/tmp/home");
        assertStringIncludes(texts(ran), "No such file or directory");
        assertEquals(
          await Deno.readTextFile(hostPath.join(workspace, "in.txt")),
          "in\n",
        );
        assertEquals(
          [...Deno.readDirSync(root)].map((e) => e.name),
          ["mcp-test"],
        );
      },
      undefined,
      ["--isolate"],
    );
  },
});

Deno.test("mcp --verbose prints the tool calls, preparation and output events on stderr, the configured value removed (stdio)", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const secret = "mcp-verbose-s3cr3t-41";
  const config = hostPath.join(root, "config.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({ "json-to-table": { env: { TABLE_KEY: secret } } }),
  );
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--allow-read=${repo},${root}`,
      `--allow-write=${root}`,
      "--allow-run",
      "--allow-env",
      cli,
      "mcp",
      "--skills",
      "examples/skills",
      "--conversation",
      "verbose",
      "--root",
      root,
      "--config",
      config,
      "--verbose",
    ],
    cwd: repo,
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  const client = new Client({ name: "cli-verbose", version: "1.0.0" });
  try {
    const reading = (async () => {
      for await (
        const chunk of transport.stderr! as unknown as AsyncIterable<Uint8Array>
      ) {
        stderr += new TextDecoder().decode(chunk);
      }
    })();
    await client.connect(transport);
    await client.callTool({
      name: "skill",
      arguments: { name: "json-to-table" },
    });
    const ran = await client.callTool({
      name: "bash",
      arguments: { command: 'echo "key=$TABLE_KEY"' },
    });
    assertStringIncludes(texts(ran), "key=[redacted]");
    await client.close();
    await reading;
  } finally {
    await client.close().catch(() => {});
    await Deno.remove(root, { recursive: true });
  }
  assertMatch(stderr, /^\[skillrun\] tool skill \(\S+\) started$/m);
  assertMatch(stderr, /^\[skillrun\] prepare json-to-table: done$/m);
  assertMatch(stderr, /^\[skillrun\] tool bash \(\S+\) done in \d+ ms/m);
  assertMatch(stderr, /^\[skillrun\] stdout: "key=\[redacted\]\\n"$/m);
  assert(!stderr.includes(secret), stderr);
});

Deno.test("mcp --http with SKILLRUN_LOG=debug prints the events of each session on stderr; without it, none", async () => {
  for (const env of [{ SKILLRUN_LOG: "debug" }, { SKILLRUN_LOG: "" }]) {
    const { stderr } = await withHttpServer(async (url) => {
      const transport = new StreamableHTTPClientTransport(url);
      const client = new Client({ name: "cli-http-verbose", version: "1" });
      await client.connect(transport);
      try {
        await client.callTool({
          name: "bash",
          arguments: { command: "echo hello-events" },
        });
      } finally {
        await client.close();
      }
    }, env);
    if (env.SKILLRUN_LOG === "debug") {
      assertMatch(stderr, /^\[skillrun\] tool bash \(\S+\) started$/m);
      assertMatch(stderr, /^\[skillrun\] stdout: "hello-events\\n"$/m);
    } else {
      assert(!stderr.includes("[skillrun]"), stderr);
    }
  }
});

Deno.test("mcp --ask-for-approval asks the client (elicitation/create) before bash and write; only accept runs; read is not asked", async () => {
  const answers = ["decline", "accept", "cancel"] as const;
  const messages: string[] = [];
  const client = new Client({ name: "cli-test", version: "1.0.0" }, {
    capabilities: { elicitation: {} },
  });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    messages.push(request.params.message);
    return Promise.resolve({ action: answers[messages.length - 1]! });
  });
  await withServer(
    async (client, root) => {
      const cwd = hostPath.join(root, "mcp-test");
      const exists = (name: string) =>
        Deno.stat(hostPath.join(cwd, name)).then(() => true, () => false);
      const declined = await client.callTool({
        name: "bash",
        arguments: { command: "touch declined" },
      });
      assert(declined.isError);
      const accepted = await client.callTool({
        name: "bash",
        arguments: { command: "echo hi > accepted" },
      });
      assertEquals(accepted.isError, false, texts(accepted));
      const write = await client.callTool({
        name: "write",
        arguments: { file_path: "w.txt", content: "x" },
      });
      assert(write.isError);
      const read = await client.callTool({
        name: "read",
        arguments: { file_path: "accepted" },
      });
      assertStringIncludes(texts(read), "hi");
      assertEquals(await exists("declined"), false);
      assertEquals(await exists("accepted"), true);
      assertEquals(await exists("w.txt"), false);
      assertEquals(messages.length, 3);
      assertStringIncludes(messages[0]!, 'the bash call "touch declined"');
      assertStringIncludes(messages[2]!, 'the write call on "w.txt"');
    },
    undefined,
    ["--ask-for-approval"],
    client,
  );
});

Deno.test("mcp --catalog-budget bounds the skill tool and offers skill_search, over stdio and HTTP", async () => {
  const check = async (client: Client) => {
    const { tools } = await client.listTools();
    assertEquals(tools.slice(0, 2).map((t) => t.name), [
      "skill",
      "skill_search",
    ]);
    const skill = tools[0]!;
    assert(
      skill.description!.length + JSON.stringify(skill.inputSchema).length <=
        1_400,
    );
    const found = await client.callTool({
      name: "skill_search",
      arguments: { query: "summary of CSV data" },
    });
    assertMatch(texts(found), /^1\. csv-report$/m);
    const loaded = await client.callTool({
      name: "skill",
      arguments: { name: "json-to-table" },
    });
    assertEquals(loaded.isError, false, texts(loaded));
  };
  await withServer(check, undefined, ["--catalog-budget", "1400"]);
  const { code, stderr } = await withHttpServer(
    async (url) => {
      const client = new Client({ name: "cli-http-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(url));
      try {
        await check(client);
      } finally {
        await client.close();
      }
    },
    {},
    ["--catalog-budget", "1400"],
  );
  assertEquals(code, 0, stderr);
  const chunks: Uint8Array[] = [];
  const sink = {
    write: (b: Uint8Array) => (chunks.push(b), Promise.resolve(b.length)),
  };
  const bad = await mcpCommand(
    ["--skills", exampleSkills, "--catalog-budget", "0"],
    { streams: { stdout: sink, stderr: sink } },
  );
  assertEquals(bad, 2);
  assertStringIncludes(
    new TextDecoder().decode(chunks[0]),
    'skillrun mcp: Option "--catalog-budget" must be a positive number of characters, got "0"',
  );
});
