import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { assert, assertEquals, assertMatch } from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const CLI = hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url));

async function until(check: () => boolean, ms = 5000): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > ms) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - start;
}

async function writeSkill(root: string, name: string, body: string) {
  await Deno.mkdir(`${root}/${name}`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/${name}/SKILL.md`,
    `---\nname: ${name}\ndescription: The ${name} skill.\n---\n${body}\n`,
  );
}

Deno.test({
  name:
    "mcp --watch declares listChanged and sends tools/prompts list_changed after a skill is added or changed; the next call sees the new content",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const skills = await Deno.realPath(await Deno.makeTempDir());
    const work = await Deno.realPath(await Deno.makeTempDir());
    await writeSkill(skills, "alpha", "Alpha steps.");
    const transport = new StdioClientTransport({
      command: Deno.execPath(),
      args: [
        "run",
        "-A",
        "--quiet",
        CLI,
        "mcp",
        "--skills",
        skills,
        "--watch",
      ],
      cwd: work,
      env: { ...Deno.env.toObject(), NO_COLOR: "1" },
      stderr: "pipe",
    });
    const client = new Client({ name: "watch-test", version: "1.0.0" });
    const seen: string[] = [];
    client.setNotificationHandler(
      ToolListChangedNotificationSchema,
      () => void seen.push("tools"),
    );
    client.setNotificationHandler(
      PromptListChangedNotificationSchema,
      () => void seen.push("prompts"),
    );
    await client.connect(transport);
    try {
      const capabilities = client.getServerCapabilities()!;
      assertEquals(capabilities.tools?.listChanged, true);
      assertEquals(capabilities.prompts?.listChanged, true);
      const text = async (name: string) =>
        ((await client.callTool({ name: "skill", arguments: { name } }))
          .content as { text: string }[])[0]!.text;
      assert((await text("alpha")).includes("Alpha steps."));

      const started = performance.now();
      await writeSkill(skills, "beta", "Beta steps.");
      await until(() => seen.includes("tools") && seen.includes("prompts"));
      const latency = performance.now() - started;
      assert(latency <= 1000, `list_changed after ${latency} ms`);
      const { tools } = await client.listTools();
      const skillTool = tools.find((t) => t.name === "skill")!;
      assertEquals(
        (skillTool.inputSchema.properties!.name as { enum: string[] }).enum,
        ["alpha", "beta"],
      );
      assertEquals(
        (await client.listPrompts()).prompts.map((p) => p.name),
        ["alpha", "beta"],
      );

      // An active skill changed: the next call gives its new instructions.
      seen.length = 0;
      await writeSkill(skills, "alpha", "Alpha steps, revised.");
      await until(() => seen.includes("tools"));
      assert((await text("alpha")).includes("Alpha steps, revised."));
    } finally {
      await client.close();
      await Deno.remove(skills, { recursive: true });
      await Deno.remove(work, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "mcp --http --watch: every session declares listChanged and hears tools/prompts list_changed after a skill is added; the next call sees a changed skill",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const skills = await Deno.realPath(await Deno.makeTempDir());
    const root = await Deno.realPath(await Deno.makeTempDir());
    await writeSkill(skills, "alpha", "Alpha steps.");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        CLI,
        "mcp",
        "--skills",
        skills,
        "--root",
        root,
        "--http",
        "127.0.0.1:0",
        "--watch",
      ],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    const clients: Client[] = [];
    try {
      let first = "";
      while (!first.includes("\n")) {
        const { done, value } = await lines.read();
        if (done) break;
        first += value;
      }
      assertMatch(first, /^http:\/\/127\.0\.0\.1:\d+\/mcp\n$/);
      const url = new URL(first.trim());
      // Two sessions: each is told.
      const seen: string[][] = [[], []];
      for (const heard of seen) {
        const client = new Client({ name: "watch-http", version: "1.0.0" });
        client.setNotificationHandler(
          ToolListChangedNotificationSchema,
          () => void heard.push("tools"),
        );
        client.setNotificationHandler(
          PromptListChangedNotificationSchema,
          () => void heard.push("prompts"),
        );
        await client.connect(new StreamableHTTPClientTransport(url));
        clients.push(client);
        const capabilities = client.getServerCapabilities()!;
        assertEquals(capabilities.tools?.listChanged, true);
        assertEquals(capabilities.prompts?.listChanged, true);
      }
      const text = async (client: Client, name: string) =>
        ((await client.callTool({ name: "skill", arguments: { name } }))
          .content as { text: string }[])[0]!.text;
      assert((await text(clients[0]!, "alpha")).includes("Alpha steps."));
      // The GET stream that carries the notifications opens after connect.
      await new Promise((resolve) => setTimeout(resolve, 200));

      const started = performance.now();
      await writeSkill(skills, "beta", "Beta steps.");
      await until(() =>
        seen.every((heard) =>
          heard.includes("tools") && heard.includes("prompts")
        )
      );
      const latency = performance.now() - started;
      assert(latency <= 1000, `list_changed after ${latency} ms`);
      for (const client of clients) {
        const { tools } = await client.listTools();
        const skillTool = tools.find((t) => t.name === "skill")!;
        assertEquals(
          (skillTool.inputSchema.properties!.name as { enum: string[] }).enum,
          ["alpha", "beta"],
        );
        assertEquals(
          (await client.listPrompts()).prompts.map((p) => p.name),
          ["alpha", "beta"],
        );
      }

      // An active skill changed: the next call gives its new instructions.
      seen[0]!.length = 0;
      await writeSkill(skills, "alpha", "Alpha steps, revised.");
      await until(() => seen[0]!.includes("tools"));
      assert(
        (await text(clients[0]!, "alpha")).includes("Alpha steps, revised."),
      );
    } finally {
      for (const client of clients) await client.close().catch(() => {});
      child.kill("SIGTERM");
      await lines.cancel();
      await child.status;
      await Deno.remove(skills, { recursive: true });
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
