// `skillrun mcp` serving the MCP Skills extension (Final), checked by the
// official tools: the TypeScript SDK 2.x's SkillsClient (test-only) reading
// and verifying every file, and the conformance suite's sep-2640 scenarios.
import { Client } from "npm:@modelcontextprotocol/client@2.4.0";
import { StdioClientTransport } from "npm:@modelcontextprotocol/client@2.4.0/stdio";
import {
  SkillsClient,
  SkillVerificationError,
} from "npm:@modelcontextprotocol/client@2.4.0/ext/skills";
import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const CLI = hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url));

/** Three skills with folders, a binary file and typed front matter, and one the extension refuses. */
async function makeSkills(): Promise<string> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const write = async (path: string, data: string | Uint8Array) => {
    await Deno.mkdir(hostPath.dirname(`${root}/${path}`), { recursive: true });
    if (typeof data === "string") {
      await Deno.writeTextFile(`${root}/${path}`, data);
    } else await Deno.writeFile(`${root}/${path}`, data);
  };
  await write(
    "pdf-tools/SKILL.md",
    '---\nname: pdf-tools\ndescription: Fills PDF forms.\nlicense: MIT\nmetadata:\n  version: "2.1"\ndisable-model-invocation: false\n---\nPick a template from `templates/`.\n',
  );
  await write("pdf-tools/templates/invoice.md", "# Invoice\n");
  await write("pdf-tools/templates/regional/eu.md", "# EU\n");
  await write("pdf-tools/scripts/fill.py", "print('fill')\n");
  await write("pdf-tools/assets/logo.bin", new Uint8Array([0, 255, 1, 2, 0]));
  await write(
    "greet/SKILL.md",
    "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n",
  );
  await write(
    "csv-report/SKILL.md",
    "---\nname: csv-report\ndescription: Summarises CSV files.\ncompatibility: Needs python3\n---\nRun the script.\n",
  );
  await write("csv-report/scripts/report.py", "print(1)\n");
  await write(
    "too-long/SKILL.md",
    `---\nname: too-long\ndescription: ${"x".repeat(1100)}\n---\nBody.\n`,
  );
  return root;
}

