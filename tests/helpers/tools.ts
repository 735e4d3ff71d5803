/**
 * Helpers for the tools' tests: temporary folders, skill folders, tool sets
 * on a real local runtime, and every kind of runtime the tools suite runs
 * on (local, isolated, and the remote kinds on their test servers). Test-only.
 *
 * @module
 */
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
  LocalSkillRuntime,
} from "../../runtimes/local/mod.ts";
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/mod.ts";
import { MemoryConversationStore } from "../../runtimes/stores/conversation_store.ts";
import { startOpenSandboxServer } from "../servers/opensandbox.ts";
import { AioSkillRuntime } from "../../runtimes/aio/mod.ts";
import { startAioServer } from "../servers/aio.ts";
import { E2BSkillRuntime } from "../../runtimes/e2b/mod.ts";
import { startE2BServer } from "../servers/e2b.ts";
import { VercelSandboxSkillRuntime } from "../../runtimes/vercel/mod.ts";
import { startVercelServer } from "../servers/vercel.ts";
import { DaytonaSkillRuntime } from "../../runtimes/daytona/mod.ts";
import { startDaytonaServer } from "../servers/daytona.ts";
import { DenoSandboxSkillRuntime } from "../../runtimes/deno_sandbox/mod.ts";
import { startDenoSandboxServer } from "../servers/deno_sandbox.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import {
  createToolContext,
  type ToolContext,
  type ToolContextOptions,
} from "../../tools/context.ts";
import { createSearch } from "../../search/search.ts";
import type { SearchEngine } from "../../search/types.ts";
import { commandSucceeds } from "../../_internal/command.ts";
import { startRemoteTestServer } from "./remote.ts";

/** A temporary folder removed on dispose. */
export interface TempDir extends AsyncDisposable {
  /** Its real path. */
  readonly path: string;
}

/**
 * Makes a temporary folder (its real path) that `await using` removes.
 *
 * @returns The folder.
 */
export async function tempDir(): Promise<TempDir> {
  const disk = current?.disk;
  if (disk) {
    const path = await disk.tempDir();
    return {
      path,
      [Symbol.asyncDispose]: () =>
        Deno.remove(disk.onHost(path), { recursive: true }).catch(() => {}),
    };
  }
  const path = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-tools-" }),
  );
  return {
    path,
    [Symbol.asyncDispose]: () =>
      Deno.remove(path, { recursive: true }).catch(() => {}),
  };
}

/** Options of {@linkcode writeSkill}. */
export interface WriteSkillOptions {
  /** The description. Default `Test skill <name>.` */
  readonly description?: string;
  /** The Markdown body. */
  readonly body?: string;
  /** Further files, by path relative to the skill folder. */
  readonly files?: Readonly<Record<string, string>>;
}

/**
 * Writes a skill folder `<root>/<name>` with a `SKILL.md`.
 *
 * @param root The folder of skills.
 * @param name The skill's name (and folder name).
 * @param options Description, body and files.
 * @returns The skill folder's path.
 */
export async function writeSkill(
  root: string,
  name: string,
  options: WriteSkillOptions = {},
): Promise<string> {
  const folder = `${root}/${name}`;
  await Deno.mkdir(onHost(folder), { recursive: true });
  await Deno.writeTextFile(
    onHost(`${folder}/SKILL.md`),
    `---\nname: ${name}\ndescription: ${
      options.description ?? `Test skill ${name}.`
    }\n---\n${options.body ?? `Instructions of ${name}.\n`}`,
  );
  for (const [path, content] of Object.entries(options.files ?? {})) {
    const target = onHost(`${folder}/${path}`);
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    await Deno.writeTextFile(target, content);
  }
  return folder;
}

/**
 * Makes the runtimes of one test for one kind of runtime. For most kinds
 * paths mean the same inside the runtime and on the host (a remote test
 * server runs real commands on the host's real paths); a kind whose sandbox
 * has a file system of its own gives its `disk`: tests then make folders
 * with {@linkcode tempDir} (inside the sandbox) and reach a sandbox path on
 * the host through {@linkcode onHost} (the server's folder that backs it).
 */
export interface RuntimeFactory extends AsyncDisposable {
  /** A runtime without a workspace whose default working directory is `cwd`. */
  plain(cwd: string): SkillRuntime;
  /** A conversation runtime working in `<conversationsRoot>/<id>`. */
  conversation(conversationsRoot: string, id: string): Promise<SkillRuntime>;
  /** The sandboxes' own file systems as seen on the server's disk. */
  readonly disk?: SandboxDisk;
}

