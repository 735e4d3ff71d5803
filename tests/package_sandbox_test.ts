/**
 * Packages prepared straight inside a sandbox (issue 20, item 4): the
 * archive streams from its source into the OpenSandbox, AIO, E2B and Vercel
 * test servers,
 * is checked in the stream and extracted there; what lands is byte-identical
 * to the folder preparation; a wrong digest, a digest that changes
 * mid-stream and a hostile archive leave nothing in the sandbox; an
 * edge-like process (network only, no file permission) does it too.
 */
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "@std/assert";
import { hostPath } from "../_internal/std.ts";
import {
  installPackage,
  loadPackageSkill,
  type PackageArchiveSource,
  packageSource,
  packSkill,
} from "../package/mod.ts";
import { gzip, makeTar, makeZip, skillMd } from "./helpers/package.ts";
import { sha256Of } from "../package/_digest.ts";
import { packageOrigin } from "../package/remote.ts";
import { startTestServer, TEST_API_KEY } from "./helpers/opensandbox.ts";
import { countingFetch, waitFor } from "./helpers/remote.ts";
import { startAioTestServer } from "./helpers/aio.ts";
import { startE2BTestServer } from "./helpers/e2b.ts";
import { startVercelTestServer } from "./helpers/vercel.ts";
import { startDaytonaTestServer } from "./helpers/daytona.ts";
import { startDenoSandboxTestServer } from "./helpers/deno_sandbox.ts";
import type { RemoteSkillRuntime } from "../runtimes/remote/runtime.ts";
import { buildSkillTools, dispatchToolCall } from "../mod.ts";
import { loadSkills } from "../skill/load.ts";
import { MemoryConversationStore } from "../runtimes/stores/conversation_store.ts";
import { anthropicsSkills, sharedTest } from "./helpers/shared_data.ts";

const CORPUS_DATA = anthropicsSkills();
const CORPUS = CORPUS_DATA.path;

/** Every file below a folder: relative path → [bytes, executable]. */
async function tree(dir: string): Promise<Map<string, [Uint8Array, boolean]>> {
  const out = new Map<string, [Uint8Array, boolean]>();
  const walk = async (rel: string) => {
    for await (const entry of Deno.readDir(hostPath.join(dir, rel))) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      const full = hostPath.join(dir, path);
      if (entry.isDirectory) await walk(path);
      else {
        const info = await Deno.lstat(full);
        assert(info.isFile, `${path} is not a regular file`);
        out.set(path, [
          await Deno.readFile(full),
          ((info.mode ?? 0) & 0o100) !== 0,
        ]);
      }
    }
  };
  await walk("");
  return out;
}

function assertSameTree(
  a: Map<string, [Uint8Array, boolean]>,
  b: Map<string, [Uint8Array, boolean]>,
): void {
  assertEquals([...a.keys()].sort(), [...b.keys()].sort());
  for (const [path, [bytes, executable]] of a) {
    const [other, otherExecutable] = b.get(path)!;
    assertEquals(other, bytes, `${path} differs`);
    assertEquals(otherExecutable, executable, `${path}: executable bit`);
  }
}

/** A copy of a corpus skill with an executable script added. */
async function skillFolder(dir: string, name: string): Promise<string> {
  const folder = hostPath.join(dir, "src", name);
  await Deno.mkdir(folder, { recursive: true });
  const from = hostPath.join(CORPUS, name);
  for await (const entry of Deno.readDir(from)) {
    await new Deno.Command("cp", {
      args: ["-R", hostPath.join(from, entry.name), folder],
    }).output();
  }
  await Deno.writeTextFile(`${folder}/run.sh`, "#!/bin/sh\necho ran\n", {
    mode: 0o755,
  });
  await Deno.chmod(`${folder}/run.sh`, 0o755);
  return folder;
}

