/**
 * Helpers for the tools' tests: temporary folders, skill folders, tool sets
 * on a real local runtime. Test-only.
 *
 * @module
 */
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import {
  createToolContext,
  type ToolContext,
  type ToolContextOptions,
} from "./context.ts";
import { createSearch } from "../search/search.ts";
import type { SearchEngine } from "../search/types.ts";

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
 * A context on a plain local runtime whose working directory is `cwd`.
 *
 * @param cwd The default working directory.
 * @param options Further context options.
 * @returns The context and its runtime.
 */
export function plainContext(
  cwd: string,
  options: ToolContextOptions = {},
): { context: ToolContext; runtime: SkillRuntime } {
  const runtime = new LocalSkillRuntime({ cwd });
  return { context: createToolContext(runtime, options), runtime };
}

/**
 * A context on a conversation runtime in `<root>/conversations/<id>`.
 *
 * @param root A temporary folder.
 * @param options Further context options.
 * @returns The context, its runtime and its workspace.
 */
export async function conversationContext(
  root: string,
  options: ToolContextOptions = {},
): Promise<{ context: ToolContext; runtime: SkillRuntime; workspace: string }> {
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${root}/conversations`,
    conversationId: "thread-1",
  });
  return {
    context: createToolContext(runtime, options),
    runtime,
    workspace: runtime.defaultWorkingDirectory,
  };
}

/** The search engines the search tools' tests run under. */
export type EngineChoice = "ripgrep" | "fallback";

/** Whether `rg` runs here. */
export const HAS_RIPGREP: boolean = await new Deno.Command("rg", {
  args: ["--version"],
  stdout: "null",
  stderr: "null",
}).output().then((o) => o.success, () => false);

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
  const real = new LocalSkillRuntime({ cwd });
  const runtime: SkillRuntime & { search: SearchEngine } = {
    name: real.name,
    defaultWorkingDirectory: real.defaultWorkingDirectory,
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
}
