/**
 * Helpers for the tools' tests: temporary folders, skill folders, tool sets
 * on a real local runtime. Test-only.
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
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    `${folder}/SKILL.md`,
    `---\nname: ${name}\ndescription: ${
      options.description ?? `Test skill ${name}.`
    }\n---\n${options.body ?? `Instructions of ${name}.\n`}`,
  );
  for (const [path, content] of Object.entries(options.files ?? {})) {
    const target = `${folder}/${path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    await Deno.writeTextFile(target, content);
  }
  return folder;
}

/**
 * Makes the runtimes of one test for one kind of runtime. Paths mean the same
 * inside the runtime and on the host (a remote test server runs real commands
 * on the host's real paths), so a test can prepare files with `Deno` calls
 * and check the tools' answers against host paths.
 */
export interface RuntimeFactory extends AsyncDisposable {
  /** A runtime without a workspace whose default working directory is `cwd`. */
  plain(cwd: string): SkillRuntime;
  /** A conversation runtime working in `<conversationsRoot>/<id>`. */
  conversation(conversationsRoot: string, id: string): Promise<SkillRuntime>;
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
    "thread-1",
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
 * @returns Whether `Deno.stat` finds it.
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
