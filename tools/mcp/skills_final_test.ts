// The MCP Skills extension as `specification/stable/skills.mdx` (Final) says,
// through a real MCP client over an in-memory connection.
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ResultSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { loadSkills } from "../../skill/load.ts";
import { sha256Of } from "../../package/_digest.ts";
import { connectMcpServer } from "./mod.ts";
import * as extension from "./_skills_extension.ts";

interface Entry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: { uri: string; digest: string; size: number }[];
}

interface Listing {
  skills: Entry[];
  nextCursor?: string;
  resultType: string;
  ttlMs: number;
  cacheScope: string;
}

async function serve(
  root: string,
): Promise<
  {
    client: Client;
    warnings: string[];
    request: <T>(
      method: string,
      params?: Record<string, unknown>,
    ) => Promise<T>;
    [Symbol.asyncDispose](): Promise<void>;
  }
> {
  const { skills } = await loadSkills(root);
  const warnings: string[] = [];
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const connection = await connectMcpServer([], serverSide, {
    skills,
    onWarning: (message) => warnings.push(message),
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  return {
    client,
    warnings,
    request: async <T>(method: string, params?: Record<string, unknown>) =>
      await client.request(
        { method, ...(params ? { params } : {}) },
        ResultSchema.passthrough(),
      ) as unknown as T,
    async [Symbol.asyncDispose]() {
      await client.close();
      await connection.close();
    },
  };
}

async function writeSkill(
  root: string,
  name: string,
  frontMatter: string,
  files: Record<string, string> = {},
): Promise<void> {
  await Deno.mkdir(`${root}/${name}`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/${name}/SKILL.md`,
    `---\nname: ${name}\n${frontMatter}---\nBody of ${name}.\n`,
  );
  for (const [path, text] of Object.entries(files)) {
    const target = `${root}/${name}/${path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    await Deno.writeTextFile(target, text);
  }
}

async function code(promise: Promise<unknown>): Promise<number | undefined> {
  const error = await assertRejects(() => promise);
  return (error as { code?: number }).code;
}

Deno.test("skills extension: typed front matter, complete manifest with sizes, cache fields, -32602 for what is not served", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await writeSkill(
      root,
      "typed",
      "description: Typed fields.\ndisable-model-invocation: false\nversion: 2\nratio: 1.5\ntags: [a, b]\nmetadata:\n  owner: team\n",
      {
        "scripts/run.sh": "echo hi\n",
        "references/deep/guide.md": "# Guide\n",
      },
    );
    await using server = await serve(root);
    const listing = await server.request<Listing>("skills/list");
    assertEquals(listing.resultType, "complete");
    assertEquals(listing.cacheScope, "public");
    assert(listing.ttlMs > 0);
    assertEquals(listing.nextCursor, undefined);
    const [entry] = listing.skills;
    assertEquals(entry!.uri, "skill://typed/SKILL.md");
    assertEquals(entry!.frontmatter, {
      name: "typed",
      description: "Typed fields.",
      "disable-model-invocation": false,
      version: 2,
      ratio: 1.5,
      tags: ["a", "b"],
      metadata: { owner: "team" },
    });
    assertEquals(
      entry!.resources.map((r) => r.uri).sort(),
      [
        "skill://typed/SKILL.md",
        "skill://typed/references/deep/guide.md",
        "skill://typed/scripts/run.sh",
      ],
    );
    for (const resource of entry!.resources) {
      const read = await server.client.readResource({ uri: resource.uri });
      const bytes = new TextEncoder().encode(
        (read.contents[0] as { text: string }).text,
      );
      assertEquals(bytes.length, resource.size);
      assertEquals(sha256Of(bytes), resource.digest);
      assertEquals((read as Record<string, unknown>).resultType, "complete");
    }
    const got = await server.request<{ skill: Entry } & Listing>(
      "skills/get",
      { uri: "skill://typed/SKILL.md" },
    );
    assertEquals(got.skill, entry);
    assertEquals([got.resultType, got.cacheScope], ["complete", "public"]);

    // -32602: unknown skill, no uri, unknown file, not a directory.
    assertEquals(
      await code(
        server.request("skills/get", { uri: "skill://nope/SKILL.md" }),
      ),
      -32602,
    );
    assertEquals(await code(server.request("skills/get", {})), -32602);
    assertEquals(
      await code(
        server.client.readResource({ uri: "skill://typed/missing.md" }),
      ),
      -32602,
    );
    assertEquals(
      await code(server.client.readResource({ uri: "skill://nope/SKILL.md" })),
      -32602,
    );
    assertEquals(
      await code(
        server.request("resources/directory/read", {
          uri: "skill://typed/SKILL.md",
        }),
      ),
      -32602,
    );
    assertEquals(
      await code(
        server.request("resources/directory/read", { uri: "skill://nope" }),
      ),
      -32602,
    );
    assertEquals(
      await code(server.request("skills/list", { cursor: "forged" })),
      -32602,
    );
    // A method the extension does not name: JSON-RPC's -32601, as on a
    // server without skills (names every object has included).
    for (const method of ["skills/unknown", "toString", "__proto__"]) {
      const error = await server.request(method).then(
        () => undefined,
        (e: Error & { code?: number }) => e,
      );
      assertEquals([error?.code, error?.message], [
        -32601,
        "MCP error -32601: Method not found",
      ]);
    }

    // Directory reads: direct children, folders as inode/directory.
    const top = await server.request<
      & { resources: { uri: string; name: string; mimeType?: string }[] }
      & Listing
    >("resources/directory/read", { uri: "skill://typed" });
    assertEquals(top.resources.map((r) => [r.name, r.mimeType]), [
      ["SKILL.md", "text/markdown"],
      ["references", "inode/directory"],
      ["scripts", "inode/directory"],
    ]);
    assertEquals(top.resultType, "complete");
    const deep = await server.request<
      { resources: { uri: string; mimeType?: string }[] }
    >("resources/directory/read", { uri: "skill://typed/references" });
    assertEquals(deep.resources, [{
      uri: "skill://typed/references/deep",
      name: "deep",
      mimeType: "inode/directory",
    } as { uri: string; mimeType?: string }]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("skills extension: skills/list by pages, no entry split, every skill once", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    const count = extension.SKILLS_PAGE_SIZE + 7;
    for (let i = 0; i < count; i++) {
      await writeSkill(
        root,
        `s${String(i).padStart(3, "0")}`,
        "description: d.\n",
      );
    }
    await using server = await serve(root);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page: Listing = await server.request<Listing>(
        "skills/list",
        cursor ? { cursor } : {},
      );
      pages++;
      for (const entry of page.skills) {
        seen.push(entry.uri);
        assertEquals(entry.resources.length, 1);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    assertEquals(pages, 2);
    assertEquals(seen.length, count);
    assertEquals(new Set(seen).size, count);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("skills extension: bad names, over 512 files or 16 MiB, and bad fields are not served, each with a warning naming the skill and the limit", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await writeSkill(root, "fine", "description: Fine.\n");
    await writeSkill(root, "Bad_Name", "description: Bad name.\n");
    await writeSkill(root, "many-files", "description: Many.\n");
    for (let i = 0; i < 512; i++) {
      await Deno.writeTextFile(`${root}/many-files/f${i}.txt`, "x");
    }
    await writeSkill(root, "too-big", "description: Big.\n");
    using big = await Deno.create(`${root}/too-big/blob.bin`);
    await big.truncate(16 * 1024 * 1024);
    await writeSkill(
      root,
      "long-description",
      `description: ${"x".repeat(1025)}\n`,
    );
    await using server = await serve(root);
    const listing = await server.request<Listing>("skills/list");
    assertEquals(listing.skills.map((s) => s.uri), ["skill://fine/SKILL.md"]);
    const warnings = server.warnings.join("\n");
    assertStringIncludes(warnings, `"Bad_Name"`);
    assertStringIncludes(warnings, "naming rules");
    assertStringIncludes(warnings, `"many-files"`);
    assertStringIncludes(warnings, "more than 512 files");
    assertStringIncludes(warnings, `"too-big"`);
    assertStringIncludes(warnings, "16 MiB limit");
    assertStringIncludes(warnings, `"long-description"`);
    assertStringIncludes(warnings, "1-1024 characters");
    assertEquals(server.warnings.length, 4);
    // Each warned once, however often listed.
    await server.request("skills/list");
    assertEquals(server.warnings.length, 4);
    assertEquals(
      await code(
        server.request("skills/get", { uri: "skill://too-big/SKILL.md" }),
      ),
      -32602,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("skills extension: a file changed on disk is re-hashed; a repeat listing of unchanged files hashes nothing", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await writeSkill(root, "live", "description: Live.\n", {
      "notes.md": "one\n",
    });
    await using server = await serve(root);
    await server.request<Listing>("skills/list");
    const hashed = extension.filesHashed;
    const again = await server.request<Listing>("skills/list");
    assertEquals(extension.filesHashed, hashed, "nothing re-hashed");
    const before = again.skills[0]!.resources.find((r) =>
      r.uri.endsWith("notes.md")
    )!;
    await Deno.writeTextFile(`${root}/live/notes.md`, "two, longer\n");
    const read = await server.client.readResource({
      uri: "skill://live/notes.md",
    });
    const bytes = new TextEncoder().encode(
      (read.contents[0] as { text: string }).text,
    );
    const got = await server.request<{ skill: Entry }>("skills/get", {
      uri: "skill://live/SKILL.md",
    });
    const after = got.skill.resources.find((r) => r.uri.endsWith("notes.md"))!;
    assert(after.digest !== before.digest);
    assertEquals(after.digest, sha256Of(bytes));
    assertEquals(after.size, bytes.length);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