/**
 * The file systems of a kind whose sandboxes have their own (the test
 * server keeps each sandbox's home and `/tmp` in host folders and binds them
 * in): where a sandbox path is on the host, as a test looks at any server's
 * disk.
 */
export interface SandboxDisk {
  /** A new empty folder in the test sandbox's `/tmp`; its sandbox path. */
  tempDir(): Promise<string>;
  /**
   * The host path backing a sandbox path: in the sandbox of the conversation
   * whose root holds it, else in the test sandbox; a path outside the
   * sandbox's own folders is the host's own (read-only inside).
   */
  onHost(path: string): string;
}

/** A kind of runtime the tool suite runs against. */
export interface RuntimeKind {
  /** Its name in test names, e.g. `local`. */
  readonly name: string;
  /** Why it cannot run here (the test is then ignored, saying so), or `null`. */
  unavailable(): Promise<string | null>;
  /** Starts what one test needs (e.g. a test server). */
  start(): Promise<RuntimeFactory>;
}

/** The local runtime, plain or in a conversation workspace. */
export const LOCAL_KIND: RuntimeKind = {
  name: "local",
  unavailable: () => Promise.resolve(null),
  start: () =>
    Promise.resolve({
      plain: (cwd: string) => new LocalSkillRuntime({ cwd }),
      conversation: (conversationsRoot: string, conversationId: string) =>
        LocalSkillRuntime.create({ conversationsRoot, conversationId }),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    }),
};

/** Where a remote kind's runtime works: plain in `cwd`, or a conversation. */
type RemoteWhere =
  | { readonly cwd: string; readonly skillsRoot: string }
  | {
    readonly conversationsRoot: string;
    readonly conversationId: string;
    readonly store: MemoryConversationStore;
  };

/**
 * A remote kind's factory: its test server with a temporary folder (plain
 * runtimes upload their skills below it), runtimes on it, all closed and
 * removed on dispose. A conversation runtime is opened by `open` on return
 * (the tests put files into the workspace with Deno calls before its first
 * call).
 */
async function remoteFactory<S, R extends SkillRuntime>(kind: {
  readonly prefix: string;
  start(dir: string): S | Promise<S>;
  close(server: S): Promise<void>;
  runtime(server: S, where: RemoteWhere): R;
  skillsRoot?(dir: string): string;
  open(runtime: R): Promise<unknown>;
}): Promise<RuntimeFactory> {
  const store = new MemoryConversationStore();
  const base = await startRemoteTestServer<S, RemoteWhere, R>({
    prefix: kind.prefix,
    start: kind.start,
    close: kind.close,
    runtime: (server, _dir, where) =>
      kind.runtime(server, where as RemoteWhere),
  });
  const skillsRoot = kind.skillsRoot?.(base.dir) ?? base.dir;
  return {
    plain: (cwd: string) => base.runtime({ cwd, skillsRoot }),
    conversation: async (conversationsRoot: string, conversationId: string) => {
      const runtime = base.runtime({
        conversationsRoot,
        conversationId,
        store,
      });
      await kind.open(runtime);
      return runtime;
    },
    [Symbol.asyncDispose]: () => base[Symbol.asyncDispose](),
  };
}

/**
 * The OpenSandbox runtime against the OpenSandbox test server (started per
 * test, real `bash` on this host): paths inside the sandbox are host paths,
 * so plain runtimes work in `cwd` and conversation runtimes in
 * `<conversationsRoot>/<id>`, as local ones do. Skills of plain runtimes are
 * uploaded into a temporary folder of the test.
 */
export const OPENSANDBOX_KIND: RuntimeKind = {
  name: "opensandbox",
  unavailable: async () => {
    const bash = await commandSucceeds("bash", ["-c", "true"]);
    return bash ? null : "bash is not installed (the test server runs it)";
  },
  start: () => {
    const apiKey = "tools-suite-key";
    return remoteFactory({
      prefix: "skillrun-os-skills-",
      start: () => startOpenSandboxServer({ apiKey }),
      close: (server) => server.close(),
      runtime: (server, where) =>
        new OpenSandboxSkillRuntime({ baseUrl: server.url, apiKey, ...where }),
      open: (runtime) => runtime.connect(),
    });
  },
};

