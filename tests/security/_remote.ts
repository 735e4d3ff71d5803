/**
 * The security suite's remote worlds: the same world as `_harness.ts` (a
 * conversation with every tool, the skill `api` configured with secrets, an
 * outside snapshotted before and after) on each remote runtime kind, served
 * by its test server on loopback, with that server's fault injector. A case
 * written once with {@linkcode remoteSecurityCases} runs on every kind in
 * {@linkcode REMOTE_KINDS}: a new kind gets the suite by being added there.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/opensandbox.ts";
import { startAioTestServer } from "../helpers/aio.ts";
import { startE2BTestServer } from "../helpers/e2b.ts";
import { startVercelTestServer } from "../helpers/vercel.ts";
import { startDaytonaTestServer } from "../helpers/daytona.ts";
import { startDenoSandboxTestServer } from "../helpers/deno_sandbox.ts";
import { MemoryConversationStore } from "../../runtimes/stores/conversation_store.ts";
import { buildSkillTools, type SkillTools } from "../../tools/builder.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { Tool, ToolResult } from "../../tools/types.ts";
import type { FaultInjector } from "../servers/_faults.ts";
import {
  apiConfigs,
  assertAlive,
  assertOk,
  snapshotOutside,
  writeApiSkill,
} from "./_harness.ts";

/** The routes of a kind's server that the cases break on purpose. */
export interface RemoteRoutes {
  /** Starting a command. */
  readonly exec: string;
  /** Reading a file's bytes. */
  readonly download: string;
  /** Writing files. */
  readonly upload: string;
  /** What `destroy()` calls (method and route). */
  readonly destroy: { readonly method: string; readonly path: string };
}

/** One case's world on a remote kind. */
export interface RemoteWorld extends AsyncDisposable {
  /** The kind's name. */
  readonly kind: string;
  /** The temporary base folder (real path): the server's files live there. */
  readonly base: string;
  /** The workspace of the conversation under attack (host path = sandbox path). */
  readonly workspace: string;
  /** A folder outside the workspace. */
  readonly outside: string;
  /** The runtime (conversation mode). */
  readonly runtime: SkillRuntime;
  /** The tools. */
  readonly kit: SkillTools;
  /** The server's fault injector. */
  readonly faults: FaultInjector;
  /** The routes as the injector names them. */
  readonly routes: RemoteRoutes;
  /** Calls a tool. */
  call(name: string, input: Record<string, unknown>): Promise<ToolResult>;
  /** Runs a command in the workspace (through the bash tool). */
  sh(command: string): Promise<ToolResult>;
  /** What the publisher received: file name → size announced, bytes read. */
  readonly published: Map<string, { announced?: number; streamed: number }>;
  /** Called by the publisher before it reads a stream (set by a case). */
  beforePublishRead?: () => Promise<void>;
}

/** A remote runtime kind: how to start its server and a conversation on it. */
export interface RemoteKind {
  /** Its name. */
  readonly name: string;
  /** Its routes. */
  readonly routes: RemoteRoutes;
  /** Starts a server in `base` and a conversation runtime on it. */
  start(base: string, conversationsRoot: string): Promise<{
    readonly runtime: SkillRuntime;
    readonly faults: FaultInjector;
    readonly close: () => Promise<void>;
  }>;
}

/** A test server as {@linkcode victim} uses it. */
interface VictimServer extends AsyncDisposable {
  runtime(options: {
    conversationId: string;
    conversationsRoot: string;
    store: MemoryConversationStore;
  }): SkillRuntime;
}

/** The conversation "victim" on a test server, closed with the server. */
async function victim<S extends VictimServer>(
  starting: Promise<S>,
  faultsOf: (server: S) => FaultInjector,
  conversationsRoot: string,
): ReturnType<RemoteKind["start"]> {
  const server = await starting;
  return {
    runtime: server.runtime({
      conversationId: "victim",
      conversationsRoot,
      store: new MemoryConversationStore(),
    }),
    faults: faultsOf(server),
    close: async () => await server[Symbol.asyncDispose](),
  };
}

/** The remote kinds every remote case runs on. */
export const REMOTE_KINDS: readonly RemoteKind[] = [
  {
    name: "opensandbox",
    routes: {
      exec: "/command",
      download: "/files/download",
      upload: "/files/upload",
      destroy: { method: "DELETE", path: "/v1/sandboxes/{id}" },
    },
    start: (_base, conversationsRoot) =>
      victim(startTestServer(), (server) => server.faults, conversationsRoot),
  },
  {
    name: "aio",
    routes: {
      exec: "/v1/bash/exec",
      download: "/v1/file/download",
      upload: "/v1/file/upload",
      destroy: { method: "POST", path: "/v1/bash/exec" },
    },
    start: (_base, conversationsRoot) =>
      victim(
        startAioTestServer(),
        (server) => server.server.faults,
        conversationsRoot,
      ),
  },
  {
    name: "e2b",
    routes: {
      exec: "/process.Process/Start",
      download: "/files",
      upload: "/files",
      destroy: { method: "DELETE", path: "/sandboxes/{id}" },
    },
    start: (_base, conversationsRoot) =>
      victim(
        startE2BTestServer(),
        (server) => server.server.faults,
        conversationsRoot,
      ),
  },
  {
    name: "vercel",
    routes: {
      exec: "/v2/sandboxes/sessions/{id}/cmd",
      download: "/v2/sandboxes/sessions/{id}/fs/read",
      upload: "/v2/sandboxes/sessions/{id}/fs/write",
      destroy: { method: "DELETE", path: "/v2/sandboxes/{id}" },
    },
    start: (_base, conversationsRoot) =>
      victim(
        startVercelTestServer(),
        (server) => server.server.faults,
        conversationsRoot,
      ),
  },
  {
    name: "daytona",
    routes: {
      exec: "/toolbox/{id}/process/session/{id}/exec",
      download: "/toolbox/{id}/files/download",
      upload: "/toolbox/{id}/files/bulk-upload",
      destroy: { method: "DELETE", path: "/api/sandbox/{id}" },
    },
    // The world's folder is a volume of the sandbox (its files are the host's).
    start: (base, conversationsRoot) =>
      victim(
        startDaytonaTestServer({ volumes: [base] }),
        (server) => server.server.faults,
        conversationsRoot,
      ),
  },
  {
    name: "deno-sandbox",
    // Every JSON-RPC request reaches the injector as `POST /rpc/<method>`.
    routes: {
      exec: "/rpc/spawn",
      download: "/rpc/open",
      upload: "/rpc/writeFile",
      destroy: { method: "DELETE", path: "/api/v3/sandbox/{id}" },
    },
    start: (base, conversationsRoot) =>
      victim(
        startDenoSandboxTestServer({ volumes: [base] }),
        (server) => server.server.faults,
        conversationsRoot,
      ),
  },
];

