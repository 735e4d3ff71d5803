/**
 * Security suite: the MCP server. Every answer (tools, prompts, resources) is
 * redacted like the tools' outputs, and the server's own token never reaches
 * a command's environment.
 *
 * @module
 */
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import { assert, assertEquals } from "../helpers/assert.ts";
import { serveMcpHttp } from "../../tools/mcp/http.ts";
import {
  apiConfigs,
  assertNoSecret,
  mcpHttpCommand,
  SECRET_PEM,
  SECRET_TOKEN,
  writeApiSkill,
} from "./_harness.ts";

const MCP_TOKEN = "mcp-server-token-7f6e5d4c3b2a";

/** Every path under `dir` with its size and content (a snapshot). */
async function snapshot(dir: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (path: string): Promise<void> => {
    for await (const entry of Deno.readDir(path)) {
      const full = `${path}/${entry.name}`;
      const info = await Deno.lstat(full);
      found.push(
        `${full} ${info.mode?.toString(8)} ${
          info.isFile ? await Deno.readTextFile(full) : ""
        }`,
      );
      if (info.isDirectory) await visit(full);
    }
  };
  await visit(dir);
  return found.sort();
}

function assertNoToken(text: string): void {
  assert(!text.includes(MCP_TOKEN), `the server's token leaked: ${text}`);
  assert(!text.includes(MCP_TOKEN.slice(0, 12)), `part of the token: ${text}`);
}