/** The entries of a sandbox folder on this host (the test servers map paths 1:1). */
async function entriesOf(dir: string): Promise<string[]> {
  try {
    return (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name)
      .sort();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** The remote kinds, each with its test server. */
const KINDS = [
  "opensandbox",
  "aio",
  "e2b",
  "vercel",
  "daytona",
  "deno-sandbox",
] as const;
type Kind = typeof KINDS[number];

async function withServer(
  kind: Kind,
  run: (runtime: RemoteSkillRuntime, dir: string) => Promise<void>,
): Promise<void> {
  await using server = kind === "opensandbox"
    ? await startTestServer()
    : kind === "aio"
    ? await startAioTestServer()
    : kind === "e2b"
    ? await startE2BTestServer()
    : kind === "daytona"
    ? await startDaytonaTestServer()
    : kind === "deno-sandbox"
    ? await startDenoSandboxTestServer()
    : await startVercelTestServer();
  await run(server.runtime(), server.dir);
}

/**
 * The hostile archives (a path climbing out, a symlink, a hard link, a
 * device, a decompression bomb of 40 MiB), each with its right digest: made
 * once for every kind (the bomb takes a while to compress), never changed.
 */
let hostileOnce: Promise<readonly [string, Uint8Array][]> | undefined;
function hostileArchives(): Promise<readonly [string, Uint8Array][]> {
  hostileOnce ??= (async (): Promise<[string, Uint8Array][]> => [
    [
      "slip",
      makeZip([{ name: "x/SKILL.md", data: skillMd("x") }, {
        name: "x/../../evil",
        data: "boom",
      }]),
    ],
    [
      "symlink",
      makeZip([{ name: "x/SKILL.md", data: skillMd("x") }, {
        name: "x/link",
        data: "/etc/passwd",
        mode: 0o120777,
      }]),
    ],
    [
      "hard link",
      await gzip(makeTar([
        { name: "x/SKILL.md", data: skillMd("x") },
        { name: "x/h", type: "1", linkname: "x/SKILL.md" },
      ])),
    ],
    [
      "device",
      await gzip(makeTar([
        { name: "x/SKILL.md", data: skillMd("x") },
        { name: "x/dev", type: "3" },
      ])),
    ],
    [
      "bomb",
      await gzip(makeTar([
        { name: "x/SKILL.md", data: skillMd("x") },
        { name: "x/zeros", data: new Uint8Array(40 * 1024 * 1024) },
      ])),
    ],
  ])();
  return hostileOnce;
}

for (const kind of KINDS) {
  for (const format of ["zip", "tar.gz"] as const) {
    Deno.test({
      ...sharedTest(
        CORPUS_DATA,
        `${kind}: a ${format} package prepared straight in the sandbox is byte-identical to the folder preparation`,
      ),
      async fn() {
        await withServer(kind, async (runtime, dir) => {
          const folder = await skillFolder(dir, "canvas-design");
          const packed = await packSkill(folder, { format });
          const skill = await loadPackageSkill(
            { bytes: packed.bytes!, digest: packed.digest },
            // Small pieces: the archive goes in several uploads.
            { prepare: { pieceBytes: 1024 * 1024 } },
          );
          assertEquals(skill.name, "canvas-design");
          assertEquals(skill.package.digest, packed.digest);
          const [fromFolder] =
            (await loadSkills(folder, { maxDepth: 0 })).skills;
          const [a, b] = await runtime.prepare({
            skills: [{ skill: fromFolder! }, { skill }],
          });
          assert(a!.basePath !== b!.basePath);
          assertSameTree(await tree(a!.basePath), await tree(b!.basePath));
          // Nothing of the staging is left beside it.
          assertEquals(
            (await entriesOf(hostPath.dirname(b!.basePath))).filter((n) =>
              n.startsWith(".")
            ),
            [],
          );
          const ran = await runtime.execute({
            command: "./run.sh",
            cwd: b!.basePath,
          });
          assertEquals(ran.stdout, "ran\n");
        });
      },
    });
  }

  Deno.test({
    ...sharedTest(
      CORPUS_DATA,
      `${kind}: a wrong digest, a digest that changes mid-stream and a hostile archive leave nothing in the sandbox`,
    ),
    async fn() {
      await withServer(kind, async (runtime, dir) => {
        const skillsRoot = runtime.skillsRoot;
        const folder = await skillFolder(dir, "brand-guidelines");
        const packed = await packSkill(folder, { format: "tar.gz" });
        const good = await loadPackageSkill({
          bytes: packed.bytes!,
          digest: packed.digest,
        });
        const prepareWith = (source: PackageArchiveSource) =>
          runtime.prepare({
            skills: [{
              skill: Object.freeze({
                ...good,
                remoteOrigin: packageOrigin(source, { pieceBytes: 4096 }),
              }),
            }],
          });

        // 1. A wrong digest: refused after streaming, before extraction.
        const wrong = "sha256:" + "0".repeat(64);
        const error1 = await assertRejects(() =>
          prepareWith(packageSource({ bytes: packed.bytes!, digest: wrong }))
        );
        assertStringIncludes(String(error1), "expected " + wrong);
        assertEquals(await entriesOf(skillsRoot), []);

        // 2. A digest that changes mid-stream: the first half right, then
        //    other bytes (in a stored ZIP's file data, so only the digest tells).
        const zipped = makeZip([
          { name: "x/SKILL.md", data: skillMd("x") },
          { name: "x/data.txt", data: "a".repeat(64 * 1024) },
        ]);
        const changing: PackageArchiveSource = {
          digest: sha256Of(zipped),
          source: "changing",
          open: () =>
            Promise.resolve(
              ReadableStream.from((function* () {
                const half = Math.floor(zipped.length / 2);
                yield zipped.slice(0, half);
                const rest = zipped.slice(half);
                rest[0]! ^= 0x01;
                yield rest;
              })()),
            ),
        };
        const error2 = await assertRejects(() => prepareWith(changing));
        assertStringIncludes(String(error2), `expected ${sha256Of(zipped)}`);
        assertEquals(await entriesOf(skillsRoot), []);

        // 3. Hostile archives, each with its right digest: refused by the rules.
        const hostile = await hostileArchives();
        for (const [what, bytes] of hostile) {
          const error = await assertRejects(
            () =>
              prepareWith(
                packageSource({ bytes, digest: sha256Of(bytes) }),
              ),
            Error,
            undefined,
            what,
          );
          assertStringIncludes(
            String(error),
            "Refused the skill package",
            what,
          );
          assert(
            /climbs|links|regular files|decompression bomb/.test(String(error)),
            `${what}: ${error}`,
          );
          assertEquals(await entriesOf(skillsRoot), [], what);
        }
        assertEquals(await entriesOf(`${dir}/../evil`), []);

        // The right package still prepares after all this.
        const [prepared] = await runtime.prepare({ skills: [{ skill: good }] });
        assert((await entriesOf(prepared!.basePath)).includes("SKILL.md"));
      });
    },
  });
}

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "buildSkillTools: a package from a URL on an OpenSandbox runtime is prepared in the sandbox on the first skill call",
  ),
  async fn() {
    await using server = await startTestServer();
    const folder = await skillFolder(server.dir, "internal-comms");
    const packed = await packSkill(folder, { format: "zip" });
    let fetched = 0;
    await using http = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      () => {
        fetched++;
        return new Response(packed.bytes! as Uint8Array<ArrayBuffer>);
      },
    );
    const url = `http://127.0.0.1:${http.addr.port}/internal-comms.zip`;
    const skill = await loadPackageSkill({ url, digest: packed.digest });
    const runtime = server.runtime();
    await using kit = await buildSkillTools({ skills: [skill], runtime });
    assertEquals(fetched, 1);
    const loaded = await dispatchToolCall(kit.tools, {
      name: "skill",
      arguments: { name: "internal-comms" },
    });
    assert(!loaded.isError, loaded.text);
    assertEquals(fetched, 2);
    const listing = await dispatchToolCall(kit.tools, {
      name: "bash",
      arguments: { command: "ls .skills/internal-comms-*/" },
    });
    assertStringIncludes(listing.text, "SKILL.md");
    assertStringIncludes(listing.text, "run.sh");
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "an edge-like process (network only: no file, env or run permission) prepares a package in the OpenSandbox server",
  ),
  async fn() {
    await using server = await startTestServer();
    const folder = await skillFolder(server.dir, "internal-comms");
    const packed = await packSkill(folder, { format: "tar.gz" });
    await using http = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      () => new Response(packed.bytes! as Uint8Array<ArrayBuffer>),
    );
    const skillsRoot = `${server.dir}/edge-skills`;
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--allow-net=127.0.0.1",
        hostPath.fromFileUrl(
          new URL("./testdata/package_edge.ts", import.meta.url),
        ),
        `http://127.0.0.1:${http.addr.port}/p.tar.gz`,
        packed.digest,
        server.url,
        TEST_API_KEY,
        skillsRoot,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert(output.success, stderr);
    const basePath = new TextDecoder().decode(output.stdout).trim();
    assert(basePath.startsWith(`${skillsRoot}/internal-comms-`), basePath);
    assertSameTree(await tree(folder), await tree(basePath));
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "buildSkillTools: an installed package on a remote runtime streams its kept archive (one upload), a package skill on a local runtime is refused",
  ),
  async fn() {
    await using server = await startTestServer();
    const folder = await skillFolder(server.dir, "brand-guidelines");
    const packed = await packSkill(folder, { format: "zip" });
    const pkg = await installPackage(packed.bytes!, {
      root: `${server.dir}/cache`,
      digest: packed.digest,
    });
    assert(pkg.archivePath !== undefined);
    const counted = countingFetch();
    const runtime = server.runtime({ fetch: counted.fetch });
    await using kit = await buildSkillTools({ skills: [pkg], runtime });
    const loaded = await dispatchToolCall(kit.tools, {
      name: "skill",
      arguments: { name: "brand-guidelines" },
    });
    assert(!loaded.isError, loaded.text);
    const uploads = counted.requests.filter((r) =>
      r.path.endsWith("/files/upload")
    );
    assertEquals(uploads.length, 1);
    const [prepared] = await runtime.prepare({
      skills: [{ skill: kit.skills[0]! }],
    });
    assertSameTree(await tree(folder), await tree(prepared!.basePath));

    const skill = await loadPackageSkill({
      bytes: packed.bytes!,
      digest: packed.digest,
    });
    await assertRejects(
      () => buildSkillTools({ skills: [skill] }),
      TypeError,
      "only a remote runtime prepares",
    );
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "conversation mode: a package prepared by one runtime is not streamed again by the next one of the conversation",
  ),
  async fn() {
    await using server = await startTestServer();
    const folder = await skillFolder(server.dir, "internal-comms");
    const packed = await packSkill(folder, { format: "tar.gz" });
    let opened = 0;
    const source: PackageArchiveSource = {
      ...packageSource({ bytes: packed.bytes!, digest: packed.digest }),
      open: () => {
        opened++;
        return Promise.resolve(ReadableStream.from([packed.bytes!]));
      },
    };
    const skill = await loadPackageSkill(source);
    assertEquals(opened, 1);
    const store = new MemoryConversationStore();
    const options = {
      conversationId: "thread-1",
      conversationsRoot: `${server.dir}/conversations`,
      store,
    };
    const first = server.runtime(options);
    const [a] = await first.prepare({ skills: [{ skill }] });
    assertEquals(opened, 2);
    await first.close();
    const second = server.runtime(options);
    const [b] = await second.prepare({ skills: [{ skill }] });
    assertEquals(opened, 2);
    assertEquals(b!.basePath, a!.basePath);
    assertSameTree(await tree(folder), await tree(b!.basePath));
  },
});

Deno.test("opensandbox: a preparation aborted mid-stream leaves nothing in the sandbox", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const bytes = makeZip([
    { name: "x/SKILL.md", data: skillMd("x") },
    { name: "x/data.bin", data: crypto.getRandomValues(new Uint8Array(60000)) },
  ]);
  const good = await loadPackageSkill({ bytes, digest: sha256Of(bytes) });
  const controller = new AbortController();
  const stalled: PackageArchiveSource = {
    digest: sha256Of(bytes),
    source: "stalled",
    open: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(stream) {
            // More than one piece, then nothing more: the upload is under way.
            stream.enqueue(bytes.slice(0, 20000));
            setTimeout(() => controller.abort(new Error("stop")), 500);
          },
        }),
      ),
  };
  const skill = Object.freeze({
    ...good,
    remoteOrigin: packageOrigin(stalled, { pieceBytes: 8192 }),
  });
  await assertRejects(
    () => runtime.prepare({ skills: [{ skill }], signal: controller.signal }),
    Error,
  );
  // The clean-up may finish just after the preparation gave up.
  assert(
    await waitFor(async () =>
      (await entriesOf(runtime.skillsRoot)).length === 0
    ),
    `left: ${await entriesOf(runtime.skillsRoot)}`,
  );
});
