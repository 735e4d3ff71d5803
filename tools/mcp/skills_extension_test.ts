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
import { installFromPath } from "../../package/mod.ts";
import { sha256Of } from "../../package/_digest.ts";
import { connectMcpServer } from "./mod.ts";
import {
  anthropicsSkills,
  sharedTest,
} from "../../tests/helpers/shared_data.ts";

const CORPUS_DATA = anthropicsSkills();
const CORPUS = CORPUS_DATA.path;

interface Entry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: { uri: string; digest: string; size: number }[];
}

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "MCP: installed skills' resources carry their SHA-256; skills/list and skills/get answer with per-file digests",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const pkg = await installFromPath(`${CORPUS}algorithmic-art`, {
        root: `${dir}/installed`,
      });
      await Deno.mkdir(`${dir}/plain/hello`, { recursive: true });
      await Deno.writeTextFile(
        `${dir}/plain/hello/SKILL.md`,
        "---\nname: hello\ndescription: Says hello.\nlicense: MIT\n---\nSay hello.\n",
      );
      const skills = [
        ...(await loadSkills(pkg.path)).skills,
        ...(await loadSkills(`${dir}/plain`)).skills,
      ];
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await using _server = await connectMcpServer([], serverSide, { skills });
      const client = new Client({ name: "test", version: "1.0.0" });
      await client.connect(clientSide);
      try {
        const capabilities = client.getServerCapabilities() as {
          extensions?: Record<string, unknown>;
          experimental?: Record<string, unknown>;
          resources?: unknown;
        };
        assertEquals(
          capabilities.extensions?.["io.modelcontextprotocol/skills"],
          { directoryRead: true },
        );
        assert(capabilities.resources !== undefined);
        assertEquals(capabilities.experimental, undefined);
        // resources/list: each file of the installed package with its digest.
        const { resources } = await client.listResources();
        const installed = resources.filter((r) =>
          r.uri.startsWith("skill://algorithmic-art/")
        );
        assertEquals(installed.length, pkg.files.length);
        for (const resource of installed) {
          const path = resource.uri.slice("skill://algorithmic-art/".length);
          const expected = pkg.files.find((f) =>
            encodeURI(f.path) === path || f.path === decodeURIComponent(path)
          )!.digest;
          assertEquals(
            resource._meta?.["io.modelcontextprotocol.skills/digest"],
            expected,
          );
        }

        // skills/list: every skill, verbatim front matter, complete digests.
        const listed = await client.request(
          { method: "skills/list", params: {} },
          ResultSchema.passthrough(),
        ) as unknown as { skills: Entry[] };
        assertEquals(listed.skills.map((s) => s.uri), [
          "skill://algorithmic-art/SKILL.md",
          "skill://hello/SKILL.md",
        ]);
        const hello = listed.skills[1]!;
        assertEquals(hello.frontmatter, {
          name: "hello",
          description: "Says hello.",
          license: "MIT",
        });
        const helloBytes = await Deno.readFile(`${dir}/plain/hello/SKILL.md`);
        assertEquals(hello.resources, [{
          uri: "skill://hello/SKILL.md",
          digest: sha256Of(helloBytes),
          size: helloBytes.length,
        }]);
        // Each digest is the SHA-256 of what resources/read returns.
        for (const resource of listed.skills[0]!.resources) {
          const read = await client.readResource({ uri: resource.uri });
          const content = read.contents[0]!;
          const bytes = "text" in content
            ? new TextEncoder().encode(content.text as string)
            : Uint8Array.from(
              atob(content.blob as string),
              (c) => c.charCodeAt(0),
            );
          assertEquals(sha256Of(bytes), resource.digest, resource.uri);
          assertEquals(bytes.length, resource.size, resource.uri);
        }

        // skills/get: one entry by URI; an unknown URI is invalid params.
        const got = await client.request(
          {
            method: "skills/get",
            params: { uri: "skill://algorithmic-art/SKILL.md" },
          },
          ResultSchema.passthrough(),
        ) as unknown as { skill: Entry };
        assertEquals(got.skill, listed.skills[0]);
        const unknown = await assertRejects(() =>
          client.request(
            { method: "skills/get", params: { uri: "skill://nope/SKILL.md" } },
            ResultSchema.passthrough(),
          )
        );
        assertStringIncludes((unknown as Error).message, "-32602");

        // A file of the installed package changed on disk: reading it is refused.
        const file = `${pkg.path}/SKILL.md`;
        await Deno.chmod(file, 0o644);
        await Deno.writeTextFile(file, "tampered", { append: true });
        const refused = await assertRejects(() =>
          client.readResource({ uri: "skill://algorithmic-art/SKILL.md" })
        );
        assertStringIncludes(
          (refused as Error).message,
          "changed since its package was installed",
        );
      } finally {
        await client.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