/**
 * Makes a remote world: `<base>/outside` (a secret file, a folder), the
 * conversations root `<base>/conversations` with another conversation in it,
 * and the conversation `victim` on the kind's test server, its skill `api`
 * prepared (so the workspace exists and the secrets are in its environment).
 *
 * @param kind The kind.
 * @returns The world (dispose it).
 */
export async function makeRemoteWorld(kind: RemoteKind): Promise<RemoteWorld> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-security-remote-" }),
  );
  const outside = `${base}/outside`;
  const root = `${base}/conversations`;
  await Deno.mkdir(`${outside}/dir`, { recursive: true });
  await Deno.writeTextFile(`${outside}/secret.txt`, "outside secret\n");
  await Deno.writeTextFile(`${outside}/dir/inner.txt`, "inner\n");
  await Deno.mkdir(`${root}/other`, { recursive: true });
  await Deno.writeTextFile(`${root}/other/notes.txt`, "other conversation\n");
  const skills = await writeApiSkill(base);
  const started = await kind.start(base, root);
  const { runtime } = started;
  const published = new Map<string, { announced?: number; streamed: number }>();
  const kit = await buildSkillTools({
    skills,
    runtime,
    configs: apiConfigs(),
    publisher: {
      async publish({ stream, fileName, size }) {
        await world.beforePublishRead?.();
        const record: { announced?: number; streamed: number } = {
          ...(size !== undefined ? { announced: size } : {}),
          streamed: 0,
        };
        published.set(fileName, record);
        for await (const chunk of stream) record.streamed += chunk.length;
        return { url: `https://files.example/${fileName}` };
      },
    },
  });
  const tool = (name: string): Tool => {
    const found = kit.tool(name);
    assert(found, `no tool ${name}`);
    return found;
  };
  const workspace = `${root}/victim`;
  assertOk(await tool("skill").execute({ name: "api" }), "Base directory");
  assertOk(
    await tool("write").execute({ file_path: "alive.txt", content: "alive\n" }),
  );
  const world: RemoteWorld = {
    kind: kind.name,
    published,
    base,
    workspace,
    outside,
    runtime,
    kit,
    faults: started.faults,
    routes: kind.routes,
    call: (name, input) => tool(name).execute(input),
    sh: (command) => tool("bash").execute({ command }),
    async [Symbol.asyncDispose]() {
      await kit.close();
      await started.close();
      await Deno.remove(base, { recursive: true }).catch(() => {});
    },
  };
  return world;
}

/** One adversarial case on every remote kind. */
export interface RemoteSecurityCase {
  /** What is tried. */
  readonly name: string;
  /** Prepares the world. */
  readonly setup?: (world: RemoteWorld) => Promise<void>;
  /** The attack: asserts it was refused or harmless. */
  readonly attack: (world: RemoteWorld) => Promise<void>;
  /** The paired control: the legitimate call, which must succeed. */
  readonly control: (world: RemoteWorld) => Promise<void>;
}

/**
 * Registers cases on every kind of {@linkcode REMOTE_KINDS}: each in a fresh
 * world, the outside snapshotted after the setup and compared after the
 * attack and after the control (faults cleared in between); the runtime must
 * still answer.
 *
 * @param group The group's name, prefixed to each case.
 * @param cases The cases.
 */
export function remoteSecurityCases(
  group: string,
  cases: readonly RemoteSecurityCase[],
): void {
  for (const kind of REMOTE_KINDS) {
    for (const c of cases) {
      Deno.test({
        name: `security: ${group} (${kind.name}): ${c.name}`,
        ignore: Deno.build.os !== "linux",
        async fn() {
          await using world = await makeRemoteWorld(kind);
          await c.setup?.(world);
          const before = await snapshotOutside(world);
          await c.attack(world);
          world.faults.clear();
          assertEquals(
            await snapshotOutside(world),
            before,
            "the attack changed something outside the workspace",
          );
          await c.control(world);
          assertEquals(
            await snapshotOutside(world),
            before,
            "the control changed something outside the workspace",
          );
          await assertAlive(world);
        },
      });
    }
  }
}