Deno.test({
  name:
    "mcp: the official SDK 2.x SkillsClient lists, gets and reads every file served by cli.ts mcp, each verified",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = await makeSkills();
    const transport = new StdioClientTransport({
      command: Deno.execPath(),
      args: ["run", "-A", "--quiet", CLI, "mcp", "--skills", root],
      stderr: "pipe",
      env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Uint8Array) => {
      stderr += new TextDecoder().decode(chunk);
    });
    const client = new Client({ name: "skills-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const skills = new SkillsClient(client);
      assert(skills.supported);
      assert(skills.directoryRead);
      const listing = await skills.list();
      assertEquals(listing.invalid, []);
      assertEquals(
        listing.skills.map((s) => s.uri),
        [
          "skill://csv-report/SKILL.md",
          "skill://greet/SKILL.md",
          "skill://pdf-tools/SKILL.md",
        ],
      );
      let files = 0;
      for (const skill of listing.skills) {
        assert(skill.resources !== "dynamic");
        for (const resource of skill.resources) {
          const file = await skills.read(skill, resource.uri);
          assert(file.verified, resource.uri);
          assertEquals(file.bytes.length, resource.size);
          files++;
        }
        const own = await skills.read(skill);
        assertEquals(own.frontmatter, skill.frontmatter);
        const { skill: got } = await skills.get(skill.uri);
        assertEquals(got, skill);
      }
      assertEquals(files, 8);
      const pdf = listing.skills.find((s) => s.uri.includes("pdf-tools"))!;
      assertEquals(pdf.frontmatter["disable-model-invocation"], false);
      assertEquals(pdf.frontmatter.metadata, { version: "2.1" });
      const dir = await skills.readDirectory("skill://pdf-tools/templates");
      assertEquals(
        dir.resources.map((r) => [r.name, r.mimeType]),
        [["invoice.md", "text/markdown"], ["regional", "inode/directory"]],
      );
      // A file changed after the listing: read afresh (not from the client's
      // response cache), the held entry no longer verifies it; a fresh entry
      // does.
      await Deno.writeTextFile(
        `${root}/greet/SKILL.md`,
        "---\nname: greet\ndescription: Greets.\n---\nSay hello twice.\n",
      );
      const greet = listing.skills.find((s) => s.uri.includes("greet"))!;
      await assertRejects(
        () => skills.read(greet, undefined, { cacheMode: "refresh" }),
        SkillVerificationError,
      );
      const { skill: fresh } = await skills.get(greet.uri);
      assertStringIncludes((await skills.read(fresh)).body ?? "", "twice");
      assertStringIncludes(stderr, `Not serving skill "too-long"`);
    } finally {
      await client.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

/** `cli.ts mcp --http 127.0.0.1:0` over a folder of skills, its URL from stdout. */
async function withHttpServer(
  skills: string,
  fn: (url: string) => Promise<void>,
  extraArgs: readonly string[] = [],
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-kv", // --store's KV file
      "--quiet",
      CLI,
      "mcp",
      "--skills",
      skills,
      "--root",
      root,
      "--http",
      "127.0.0.1:0",
      ...extraArgs,
    ],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  try {
    while (!first.includes("\n")) {
      const { done, value } = await lines.read();
      if (done) break;
      first += value;
    }
    assertMatch(first, /^http:\/\/127\.0\.0\.1:\d+\/mcp\n$/);
    await fn(first.trim());
  } finally {
    child.kill("SIGTERM");
    await lines.cancel();
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

Deno.test({
  name:
    "mcp --http passes the official conformance suite's sep-2640 scenarios (0.2.0-alpha.12), no failure and no warning",
  sanitizeResources: false,
  fn: async () => {
    const skills = await makeSkills();
    try {
      await withHttpServer(skills, async (url) => {
        for (
          const scenario of [
            "sep-2640-skills-enumeration",
            "sep-2640-skills-manifest",
            "sep-2640-skills-directory",
          ]
        ) {
          // The suite files extension scenarios outside the spec timeline,
          // hence --force.
          const text = await conformance(url, scenario, "--force");
          const summary = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/
            .exec(text);
          assert(summary, `${scenario}: no summary\n${text}`);
          assertEquals(summary[1], summary[2], `${scenario}\n${text}`);
          assertEquals(
            [summary[3], summary[4]],
            ["0", "0"],
            `${scenario}\n${text}`,
          );
          assert(Number(summary[1]) >= 6, `${scenario}\n${text}`);
        }
      });
    } finally {
      await Deno.remove(skills, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "mcp --http --store: the official conformance suite's SSE checks find the priming event and the retry field (SEP-1699), no warning",
  sanitizeResources: false,
  fn: async () => {
    const skills = await makeSkills();
    const store = await Deno.makeTempDir();
    try {
      await withHttpServer(skills, async (url) => {
        const text = await conformance(url, "server-sse-polling");
        assertMatch(text, /\[server-sse-priming-event\s*\]\s*SUCCESS/, text);
        assertMatch(text, /\[server-sse-retry-field\s*\]\s*SUCCESS/, text);
        // The scenario's own tool (`test_reconnection`, of the suite's
        // reference server) is not one of ours: its call is the one failure.
        const summary = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/
          .exec(text);
        assert(summary, text);
        assertEquals([summary[3], summary[4]], ["1", "0"], text);
        assertMatch(text, /test_reconnection|Tool call failed/, text);
      }, ["--store", `${store}/sessions.kv`]);
    } finally {
      await Deno.remove(skills, { recursive: true });
      await Deno.remove(store, { recursive: true });
    }
  },
});

/**
 * Runs one scenario of the official MCP conformance suite against `url`
 * (the stateful lifecycle, spec 2025-11-25) and returns what it printed.
 */
async function conformance(
  url: string,
  scenario: string,
  ...extra: string[]
): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
      "server",
      "--url",
      url,
      "--scenario",
      scenario,
      "--spec-version",
      "2025-11-25",
      ...extra,
    ],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  // Its log is coloured whatever NO_COLOR says.
  return (new TextDecoder().decode(output.stdout) +
    new TextDecoder().decode(output.stderr)).replaceAll(SGR, "");
}

/** A colour sequence (ESC, `[`, parameters, `m`). */
const SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
