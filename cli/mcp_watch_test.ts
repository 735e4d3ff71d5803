import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { assert, assertEquals } from "../_internal/assert.ts";
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
