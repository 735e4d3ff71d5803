// The client guide's `disable-model-invocation: true` and active skills, seen
// through the tools a model gets and through MCP (prompts stay the user's).
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { buildSkillTools } from "../builder.ts";
import { invokeSkill } from "../skill_tool.ts";
import { tempDir, writeSkill } from "../../tests/helpers/tools.ts";
import { connectMcpServer } from "./mod.ts";

async function hiddenAndShown(root: string): Promise<void> {
  await writeSkill(root, "shown", { body: "Shown steps.\n" });
  await Deno.mkdir(`${root}/deploy`);
  await Deno.writeTextFile(
    `${root}/deploy/SKILL.md`,
    "---\nname: deploy\ndescription: Deploys production.\ndisable-model-invocation: true\n---\nDeploy steps.\n",
  );
}

Deno.test("disable-model-invocation: absent from the catalog and the enum, a model's call refused as for an unknown name, the application invokes it", async () => {
  await using dir = await tempDir();
  await hiddenAndShown(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path });
  assertEquals(kit.skills.map((s) => s.name), ["deploy", "shown"]);
  const tool = kit.tool("skill")!;
  assert(!tool.description.includes("deploy"), tool.description);
  assertStringIncludes(tool.description, "<name>shown</name>");
  const schema = tool.inputSchema as unknown as {
    properties: { name: { enum: string[] } };
  };
  assertEquals(schema.properties.name.enum, ["shown"]);
  const refused = await tool.execute({ name: "deploy" });
  const unknown = await tool.execute({ name: "nonexistent" });
  assertEquals(refused.isError, true);
  assertEquals(
    refused.text.replace("deploy", "X"),
    unknown.text.replace("nonexistent", "X"),
  );
  assert(!refused.text.includes("Deploys production"));
  assert(!refused.text.includes("Deploy steps"));
  // The application (a library call) still starts it.
  const invoked = await invokeSkill(kit.context, "deploy");
  assertEquals(invoked.isError, false, invoked.text);
  assertStringIncludes(invoked.text, "Deploy steps.");
  await assertRejects(
    () => invokeSkill(kit.context, "nope"),
    RangeError,
    `Cannot invoke skill "nope": no such skill`,
  );
});

Deno.test("disable-model-invocation: MCP prompts/get still gives the skill (the user's slash command), tools/list hides it", async () => {
  await using dir = await tempDir();
  await hiddenAndShown(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const connection = await connectMcpServer(kit.tools, serverSide, {
    skills: kit.skills,
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    const { tools } = await client.listTools();
    const skillTool = tools.find((t) => t.name === "skill")!;
    assert(!JSON.stringify(skillTool).includes("deploy"));
    const prompt = await client.getPrompt({ name: "deploy" });
    assertStringIncludes(
      (prompt.messages[0]!.content as { text: string }).text,
      "Deploy steps.",
    );
  } finally {
    await client.close();
    await connection.close();
  }
});

Deno.test("a second skill call for an active skill answers that it is active, without the instructions", async () => {
  await using dir = await tempDir();
  await hiddenAndShown(dir.path);
  await using kit = await buildSkillTools({ skills: dir.path });
  const tool = kit.tool("skill")!;
  const first = await tool.execute({ name: "shown" });
  assertStringIncludes(first.text, "Shown steps.");
  const second = await tool.execute({ name: "shown" });
  assertEquals(second.isError, false);
  assertStringIncludes(second.text, `Skill "shown" is already active`);
  assertStringIncludes(second.text, "Base directory: ");
  assert(!second.text.includes("Shown steps."));
  // Another kit (another conversation) gets the instructions.
  await using other = await buildSkillTools({ skills: dir.path });
  assertStringIncludes(
    (await other.tool("skill")!.execute({ name: "shown" })).text,
    "Shown steps.",
  );
});