Deno.test({
  name:
    "security: mcp: prompts, resources and tool answers hold no configured value nor the server's token",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const base = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-security-mcp-" }),
    );
    try {
      const skills = await writeApiSkill(base);
      await Deno.writeTextFile(
        `${skills}/api/SKILL.md`,
        `---\nname: api\ndescription: Calls the API with ${SECRET_TOKEN}.\n---\nSend ${SECRET_TOKEN} as the key, and the token ${MCP_TOKEN}.\n`,
      );
      await Deno.writeTextFile(
        `${skills}/api/notes.md`,
        `ordinary line\nkey: ${SECRET_TOKEN}\n${SECRET_PEM}\n`,
      );
      const outside = `${base}/outside`;
      await Deno.mkdir(outside);
      await Deno.writeTextFile(`${outside}/secret.txt`, "outside secret\n");
      const before = await snapshot(base).then((s) =>
        s.filter((line) => !line.includes("/conversations"))
      );
      await using server = await serveMcpHttp({
        port: 0,
        skills,
        configs: apiConfigs(),
        token: MCP_TOKEN,
        conversationsRoot: `${base}/conversations`,
      });
      const client = new Client({ name: "security", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { authorization: `Bearer ${MCP_TOKEN}` } },
        }),
      );
      try {
        // Attack: every way an MCP client reads a skill.
        const answers = [
          await client.listPrompts(),
          await client.getPrompt({ name: "api" }),
          await client.listResources(),
          await client.readResource({ uri: "skill://api/notes.md" }),
          await client.readResource({ uri: "skill://api/SKILL.md" }),
          await client.listTools(),
          await client.callTool({ name: "skill", arguments: { name: "api" } }),
          await client.callTool({
            name: "bash",
            arguments: { command: "echo $API_TOKEN; echo $API_KEY_PEM" },
          }),
          await client.callTool({
            name: "read",
            arguments: { file_path: "skills/nope.md" },
          }),
        ];
        for (const answer of answers) {
          const text = JSON.stringify(answer);
          assertNoSecret(text);
          assertNoToken(text);
        }
        const missing = await client.readResource({
          uri: `skill://api/${SECRET_TOKEN}.md`,
        }).then(() => "", (error: Error) => error.message);
        assert(missing !== "", "a missing resource was read");
        assertNoSecret(missing);
        // Control: the same answers still carry what is not secret.
        const prompt = await client.getPrompt({ name: "api" });
        assert(JSON.stringify(prompt).includes("as the key"));
        const notes = await client.readResource({
          uri: "skill://api/notes.md",
        });
        const text = (notes.contents[0] as { text: string }).text;
        assert(text.startsWith("ordinary line\nkey: [redacted]"), text);
        const env = await client.callTool({
          name: "bash",
          arguments: { command: 'test -n "$API_TOKEN" && echo set' },
        });
        assertEquals(
          (env.content as { text: string }[])[0]!.text.trim(),
          "set",
        );
        // Alive.
        assertEquals((await client.listTools()).tools.length, 10);
      } finally {
        await client.close();
      }
      const after = await snapshot(base).then((s) =>
        s.filter((line) => !line.includes("/conversations"))
      );
      assertEquals(after, before);
    } finally {
      await Deno.remove(base, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "security: mcp: SKILLRUN_MCP_TOKEN is not in the environment of the commands mcp --http runs",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const root = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-security-mcp-" }),
    );
    const child = mcpHttpCommand({
      root,
      http: "127.0.0.1:0",
      allowNet: "127.0.0.1",
      env: {
        SKILLRUN_MCP_TOKEN: MCP_TOKEN,
        OTHER_VARIABLE: "kept-for-the-control",
      },
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const lines = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    try {
      let first = "";
      while (!first.includes("\n")) {
        const { done, value } = await lines.read();
        if (done) break;
        first += value;
      }
      assert(/^http:\/\/127\.0\.0\.1:\d+\/mcp\n$/.test(first), first);
      const client = new Client({ name: "security", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(first.trim()), {
          requestInit: { headers: { authorization: `Bearer ${MCP_TOKEN}` } },
        }),
      );
      try {
        const run = async (command: string) =>
          (((await client.callTool({ name: "bash", arguments: { command } }))
            .content) as { text: string }[])[0]!.text;
        // Attack: a prompt-injected model reads the endpoint's credential.
        const leaked = await run(
          `printenv SKILLRUN_MCP_TOKEN || echo absent; env | grep -c "${
            MCP_TOKEN.slice(4, 20)
          }" || true`,
        );
        assertNoToken(leaked);
        assert(leaked.startsWith("absent\n0\n"), leaked);
        // Control: the rest of the environment is still inherited.
        assertEquals(
          (await run("printenv OTHER_VARIABLE")).trim(),
          [
            "kept-for-the-control",
          ].join(""),
        );
        assertEquals((await client.listTools()).tools.length, 10);
      } finally {
        await client.close();
      }
    } finally {
      child.kill("SIGTERM");
      await lines.cancel();
      await child.status;
      assertNoToken(await stderr);
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "security: mcp: an error reported to onError (a log line) holds no configured value nor the token",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const base = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-security-mcp-" }),
    );
    const reported: Error[] = [];
    try {
      const skills = await writeApiSkill(base);
      let fail = true;
      await using server = await serveMcpHttp({
        port: 0,
        skills,
        configs: apiConfigs(),
        token: MCP_TOKEN,
        conversationsRoot: `${base}/conversations`,
        onError: (error) => reported.push(error),
        // A sandbox service whose error echoes what it was sent.
        runtime: async (sessionId) => {
          if (fail) {
            fail = false;
            throw new Error(
              `sandbox refused env API_TOKEN=${SECRET_TOKEN} with ${MCP_TOKEN}`,
            );
          }
          const { LocalSkillRuntime } = await import(
            "../../runtimes/local/mod.ts"
          );
          return await LocalSkillRuntime.create({
            conversationsRoot: `${base}/conversations`,
            conversationId: sessionId,
          });
        },
      });
      const headers = { authorization: `Bearer ${MCP_TOKEN}` };
      // Attack: the first session's runtime fails with the values echoed.
      const first = new Client({ name: "security", version: "1.0.0" });
      const refused = await first.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers },
        }),
      ).then(() => "", (error: Error) => error.message);
      assert(refused !== "", "the failing session started");
      assertNoSecret(refused);
      assertNoToken(refused);
      assertEquals(reported.length, 1);
      for (const error of reported) {
        const text = `${error.message}\n${error.stack}\n${Deno.inspect(error)}`;
        assertNoSecret(text);
        assertNoToken(text);
        assert(text.includes("sandbox refused env"), text);
      }
      // Control and alive: the next session works.
      const second = new Client({ name: "security", version: "1.0.0" });
      await second.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers },
        }),
      );
      assertEquals((await second.listTools()).tools.length, 10);
      await second.close();
    } finally {
      await Deno.remove(base, { recursive: true }).catch(() => {});
    }
  },
});