/**
 * The AIO Sandbox runtime against the AIO test server (started per test, real
 * `bash` on this host, with a bearer token): as for OpenSandbox, paths inside
 * the container are host paths; plain runtimes work in `cwd`, conversation
 * runtimes in `<conversationsRoot>/<id>`, and skills of plain runtimes are
 * uploaded into a temporary folder of the test (the container's home).
 */
export const AIO_KIND: RuntimeKind = {
  name: "aio",
  unavailable: OPENSANDBOX_KIND.unavailable,
  start: () => {
    const token = "tools-suite-aio-token";
    return remoteFactory({
      prefix: "skillrun-aio-home-",
      start: (home) => startAioServer({ token, home }),
      close: (server) => server.close(),
      runtime: (server, where) =>
        new AioSkillRuntime({
          baseUrl: server.baseUrl,
          apiKey: token,
          ...where,
        }),
      skillsRoot: (home) => `${home}/skills`,
      // Opened as the local kind's are: the workspace exists on return (the
      // runtime itself waits for its first use to touch the container).
      open: (runtime) => runtime.fs.stat("."),
    });
  },
};

/**
 * The E2B runtime against the E2B test server (started per test, real `bash`
 * on this host, control plane and envd on one origin): as for OpenSandbox,
 * paths inside the sandbox are host paths. A conversation runtime is
 * connected on return (the workspace exists), and pauses its sandbox on
 * close.
 */
export const E2B_KIND: RuntimeKind = {
  name: "e2b",
  unavailable: OPENSANDBOX_KIND.unavailable,
  start: () => {
    const apiKey = "tools-suite-e2b-key";
    return remoteFactory({
      prefix: "skillrun-e2b-skills-",
      start: () => startE2BServer({ apiKey }),
      close: (server) => server.close(),
      runtime: (server, where) =>
        new E2BSkillRuntime({
          apiKey,
          baseUrl: server.url,
          sandboxUrl: server.url,
          ...where,
        }),
      open: (runtime) => runtime.connect(),
    });
  },
};

/**
 * The Vercel Sandbox runtime against the Vercel test server (started per
 * test, real `bash` on this host, the sandbox's `/` at the host's `/`): as
 * for OpenSandbox, paths inside the sandbox are host paths.
 */
export const VERCEL_KIND: RuntimeKind = {
  name: "vercel",
  unavailable: OPENSANDBOX_KIND.unavailable,
  start: () => {
    const token = "tools-suite-vercel-token";
    return remoteFactory({
      prefix: "skillrun-vercel-skills-",
      start: () => startVercelServer({ token }),
      close: (server) => server.close(),
      runtime: (server, where) =>
        new VercelSandboxSkillRuntime({
          apiKey: token,
          teamId: "team_tools",
          projectId: "prj_tools",
          baseUrl: server.url,
          ...where,
        }),
      open: (runtime) => runtime.connect(),
    });
  },
};

/** The conversation {@linkcode conversationContext} opens. */
const CONVERSATION_ID = "thread-1";

/** Where one runtime of an own-disk kind works. */
type OwnDiskWhere =
  | {
    readonly cwd: string;
    readonly skillsRoot: string;
    readonly sandboxId: string;
  }
  | {
    readonly conversationsRoot: string;
    readonly conversationId: string;
    readonly store: MemoryConversationStore;
  };

/** A kind whose test server gives each sandbox a file system of its own. */
interface OwnDiskKind<S, R extends SkillRuntime> {
  /** Starts the test server. */
  start(): S;
  /** Stops it (and removes every sandbox's files). */
  close(server: S): Promise<void>;
  /** Its sandboxes by id, each with the host folder of its `home` and `tmp`. */
  sandboxes(server: S): ReadonlyMap<string, { readonly root: string }>;
  /** The sandbox's home (bound from `<root>/home`). */
  readonly home: string;
  /** A runtime on the server. */
  runtime(server: S, where: OwnDiskWhere): R;
  /** Creates or attaches the runtime's sandbox. */
  connect(runtime: R): Promise<unknown>;
}

/** `path` without `.`, `..` and repeated slashes. */
function cleanPath(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return "/" + parts.join("/");
}

/** Whether `path` is `folder` or below it. */
function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder + "/");
}

