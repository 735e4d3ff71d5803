/**
 * Issue 31 figures. In `bench/main.ts` (`deno task bench skills-ext`): a
 * repeated `skills/list` (digests kept) against a first listing (the digest
 * cache emptied before each), and a hot reload (a skill written until it is
 * in `kit.tools`) against rebuilding the tools from scratch. The full report
 * runs on its own (`deno run -A bench/skills_extension_bench.ts --report`):
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
import { type BenchCase, runChild } from "./_harness.ts";
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

/** An MCP client connected in memory to a server of the corpus's skills. */
async function listingClient(): Promise<Client> {
  const { skills } = await loadSkills([CORPUS, EXAMPLES]);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await connectMcpServer([], serverSide, { skills, onWarning: () => {} });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(clientSide);
  return client;
}

let client: Client | undefined;
async function listOnce(): Promise<void> {
  client ??= await listingClient();
  const result = await client.request(
    { method: "skills/list", params: {} },
    ResultSchema.passthrough(),
  ) as unknown as { skills: unknown[] };
  if (result.skills.length === 0) throw new Error("No skill served");
}

/** A watched kit over a temp folder, and how many skills were added. */
let watched:
  | { root: string; kit: Awaited<ReturnType<typeof buildSkillTools>> }
  | undefined;
let added = 0;
async function watchedKit() {
  if (watched) return watched;
  const root = await Deno.makeTempDir();
  await Deno.mkdir(`${root}/alpha`);
  await Deno.writeTextFile(
    `${root}/alpha/SKILL.md`,
    "---\nname: alpha\ndescription: A.\n---\nA.\n",
  );
  const kit = await buildSkillTools({ skills: root, watch: true });
  return watched = { root, kit };
}
async function addSkill(root: string): Promise<string> {
  const name = `added-${added++}`;
  await Deno.mkdir(`${root}/${name}`);
  await Deno.writeTextFile(
    `${root}/${name}/SKILL.md`,
    `---\nname: ${name}\ndescription: Added.\n---\nAdded.\n`,
  );
  return name;
}

/** The bench cases of issue 31. */
export const cases: BenchCase[] = [
  {
    id: "skills-ext-list",
    title:
      "skills/list over the corpus: repeat (digests kept) vs first listing",
    module: import.meta.url,
    interleaved: true,
    iterations: 10,
    rounds: 2,
    skipReason: () => {
      try {
        Deno.statSync(CORPUS);
        return undefined;
      } catch {
        return "../shared/corpora/anthropics-skills is absent";
      }
    },
    ours: { label: "skills/list, repeat", fn: listOnce },
    baseline: {
      label: "skills/list, first (digest cache emptied)",
      before: () => extension.forgetDigests(),
      fn: listOnce,
    },
  },
  {
    id: "skills-ext-reload",
    title:
      "a skill added on disk: hot reload until kit.tools offers it vs a new buildSkillTools",
    module: import.meta.url,
    iterations: 5,
    rounds: 2,
    ours: {
      label: "watch: write, wait for kit.tools",
      fn: async () => {
        const { root, kit } = await watchedKit();
        const name = await addSkill(root);
        const start = performance.now();
        while (
          !kit.tool("skill")!.description.includes(`<name>${name}</name>`)
        ) {
          if (performance.now() - start > 5000) {
            throw new Error(`${name} not reloaded after 5 s`);
          }
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      },
    },
    baseline: {
      label: "write, buildSkillTools again",
      fn: async () => {
        const { root } = await watchedKit();
        await addSkill(root);
        await using kit = await buildSkillTools({ skills: root });
        if (!kit.tool("skill")) throw new Error("No skill tool");
      },
    },
  },
];

/** The full report: first listing, repeats, reload latencies. */
async function report(): Promise<void> {
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
}

if (import.meta.main) {
  if (Deno.args[0] === "--bench-child") {
    await runChild(cases);
    // What the sides opened: the watcher would keep the child alive.
    await client?.close();
    if (watched) {
      await watched.kit.close();
      await Deno.remove(watched.root, { recursive: true });
    }
  } else await report();
}
