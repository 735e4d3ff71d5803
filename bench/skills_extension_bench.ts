/**
 * Issue 31 figures, run on their own (`deno run -A bench/skills_extension_bench.ts`):
 * `skills/list` of the MCP skills extension over the corpus (the anthropics
 * skills of ../shared plus examples/skills), the first listing in a fresh
 * process (every file hashed) against a repeat (digests kept by file identity
 * and modification time: nothing hashed), and the hot-reload latency of
 * `buildSkillTools({ watch: true })` (a skill written until it is in
 * `kit.tools`).
 *
 * @module
 */
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ResultSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { hostPath } from "../_internal/std.ts";
import { loadSkills } from "../skill/load.ts";
import { buildSkillTools } from "../tools/builder.ts";
import { connectMcpServer } from "../tools/mcp/mod.ts";
import * as extension from "../tools/mcp/_skills_extension.ts";

const CORPUS = hostPath.fromFileUrl(
  new URL("../../shared/corpora/anthropics-skills/", import.meta.url),
);
const EXAMPLES = hostPath.fromFileUrl(
  new URL("../examples/skills/", import.meta.url),
);

const { skills } = await loadSkills([CORPUS, EXAMPLES]);
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
const connection = await connectMcpServer([], serverSide, {
  skills,
  onWarning: () => {},
});
const client = new Client({ name: "bench", version: "1" });
await client.connect(clientSide);
const list = async () => {
  const start = performance.now();
  const result = await client.request(
    { method: "skills/list", params: {} },
    ResultSchema.passthrough(),
  ) as unknown as { skills: { resources: unknown[] }[] };
  return {
    ms: performance.now() - start,
    served: result.skills.length,
    files: result.skills.reduce((n, s) => n + s.resources.length, 0),
  };
};
const hashedBefore = extension.filesHashed;
const first = await list();
const hashedFirst = extension.filesHashed - hashedBefore;
const repeats: number[] = [];
for (let i = 0; i < 5; i++) repeats.push((await list()).ms);
const hashedRepeat = extension.filesHashed - hashedBefore - hashedFirst;
await client.close();
await connection.close();

// Hot reload: a skill written until the kit's tools offer it.
const root = await Deno.makeTempDir();
await Deno.mkdir(`${root}/alpha`);
await Deno.writeTextFile(
  `${root}/alpha/SKILL.md`,
  "---\nname: alpha\ndescription: A.\n---\nA.\n",
);
const kit = await buildSkillTools({ skills: root, watch: true });
const latencies: number[] = [];
for (let i = 0; i < 5; i++) {
  const name = `added-${i}`;
  const start = performance.now();
  await Deno.mkdir(`${root}/${name}`);
  await Deno.writeTextFile(
    `${root}/${name}/SKILL.md`,
    `---\nname: ${name}\ndescription: Added.\n---\nAdded.\n`,
  );
  while (!kit.tool("skill")!.description.includes(`<name>${name}</name>`)) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  latencies.push(performance.now() - start);
}
await kit.close();
await Deno.remove(root, { recursive: true });

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(JSON.stringify(
  {
    skillsLoaded: skills.length,
    skillsServed: first.served,
    files: first.files,
    firstListMs: Math.round(first.ms * 10) / 10,
    filesHashedFirst: hashedFirst,
    repeatListMsMedian: Math.round(median(repeats) * 10) / 10,
    filesHashedRepeat: hashedRepeat,
    reloadMs: latencies.map((ms) => Math.round(ms)),
    peakRssMiB: Math.round(Deno.memoryUsage().rss / 1024 / 1024),
  },
  null,
  2,
));
