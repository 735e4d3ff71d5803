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
import { connectMcpServer } from "./mod.ts";
import { skillResourceUri } from "./_skills.ts";
import {
  BLOB,
  fromBase64,
  makeSkillFiles,
  SMALL_LIMIT,
} from "./testdata/skill_files.ts";

async function withClient(
  skills: string,
  fn: (client: Client) => Promise<void>,
  /** The resource size limit; `null` for the server's default. */
  limit: number | null = SMALL_LIMIT,
): Promise<void> {
  await using built = await buildSkillTools({ skills });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await using _connection = await connectMcpServer(built.tools, serverSide, {
    skills: built.skills,
    ...(limit === null ? {} : { maxResourceBytes: limit }),
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}

Deno.test("a server without skills offers no prompts or resources", async () => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await using _connection = await connectMcpServer([], serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  assertEquals(client.getServerCapabilities()?.prompts, undefined);
  await assertRejects(() => client.listPrompts(), Error, "Method not found");
  await client.close();
});

Deno.test("each skill is a prompt with its instructions", async () => {
  await using files = await makeSkillFiles();
  await withClient(files.skills, async (client) => {
    assert(client.getServerCapabilities()?.prompts);
    const { prompts } = await client.listPrompts();
    assertEquals(prompts.map((p) => [p.name, p.description]), [
      ["greet", "Greets the user."],
      ["notes", "Keeps notes in a file."],
    ]);
    assertEquals(prompts[0]!.arguments?.map((a) => [a.name, a.required]), [
      ["task", false],
    ]);
    const prompt = await client.getPrompt({
      name: "notes",
      arguments: { task: "greet twice" },
    });
    assertEquals(prompt.description, "Keeps notes in a file.");
    assertEquals(prompt.messages.length, 1);
    assertEquals(prompt.messages[0]!.role, "user");
    const text = (prompt.messages[0]!.content as { text: string }).text;
    assertStringIncludes(
      text,
      '<skill_instructions name="notes">\n# Notes\n\nRun `bash scripts/hello.sh` to greet.\n</skill_instructions>',
    );
    assertStringIncludes(text, 'Call the skill tool with the name "notes"');
    assertStringIncludes(text, "skill://notes/");
    assert(text.endsWith("Task: greet twice"), text);
    await assertRejects(
      () => client.getPrompt({ name: "nope" }),
      Error,
      'Unknown prompt "nope": available prompts are "greet", "notes"',
    );
  });
});

Deno.test("resources list each skill's files, without secrets or symlinks, under skill:// URIs", async () => {
  await using files = await makeSkillFiles();
  await withClient(files.skills, async (client) => {
    const { resources, nextCursor } = await client.listResources();
    assertEquals(nextCursor, undefined);
    assertEquals(resources.map((r) => r.uri), [
      "skill://greet/SKILL.md",
      "skill://notes/SKILL.md",
      "skill://notes/data/big.txt",
      "skill://notes/data/blob.bin",
      "skill://notes/data/with%20space%20%C3%A9.txt",
      "skill://notes/scripts/hello.sh",
    ]);
    const skillMd = resources.find((r) => r.uri === "skill://notes/SKILL.md")!;
    assertEquals(skillMd.name, "notes");
    assertEquals(skillMd.mimeType, "text/markdown");
    assertEquals(skillMd.description, "Keeps notes in a file.");
    assertEquals(
      resources.find((r) => r.uri.endsWith("blob.bin"))!.size,
      BLOB.length,
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    assertEquals(resourceTemplates.map((t) => t.uriTemplate), [
      "skill://{skill}/{+path}",
    ]);
  });
});

Deno.test("resources/read gives text as text and binary as base64", async () => {
  await using files = await makeSkillFiles();
  await withClient(files.skills, async (client) => {
    const script = await client.readResource({
      uri: "skill://notes/scripts/hello.sh",
    });
    assertEquals(script.contents, [{
      uri: "skill://notes/scripts/hello.sh",
      mimeType: "text/x-shellscript",
      text: "echo héllo\n",
    }]);
    const spaced = await client.readResource({
      uri: skillResourceUri("notes", "data/with space é.txt"),
    });
    assertEquals((spaced.contents[0] as { text: string }).text, "spaced\n");
    const blob = await client.readResource({
      uri: "skill://notes/data/blob.bin",
    });
    const content = blob.contents[0] as { blob?: string; text?: string };
    assertEquals(content.text, undefined);
    assertEquals(fromBase64(content.blob!), BLOB);
  });
});

Deno.test("resources/read refuses large files, secrets, escapes, symlinks and unknown names", async () => {
  await using files = await makeSkillFiles();
  await withClient(files.skills, async (client) => {
    const refused = async (uri: string, message: string) => {
      await assertRejects(() => client.readResource({ uri }), Error, message);
    };
    await refused(
      "skill://notes/data/big.txt",
      'Cannot read "skill://notes/data/big.txt": the file is larger than the 1024 bytes limit',
    );
    await refused(
      "skill://notes/.env",
      'Cannot read "skill://notes/.env": the copy policy excludes this file',
    );
    await refused(
      "skill://notes/data/escape.txt",
      'Cannot read "skill://notes/data/escape.txt": the path leads outside the skill folder',
    );
    await refused(
      "skill://notes/linked-scripts/hello.sh",
      "the path goes through a symbolic link, which skills' resources never follow",
    );
    await refused(
      "skill://notes/../outside.txt",
      "the path must name a file inside the skill folder",
    );
    await refused(
      "skill://notes/%2E%2E/outside.txt",
      "the path must name a file inside the skill folder",
    );
    await refused(
      "skill://notes/data%2F..%2F..%2F..%2Foutside.txt",
      "the path must name a file inside the skill folder",
    );
    await refused("skill://notes/missing.txt", "no such file");
    await refused("skill://notes/data", "it is not a file");
    await refused(
      "skill://nope/SKILL.md",
      'no skill is named "nope" (available: "greet", "notes")',
    );
    await refused(
      "file:///etc/passwd",
      "expected a URI of the form skill://<skill>/<path>",
    );
  });
});

Deno.test("resources/read uses the default 4 MiB limit and names it", async () => {
  await using files = await makeSkillFiles();
  await Deno.writeFile(
    `${files.skills}/greet/huge.bin`,
    new Uint8Array(4 * 1024 * 1024 + 1),
  );
  await withClient(files.skills, async (client) => {
    await assertRejects(
      () => client.readResource({ uri: "skill://greet/huge.bin" }),
      Error,
      "the file is larger than the 4 MiB limit",
    );
    const big = await client.readResource({
      uri: "skill://notes/data/big.txt",
    });
    assertEquals(
      (big.contents[0] as { text: string }).text.length,
      SMALL_LIMIT + 1,
    );
  }, null);
});

Deno.test("resources/list pages through many files with a cursor", async () => {
  await using files = await makeSkillFiles();
  await Deno.mkdir(`${files.skills}/greet/many`);
  await Promise.all(
    Array.from(
      { length: 1200 },
      (_, i) =>
        Deno.writeTextFile(
          `${files.skills}/greet/many/${String(i).padStart(4, "0")}.txt`,
          "",
        ),
    ),
  );
  await withClient(files.skills, async (client) => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listResources(cursor ? { cursor } : {});
      seen.push(...page.resources.map((r) => r.uri));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    assertEquals(pages, 3);
    assertEquals(seen.length, 1200 + 6);
    assertEquals(new Set(seen).size, seen.length);
    assert(seen.includes("skill://greet/many/1199.txt"));
    await assertRejects(
      () => client.listResources({ cursor: "abc" }),
      Error,
      'Cannot list resources from cursor "abc"',
    );
  });
});
