import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ToolListChangedNotificationSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  assert,
  assertEquals,
  assertLessOrEqual,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { loadSkills } from "../../skill/load.ts";
import { buildSkillTools } from "../builder.ts";
import { tempDir } from "../../tests/helpers/tools.ts";
import { manySkillQuery, writeManySkills } from "../testdata/many_skills.ts";
import { connectMcpServer } from "./mod.ts";

function text(result: Record<string, unknown>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join("\n");
}

Deno.test("over MCP, 1,000 skills: tools/list has a bounded skill tool and skill_search, any skill loads by name, prompts/list is paginated", async () => {
  await using dir = await tempDir();
  await writeManySkills(`${dir.path}/skills`, 1_000);
  const { skills } = await loadSkills(`${dir.path}/skills`);
  assertEquals(skills.length, 1_000);
  await using runtime = new LocalSkillRuntime({ cwd: dir.path });
  await using set = await buildSkillTools({
    skills,
    runtime,
    catalogBudget: 6_000,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await using _connection = await connectMcpServer(set.tools, serverSide, {
    skills: set.skills,
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged++;
  });
  await client.connect(clientSide);
  try {
    assertEquals(client.getServerCapabilities()?.tools?.listChanged, true);
    const { tools } = await client.listTools();
    assertEquals(tools.slice(0, 2).map((t) => t.name), [
      "skill",
      "skill_search",
    ]);
    const skill = tools[0]!;
    assertLessOrEqual(
      skill.description!.length + JSON.stringify(skill.inputSchema).length,
      6_000,
    );
    const name = skill.inputSchema.properties!.name as Record<string, unknown>;
    assertEquals(name.enum, undefined);
    assertEquals(name.type, "string");
    assertStringIncludes(
      skill.description!,
      "find them with the skill_search tool",
    );

    // The model searches, then loads what it found by name.
    const i = 777;
    const found = await client.callTool({
      name: "skill_search",
      arguments: { query: manySkillQuery(i), limit: 3 },
    });
    assertEquals(found.isError, false, text(found));
    const first = /^1\. (\S+)$/m.exec(text(found))?.[1];
    assert(first, text(found));
    assert(!skill.description!.includes(`<name>${first}</name>`));
    const loaded = await client.callTool({
      name: "skill",
      arguments: { name: first },
    });
    assertEquals(loaded.isError, false, text(loaded));
    assertStringIncludes(text(loaded), `Skill "${first}" is ready`);
    // The search changed no tool; loading a skill outside the listing did:
    // the client is told to list the tools again.
    assertEquals(listChanged, 1);
    // Listed from then on.
    const again = await client.listTools();
    assertStringIncludes(again.tools[0]!.description!, `<name>${first}</name>`);

    const unknown = await client.callTool({
      name: "skill",
      arguments: { name: first.replace(/.$/, "") + "zz" },
    });
    assertEquals(unknown.isError, true);
    assertStringIncludes(text(unknown), `The closest names: ${first}`);
    // Loading a listed skill again changes nothing.
    await client.callTool({ name: "skill", arguments: { name: first } });
    assertEquals(listChanged, 1);

    const page = await client.listPrompts();
    assertEquals(page.prompts.length, 500);
    assertEquals(page.nextCursor, "500");
    const last = await client.listPrompts({ cursor: page.nextCursor! });
    assertEquals(last.prompts.length, 500);
    assertEquals(last.nextCursor, undefined);
    assertEquals(
      new Set([...page.prompts, ...last.prompts].map((p) => p.name)).size,
      1_000,
    );
  } finally {
    await client.close();
  }
});
