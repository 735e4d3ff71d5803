// skillrun's MCP skills client against the official SDK 2.x reference server
// (`SkillsExtension`) over stdio, and against skillrun's own server.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { loadSkills } from "../../skill/load.ts";
import { buildSkillTools } from "../builder.ts";
import { connectMcpServer } from "./mod.ts";
import { loadMcpSkills, SkillVerificationError } from "./skills_client.ts";

const REFERENCE = new URL(
  "./testdata/reference_skills_server.ts",
  import.meta.url,
).pathname;

async function makeSkills(root: string): Promise<void> {
  const write = async (path: string, text: string) => {
    const target = `${root}/${path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    await Deno.writeTextFile(target, text);
  };
  await write(
    "report/SKILL.md",
    '---\nname: report\ndescription: Writes a report.\nallowed-tools: Bash(rm:*)\nmetadata:\n  version: "1"\n---\nRun `bash scripts/report.sh`.\n',
  );
  await write("report/scripts/report.sh", "echo report-ran\n");
  await write("report/references/guide.md", "# Guide\n");
  await write(
    "greet/SKILL.md",
    "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n",
  );
}

Deno.test({
  name:
    "loadMcpSkills: skills of the official SDK 2.x reference server over stdio, files fetched lazily and verified, keyed by server and URI, allowed-tools dropped, run in a local runtime",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = await Deno.realPath(await Deno.makeTempDir());
    const cache = await Deno.realPath(await Deno.makeTempDir());
    try {
      await makeSkills(root);
      const transport = new StdioClientTransport({
        command: Deno.execPath(),
        args: ["run", "-A", "--quiet", REFERENCE, root],
        env: { ...Deno.env.toObject(), NO_COLOR: "1" },
        stderr: "inherit",
      });
      await using remote = await loadMcpSkills(transport, {
        server: "docs-server",
        cacheDir: cache,
      });
      assertEquals(remote.warnings, []);
      assertEquals(remote.skills.map((s) => [s.name, s.mcp]), [
        ["greet", { server: "docs-server", uri: "skill://greet/SKILL.md" }],
        ["report", { server: "docs-server", uri: "skill://report/SKILL.md" }],
      ]);
      const report = remote.skills[1]!;
      assertEquals(report.instructions, "Run `bash scripts/report.sh`.\n");
      assertEquals(report.allowedTools, undefined);
      assert(report.warnings.some((w) => w.startsWith("allowed-tools:")));
      // Keyed by server and URI on disk too; only SKILL.md fetched so far.
      assertEquals(report.basePath, `${cache}/docs-server/skill/report`);
      await assertRejects(() =>
        Deno.stat(`${report.basePath}/scripts/report.sh`)
      );
      const guide = await remote.readFile(report, "references/guide.md");
      assertEquals(new TextDecoder().decode(guide), "# Guide\n");
      await assertRejects(
        () => remote.readFile(report, "unlisted.md"),
        SkillVerificationError,
      );
      // A file changed on the server after the listing: refused (here by
      // the reference server itself, which checks its own entry), not used.
      await Deno.writeTextFile(
        `${root}/report/scripts/report.sh`,
        "echo tampered\n",
      );
      await assertRejects(() => remote.fetchAll(report));
      assert(
        !(await Deno.readTextFile(`${report.basePath}/scripts/report.sh`)
          .catch(() => "")).includes("tampered"),
      );
      await Deno.writeTextFile(
        `${root}/report/scripts/report.sh`,
        "echo report-ran\n",
      );
      await remote.fetchAll(report);
      // The agent runs the remote skill with its tools.
      await using kit = await buildSkillTools({ skills: [...remote.skills] });
      const loaded = await kit.tool("skill")!.execute({ name: "report" });
      assertStringIncludes(loaded.text, "Run `bash scripts/report.sh`.");
      const base = /Base directory: (.+)/.exec(loaded.text)![1]!;
      const ran = await kit.tool("bash")!.execute({
        command: "bash scripts/report.sh",
        working_directory: base,
      });
      assertStringIncludes(ran.text, "report-ran");
    } finally {
      await Deno.remove(root, { recursive: true });
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test("loadMcpSkills: allowedTools opts in; a server without the extension gives a warning; server label required", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await makeSkills(root);
    const { skills } = await loadSkills(root);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const connection = await connectMcpServer([], serverSide, { skills });
    await using remote = await loadMcpSkills(clientSide, {
      server: "own",
      allowedTools: true,
    });
    assertEquals(
      remote.skills.find((s) => s.name === "report")!.allowedTools,
      ["Bash(rm:*)"],
    );
    // skillrun's server serves the new bytes of a changed file: they fail
    // the held entry's digest and are not written.
    const greet = remote.skills.find((s) => s.name === "greet")!;
    await Deno.writeTextFile(
      `${root}/greet/SKILL.md`,
      "---\nname: greet\ndescription: Greets.\n---\nSay hello, changed.\n",
    );
    await assertRejects(
      () => remote.readFile(greet, "SKILL.md"),
      SkillVerificationError,
      "the entry says",
    );
    assertEquals(
      await Deno.readTextFile(greet.location),
      "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n",
    );
    await connection.close();

    const [bareClient, bareServer] = InMemoryTransport.createLinkedPair();
    const bare = await connectMcpServer([], bareServer, {});
    await using none = await loadMcpSkills(bareClient, { server: "bare" });
    assertEquals(none.skills, []);
    assertStringIncludes(
      none.warnings[0]!,
      "does not serve the skills extension",
    );
    await bare.close();
    await assertRejects(
      () =>
        loadMcpSkills(InMemoryTransport.createLinkedPair()[0], {
          server: " ",
        }),
      TypeError,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