/**
 * An own-disk kind's factory: its test server and one sandbox per test, as
 * every other kind has one file system per test: the sandbox of the
 * conversation {@linkcode CONVERSATION_ID} (the one {@linkcode conversationContext} opens, which attaches
 * to it through the shared store as a conversation's next runtime does), to
 * which plain runtimes attach with `sandboxId`. Every runtime is closed and
 * the server stopped on dispose.
 */
async function ownDiskFactory<S, R extends SkillRuntime>(
  kind: OwnDiskKind<S, R>,
): Promise<RuntimeFactory> {
  const server = kind.start();
  const runtimes: R[] = [];
  const store = new MemoryConversationStore();
  const known = new Set<string>();
  const made = (): string[] => {
    const ids = [...kind.sandboxes(server).keys()].filter((id) =>
      !known.has(id)
    );
    for (const id of ids) known.add(id);
    return ids;
  };
  const make = (where: OwnDiskWhere) => {
    const runtime = kind.runtime(server, where);
    runtimes.push(runtime);
    return runtime;
  };
  const dispose = async () => {
    for (const runtime of runtimes.reverse()) {
      await runtime.close().catch(() => {});
    }
    await kind.close(server);
  };
  try {
    await kind.connect(make({
      conversationsRoot: `${kind.home}/conversations`,
      conversationId: CONVERSATION_ID,
      store,
    }));
    const [sandboxId] = made();
    if (sandboxId === undefined) throw new Error("no sandbox was created");
    const root = (id: string) => kind.sandboxes(server).get(id)!.root;
    /** Conversation workspaces and their sandboxes, the deepest first. */
    const mounts: { folder: string; sandboxId: string }[] = [];
    const hostOf = (id: string, path: string) => {
      const folders = [[kind.home, "home"], ["/tmp", "tmp"]] as const;
      for (const [inside, outside] of folders) {
        if (within(path, inside)) {
          return `${root(id)}/${outside}${path.slice(inside.length)}`;
        }
      }
      return path;
    };
    const disk: SandboxDisk = {
      async tempDir() {
        const path = `/tmp/skillrun-tools-${crypto.randomUUID().slice(0, 8)}`;
        await Deno.mkdir(hostOf(sandboxId, path));
        return path;
      },
      onHost(path) {
        const clean = cleanPath(path);
        const mount = mounts.find((m) => within(clean, m.folder));
        return hostOf(mount?.sandboxId ?? sandboxId, clean);
      },
    };
    return {
      disk,
      plain: (cwd: string) =>
        make({ cwd, skillsRoot: `${kind.home}/skills`, sandboxId }),
      conversation: async (conversationsRoot, conversationId) => {
        const runtime = make({ conversationsRoot, conversationId, store });
        await kind.connect(runtime);
        // Another conversation has a sandbox of its own: its workspace is there.
        for (const id of made()) {
          mounts.push({ folder: runtime.cwd, sandboxId: id });
        }
        mounts.sort((a, b) => b.folder.length - a.folder.length);
        return runtime;
      },
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/**
 * The Daytona runtime against the Daytona test server (started per test):
 * each sandbox has a file system of its own (its home and `/tmp` are host
 * folders of the server bound in under bubblewrap), so tests make their
 * folders in the sandbox with {@linkcode tempDir} and prepare and inspect
 * files through {@linkcode onHost}. Plain runtimes share the test's sandbox.
 */
export const DAYTONA_KIND: RuntimeKind = {
  name: "daytona",
  unavailable: sandboxServerUnavailable,
  start: () => {
    const apiKey = "tools-suite-daytona-key";
    return ownDiskFactory({
      start: () => startDaytonaServer({ apiKey }),
      close: (server) => server.close(),
      sandboxes: (server) => server.sandboxes,
      home: "/home/daytona",
      runtime: (server, where) =>
        new DaytonaSkillRuntime({ apiKey, baseUrl: server.url, ...where }),
      connect: (runtime) => runtime.connect(),
    });
  },
};

/**
 * The Deno Sandbox runtime against the Deno Sandbox test server (started per
 * test): as for Daytona, each sandbox has a file system of its own.
 */
export const DENO_SANDBOX_KIND: RuntimeKind = {
  name: "deno-sandbox",
  unavailable: sandboxServerUnavailable,
  start: () => {
    const token = "ddo_tools_suite_token";
    return ownDiskFactory({
      start: () => startDenoSandboxServer({ token }),
      close: (server) => server.close(),
      sandboxes: (server) => server.sandboxes,
      home: "/home/app",
      runtime: (server, where) =>
        new DenoSandboxSkillRuntime({
          token,
          baseUrl: server.url,
          consoleUrl: server.url,
          ...where,
        }),
      connect: (runtime) => runtime.connect(),
    });
  },
};

/** Why the Daytona and Deno Sandbox test servers cannot run sandboxes here. */
function sandboxServerUnavailable(): Promise<string | null> {
  bwrapOnce ??= commandSucceeds("bwrap", ["--ro-bind", "/", "/", "true"]).then(
    (runs) =>
      runs
        ? null
        : "bwrap cannot run here (the test server runs each sandbox under it)",
  );
  return bwrapOnce;
}

let bwrapOnce: Promise<string | null> | undefined;

/**
 * The host path backing a path of the running test's runtime: the path
 * itself, except for a kind whose sandboxes have their own file system (the
 * server's folder that backs it). Tests prepare and inspect files with
 * `Deno` calls on `onHost(path)`.
 *
 * @param path A path as the runtime sees it.
 * @returns Where it is on this host.
 */
export function onHost(path: string): string {
  return current?.disk?.onHost(path) ?? path;
}

let launcherOnce: Promise<BubblewrapLauncher> | undefined;

/**
 * One launcher (no network policy) for a test file's isolated runtimes, as
 * an application shares one between its runtimes: its checks (bwrap's
 * version, the host's paths, cgroups, a first sandbox) run once.
 */
function sharedLauncher(): Promise<BubblewrapLauncher> {
  launcherOnce ??= BubblewrapLauncher.create();
  return launcherOnce;
}

/**
 * The local runtime in isolated mode (bubblewrap): every command in a
 * sandbox. Unavailable, saying why, where sandboxes cannot start.
 */
export const ISOLATED_KIND: RuntimeKind = {
  name: "isolated",
  // Only a machine that cannot run sandboxes is a reason to ignore; any
  // other failure is a bug and fails the test file.
  unavailable: () =>
    sharedLauncher().then(
      () => null,
      (error) =>
        error instanceof IsolationUnavailableError
          ? error.message
          : Promise.reject(error),
    ),
  start: async () => {
    const launcher = await sharedLauncher();
    return {
      plain: (cwd: string) => new LocalSkillRuntime({ cwd, launcher }),
      conversation: (conversationsRoot: string, conversationId: string) =>
        LocalSkillRuntime.create({
          conversationsRoot,
          conversationId,
          launcher,
        }),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
  },
};

/**
 * Every kind of runtime the tool suite runs against: add a kind here (a
 * remote runtime with its test server, the isolated local mode) and every test
 * written with {@linkcode testEachRuntime} runs on it unchanged.
 */
export const RUNTIME_KINDS: readonly RuntimeKind[] = [
  LOCAL_KIND,
  OPENSANDBOX_KIND,
  AIO_KIND,
  E2B_KIND,
  VERCEL_KIND,
  ISOLATED_KIND,
  DAYTONA_KIND,
  DENO_SANDBOX_KIND,
];

let current: RuntimeFactory | null = null;

function factory(): RuntimeFactory {
  return current ?? {
    plain: (cwd: string) => new LocalSkillRuntime({ cwd }),
    conversation: (conversationsRoot: string, conversationId: string) =>
      LocalSkillRuntime.create({ conversationsRoot, conversationId }),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}

/**
 * Defines one test per kind in {@linkcode RUNTIME_KINDS}: inside it,
 * {@linkcode plainContext} and {@linkcode conversationContext} give runtimes
 * of that kind. A kind that cannot run here is ignored with a printed reason.
 * (Tests of one file run one at a time, so the current kind is safe to keep
 * in a module variable.)
 *
 * @param name The test's name; the kind is appended.
 * @param fn The test.
 */
export function testEachRuntime(
  name: string,
  fn: () => void | Promise<void>,
): void {
  for (const kind of RUNTIME_KINDS) {
    const title = kind === LOCAL_KIND ? name : `${name} [${kind.name}]`;
    const reason = UNAVAILABLE.get(kind) ?? null;
    if (reason !== null) console.error(`Ignoring "${title}": ${reason}`);
    Deno.test({
      name: title,
      ignore: reason !== null,
      fn: () => withKind(kind, fn),
    });
  }
}

async function withKind(
  kind: RuntimeKind,
  fn: () => void | Promise<void>,
): Promise<void> {
  await using started = await kind.start();
  current = started;
  try {
    await fn();
  } finally {
    current = null;
  }
}

/** Why each kind cannot run here (`null` when it can), found once per file. */
const UNAVAILABLE: ReadonlyMap<RuntimeKind, string | null> = new Map(
  await Promise.all(
    RUNTIME_KINDS.map(async (kind) =>
      [kind, await kind.unavailable()] as const
    ),
  ),
);

/**
 * A context on a runtime without workspace whose working directory is `cwd`
 * (local, or the kind of the running {@linkcode testEachRuntime} test).
 *
 * @param cwd The default working directory.
 * @param options Further context options.
 * @returns The context and its runtime.
 */
export function plainContext(
  cwd: string,
  options: ToolContextOptions = {},
): { context: ToolContext; runtime: SkillRuntime } {
  const runtime = factory().plain(cwd);
  return { context: createToolContext(runtime, options), runtime };
}

/**
 * A context on a conversation runtime in `<root>/conversations/<id>` (local,
 * or the kind of the running {@linkcode testEachRuntime} test).
 *
 * @param root A temporary folder.
 * @param options Further context options.
 * @returns The context, its runtime and its workspace.
 */
export async function conversationContext(
  root: string,
  options: ToolContextOptions = {},
): Promise<{ context: ToolContext; runtime: SkillRuntime; workspace: string }> {
  const runtime = await factory().conversation(
    `${root}/conversations`,
    CONVERSATION_ID,
  );
  return {
    context: createToolContext(runtime, options),
    runtime,
    workspace: runtime.cwd,
  };
}

/** The search engines the search tools' tests run under. */
export type EngineChoice = "ripgrep" | "fallback";

/** Whether `rg` runs here. */
export const HAS_RIPGREP: boolean = await commandSucceeds("rg", ["--version"]);

/**
 * A context on a plain local runtime whose search engine is forced to
 * ripgrep or to the TypeScript fallback (the runtime's other calls go to the
 * real runtime).
 *
 * @param cwd The default working directory.
 * @param engine Which engine.
 * @param options Further context options.
 * @returns The context.
 */
export function contextWithEngine(
  cwd: string,
  engine: EngineChoice,
  options: ToolContextOptions = {},
): ToolContext {
  // Inside another kind's test, that runtime answers with its own engine.
  if (current) return createToolContext(current.plain(cwd), options);
  const real = new LocalSkillRuntime({ cwd });
  const runtime: SkillRuntime & { search: SearchEngine } = {
    name: real.name,
    cwd: real.cwd,
    fs: real.fs,
    prepare: (request) => real.prepare(request),
    execute: (request) => real.execute(request),
    environment: () => real.environment(),
    close: () => real.close(),
    [Symbol.asyncDispose]: () => real.close(),
    search: createSearch({
      fs: real.fs,
      local: true,
      useRipgrep: engine === "ripgrep",
    }),
  };
  return createToolContext(runtime, options);
}

/**
 * Defines one test per engine; the ripgrep one is ignored, with a printed
 * reason, when `rg` is missing.
 *
 * @param name The test's name.
 * @param fn The test, given the engine.
 */
export function testEachEngine(
  name: string,
  fn: (engine: EngineChoice) => Promise<void>,
): void {
  for (const engine of ["ripgrep", "fallback"] as const) {
    const ignore = engine === "ripgrep" && !HAS_RIPGREP;
    if (ignore) {
      console.error(`Ignoring "${name} (ripgrep)": rg is not installed`);
    }
    Deno.test({ name: `${name} (${engine})`, ignore, fn: () => fn(engine) });
  }
  // Every other kind of runtime answers with its own engine.
  for (const kind of RUNTIME_KINDS) {
    if (kind === LOCAL_KIND) continue;
    const title = `${name} [${kind.name}]`;
    const reason = UNAVAILABLE.get(kind) ?? null;
    if (reason !== null) console.error(`Ignoring "${title}": ${reason}`);
    Deno.test({
      name: title,
      ignore: reason !== null,
      fn: () => withKind(kind, () => fn("fallback")),
    });
  }
}

/**
 * Whether a path exists (what marker-file tests check).
 *
 * @param path The path.
 * @returns Whether `Deno.stat` finds it (on the host, see {@linkcode onHost}).
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(onHost(path));
    return true;
  } catch {
    return false;
  }
}
