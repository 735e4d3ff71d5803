/**
 * The `read` tool before and after issue 29's "check once" (stop 37), in one
 * run: the same process loads the tool and the runtimes from this tree and
 * from a baseline tree (`git archive <ref>`, default `main`), and reads, side
 * by side and alternating, a small file and the end of a 1 GiB file in a
 * conversation workspace: on the local runtime, on the OpenSandbox test
 * server and on the AIO test server (tests/servers/, in process; AIO's
 * `stat` is a command, OpenSandbox's a request). Besides the time it counts what the
 * issue is about: walks of the local fence (`PathFence.prototype.resolve`
 * of each tree, counted) and requests the test server answered, per read.
 *
 * Run: `deno run -A bench/read_ab.ts [ref] [small iterations] [large iterations]`.
 * Needs about 1 GiB of free space in the temporary folder (one file,
 * hard-linked into each workspace).
 *
 * @module
 */
import { startTestServer } from "../tests/helpers/opensandbox.ts";
import { startAioTestServer, TEST_TOKEN } from "../tests/helpers/aio.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import type { Tool } from "../tools/types.ts";

const ref = Deno.args[0] ?? "main";
const smallIterations = Number(Deno.args[1] ?? 30);
const largeIterations = Number(Deno.args[2] ?? 3);
const GIB = 1024 ** 3;
const LINE =
  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
const LINES = GIB / LINE.length;

const here = new URL("../", import.meta.url).pathname;
const work = await Deno.makeTempDir({ prefix: "skillrun-read-ab-" });

/** One tree's code: its runtimes, tool factories and fence. */
interface Tree {
  readonly name: string;
  readonly LocalSkillRuntime: {
    create(options: Record<string, unknown>): Promise<SkillRuntime>;
  };
  readonly OpenSandboxSkillRuntime: new (
    options: Record<string, unknown>,
  ) => SkillRuntime;
  readonly AioSkillRuntime: new (
    options: Record<string, unknown>,
  ) => SkillRuntime;
  readonly createReadTool: (context: unknown) => Tool;
  readonly createToolContext: (runtime: SkillRuntime) => unknown;
  readonly PathFence: { prototype: { resolve(path: string): unknown } };
}

async function load(name: string, root: string): Promise<Tree> {
  const url = (path: string) => new URL(path, `file://${root}`).href;
  const local = await import(url("runtimes/local/runtime.ts"));
  const opensandbox = await import(url("runtimes/opensandbox/runtime.ts"));
  const aio = await import(url("runtimes/aio/runtime.ts"));
  const read = await import(url("tools/read.ts"));
  const context = await import(url("tools/context.ts"));
  const fence = await import(url("workspace/fence.ts"));
  return {
    name,
    LocalSkillRuntime: local.LocalSkillRuntime,
    OpenSandboxSkillRuntime: opensandbox.OpenSandboxSkillRuntime,
    AioSkillRuntime: aio.AioSkillRuntime,
    createReadTool: read.createReadTool,
    createToolContext: context.createToolContext,
    PathFence: fence.PathFence,
  };
}

/** Extracts `ref` of this repository into a folder of `work`. */
async function extract(ref: string): Promise<string> {
  const dir = `${work}/base/`;
  await Deno.mkdir(dir);
  const archive = new Deno.Command("git", {
    args: ["-C", here, "archive", ref],
    stdout: "piped",
  }).spawn();
  const tar = new Deno.Command("tar", {
    args: ["-x", "-C", dir],
    stdin: "piped",
  }).spawn();
  await archive.stdout.pipeTo(tar.stdin);
  if (!(await archive.status).success || !(await tar.status).success) {
    throw new Error(`Cannot extract ${ref} of ${here}`);
  }
  return dir;
}

/** Counts each tree's fence walks. */
function countWalks(tree: Tree): () => number {
  const proto = tree.PathFence.prototype;
  const walk = proto.resolve;
  let walks = 0;
  proto.resolve = function (this: unknown, path: string) {
    walks++;
    return walk.call(this, path);
  };
  return () => walks;
}

async function makeLarge(path: string): Promise<void> {
  using file = await Deno.open(path, { write: true, create: true });
  const chunk = new TextEncoder().encode(LINE.repeat(16384));
  for (let written = 0; written < GIB; written += chunk.length) {
    let at = 0;
    while (at < chunk.length) at += await file.write(chunk.subarray(at));
  }
}

interface Side {
  readonly tree: Tree;
  readonly runtime: SkillRuntime;
  readonly read: Tool;
  readonly walks: () => number;
}

const uptime = () =>
  new TextDecoder().decode(
    new Deno.Command("uptime").outputSync().stdout,
  ).trim();

