/**
 * The checklist every sandbox runtime with a lifecycle (OpenSandbox, E2B,
 * Vercel) passes on its test server, as one parameterised block: nothing is
 * sent before real use, and uploads are byte-identical. Each kind's own
 * behaviour (pausing, snapshots, faults) stays in its `runtime_test.ts`.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertGreater,
  assertRejects,
} from "../_internal/assert.ts";
import { WorkspaceEscapeError } from "../runtimes/errors.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import {
  countingFetch,
  makeSkill,
  type RemoteTestServer,
} from "../runtimes/remote/_testing.ts";
import { MemoryConversationStore } from "../workspace/conversation_store.ts";
import { buildSkillTools } from "../tools/builder.ts";
import { startTestServer } from "../runtimes/opensandbox/_testing.ts";
import { startE2BTestServer } from "../runtimes/e2b/_testing.ts";
import { startVercelTestServer } from "../runtimes/vercel/_testing.ts";

const CORPUS = new URL(
  "../../shared/corpora/anthropics-skills/skills/",
  import.meta.url,
);

/** The options every kind's test runtime takes here. */
interface CommonOptions {
  readonly fetch: typeof fetch;
  readonly conversationId: string;
  readonly conversationsRoot: string;
  readonly store: MemoryConversationStore;
}

/** One kind of runtime on its test server. */
interface Kind {
  readonly name: string;
  start(): Promise<RemoteTestServer<unknown, CommonOptions, SkillRuntime>>;
  /** The path of the one request an upload makes, when it makes one. */
  readonly uploadPath?: string;
}

const KINDS: readonly Kind[] = [
  { name: "OpenSandbox", start: startTestServer },
  { name: "E2B", start: startE2BTestServer },
  { name: "Vercel", start: startVercelTestServer, uploadPath: "/fs/write" },
];

for (const kind of KINDS) {
  Deno.test(`${kind.name}: no request is made before real use, nor for a refused path`, async () => {
    await using server = await kind.start();
    const counted = countingFetch();
    const skill = await makeSkill(`${server.dir}/src`, "idle");
    const runtime = server.runtime({
      fetch: counted.fetch,
      conversationId: "idle-1",
      conversationsRoot: `${server.dir}/conversations`,
      store: new MemoryConversationStore(),
    });
    await using tools = await buildSkillTools({ skills: [skill], runtime });
    assert(tools.tools.length > 0);
    await assertRejects(
      () => runtime.fs.readText("/etc/passwd", { maxBytes: 100 }),
      WorkspaceEscapeError,
    );
    await assertRejects(
      () => runtime.execute({ command: "pwd", workingDirectory: "../other" }),
      WorkspaceEscapeError,
    );
    await runtime.close();
    await runtime.close();
    assertEquals(counted.requests.length, 0);
  });

  Deno.test(`${kind.name}: uploads are binary-safe: the corpus fonts and a .tar.gz come back byte-identical`, async () => {
    await using server = await kind.start();
    const counted = countingFetch();
    const runtime = server.runtime({ fetch: counted.fetch });
    const canvas = new URL("canvas-design/", CORPUS).pathname;
    const [prepared] = await runtime.prepare({
      skills: [{
        skill: {
          name: "canvas-design",
          description: "Fonts",
          basePath: canvas.replace(/\/$/, ""),
          location: `${canvas}SKILL.md`,
          instructions: "",
          frontMatter: {},
          warnings: [],
        },
      }],
    });
    if (kind.uploadPath !== undefined) {
      const path = kind.uploadPath;
      assertEquals(
        counted.requests.filter((r) => r.path.endsWith(path)).length,
        1,
      );
    }
    let fonts = 0;
    for await (const entry of Deno.readDir(`${canvas}canvas-fonts`)) {
      if (!entry.name.endsWith(".ttf")) continue;
      fonts++;
      const remote = `${prepared!.basePath}/canvas-fonts/${entry.name}`;
      const original = await Deno.readFile(
        `${canvas}canvas-fonts/${entry.name}`,
      );
      assertEquals(await runtime.fs.readBytes(remote), original);
    }
    assertGreater(fonts, 5);
    const tarball = new URL(
      "web-artifacts-builder/scripts/shadcn-components.tar.gz",
      CORPUS,
    ).pathname;
    const deep = `${"deep/".repeat(40)}long-name.txt`;
    const skill = await makeSkill(`${server.dir}/src`, "archive", {
      "data/components.tar.gz": await Deno.readFile(tarball),
      [deep]: "long",
    });
    const [archive] = await runtime.prepare({ skills: [{ skill }] });
    const local = `${server.dir}/back/components.tar.gz`;
    const { bytes } = await runtime.fs.download(
      `${archive!.basePath}/data/components.tar.gz`,
      local,
    );
    assertEquals(await Deno.readFile(local), await Deno.readFile(tarball));
    assertEquals(bytes, (await Deno.stat(tarball)).size);
    assertEquals(
      await runtime.fs.readText(`${archive!.basePath}/${deep}`, {
        maxBytes: 100,
      }),
      "long",
    );
    const listed = await runtime.execute({
      command: "tar -tzf data/components.tar.gz | head -n 1",
      workingDirectory: archive!.basePath,
    });
    assertEquals(listed.exitCode, 0);
  });
}