const startLoad = uptime();
const before = await load(`before (${ref})`, await extract(ref));
const after = await load("after (this tree)", here);
const trees = [before, after];
const walks = new Map(trees.map((tree) => [tree, countWalks(tree)]));

const large = `${work}/large.txt`;
await makeLarge(large);
const small = "line of a small file\n".repeat(100);

await using server = await startTestServer();
await using aioServer = await startAioTestServer();
const requests = {
  local: () => 0,
  opensandbox: () => server.server.requests.length,
  aio: () => aioServer.server.requests.length,
};
const sides: Record<keyof typeof requests, Side[]> = {
  local: [],
  opensandbox: [],
  aio: [],
};
for (const tree of trees) {
  const id = tree === before ? "before" : "after";
  const runtimes = {
    local: await tree.LocalSkillRuntime.create({
      conversationsRoot: `${work}/local`,
      conversationId: id,
    }),
    opensandbox: new tree.OpenSandboxSkillRuntime({
      baseUrl: server.url,
      apiKey: "test-key-0123456789",
      cwd: server.dir,
      skillsRoot: `${server.dir}/.skills`,
      conversationId: id,
      conversationsRoot: `${server.dir}/conversations`,
    }),
    aio: new tree.AioSkillRuntime({
      baseUrl: aioServer.server.baseUrl,
      apiKey: TEST_TOKEN,
      cwd: aioServer.dir,
      skillsRoot: `${aioServer.dir}/.skills`,
      conversationId: id,
      conversationsRoot: `${aioServer.dir}/conversations`,
    }),
  };
  for (const [kind, runtime] of Object.entries(runtimes)) {
    await runtime.fs.writeText("small.txt", small);
    await Deno.link(large, `${runtime.cwd}/large.txt`);
    const read = tree.createReadTool(tree.createToolContext(runtime));
    sides[kind as keyof typeof sides].push({
      tree,
      runtime,
      read,
      walks: walks.get(tree)!,
    });
  }
}

interface Row {
  runtime: string;
  file: string;
  side: string;
  medianMs: number;
  walksPerRead: number;
  requestsPerRead: number;
}
const rows: Row[] = [];
for (const [runtimeName, pair] of Object.entries(sides)) {
  const requested = requests[runtimeName as keyof typeof requests];
  for (
    const [file, input, iterations] of [
      ["small", { file_path: "small.txt", offset: 91 }, smallIterations],
      ["1 GiB, its end", {
        file_path: "large.txt",
        offset: LINES - 9,
      }, largeIterations],
    ] as const
  ) {
    const times = new Map<Side, number[]>(pair.map((s) => [s, []]));
    const counts = new Map<Side, [number, number]>(
      pair.map((s) => [s, [0, 0]]),
    );
    for (const side of pair) {
      const warm = await side.read.execute(input);
      if (warm.isError || !warm.text.includes("\t")) {
        throw new Error(`${side.tree.name}: ${warm.text.slice(0, 300)}`);
      }
    }
    for (let i = 0; i < iterations; i++) {
      const order = i % 2 === 0 ? pair : [...pair].reverse();
      for (const side of order) {
        const [walked, asked] = [side.walks(), requested()];
        const started = performance.now();
        const result = await side.read.execute(input);
        times.get(side)!.push(performance.now() - started);
        const c = counts.get(side)!;
        c[0] += side.walks() - walked;
        c[1] += requested() - asked;
        if (result.isError) throw new Error(result.text);
      }
    }
    for (const side of pair) {
      const sorted = times.get(side)!.sort((a, b) => a - b);
      const [w, r] = counts.get(side)!;
      rows.push({
        runtime: runtimeName,
        file,
        side: side.tree.name,
        medianMs: Number(sorted[Math.floor(sorted.length / 2)]!.toFixed(2)),
        walksPerRead: w / iterations,
        requestsPerRead: r / iterations,
      });
    }
    console.error(`read_ab: ${runtimeName}, ${file}: done`);
  }
}
for (const list of Object.values(sides)) {
  for (const side of list) await side.runtime.close();
}
await Deno.remove(work, { recursive: true });

console.log(`load at start: ${startLoad}`);
console.log(`load at end:   ${uptime()}`);
console.log(
  "| runtime | file | side | median ms | fence walks per read | requests per read |",
);
console.log("| --- | --- | --- | ---: | ---: | ---: |");
for (const row of rows) {
  console.log(
    `| ${row.runtime} | ${row.file} | ${row.side} | ${row.medianMs} | ${row.walksPerRead} | ${row.requestsPerRead} |`,
  );
}
