/**
 * The tools builder: from skill folders, per-skill configurations and a
 * runtime, the model-facing tool set. Building discovers and validates;
 * it prepares nothing.
 *
 * @module
 */
import type {
  SkillRuntimeConfig,
  SkillRuntimeConfigOptions,
} from "../runtimes/config.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import {
  acceptsRemoteOrigins,
  remoteOriginOf,
} from "../runtimes/remote/origin.ts";
import type { FormatCatalogOptions } from "../skill/catalog.ts";
import type { LoadSkillsOptions } from "../skill/load.ts";
import type { Skill } from "../skill/types.ts";
import type { InstalledSkillPackage } from "../package/installed.ts";
import { loadToolInput } from "./_tool_input.ts";
import { createBashTool } from "./bash.ts";
import { createBashOutputTool, createKillBashTool } from "./background.ts";
import {
  createToolContext,
  type FilePublisher,
  type ToolContext,
  type ToolLimits,
} from "./context.ts";
import { createEditTool } from "./edit.ts";
import { createGlobTool } from "./glob.ts";
import { createGrepTool } from "./grep.ts";
import { createLsTool } from "./ls.ts";
import { createReadTool } from "./read.ts";
import {
  createSkillListing,
  createSkillTool,
  type SkillDescription,
} from "./skill_tool.ts";
import { createSkillSearchTool } from "./skill_search.ts";
import type { Tool } from "./types.ts";
import type { ToolApprovalPolicy } from "./approval.ts";
import type { SkillEventListener } from "../observe/events.ts";
import { createWriteTool } from "./write.ts";

/** The names of the tools, in the order they are built. */
export const TOOL_NAMES = [
  "skill",
  "skill_search",
  "bash",
  "bash_output",
  "kill_bash",
  "read",
  "write",
  "edit",
  "ls",
  "glob",
  "grep",
  "publish_file",
] as const;

/** The name of one tool. */
export type ToolName = typeof TOOL_NAMES[number];

/** A folder of skills (or one skill folder), optionally narrowed to some names. */
export interface SkillSource {
  /** A skill folder, or a folder searched for skill folders. */
  readonly root: string;
  /** The skills to keep from this root (trimmed, case-sensitive); default all. */
  readonly names?: readonly string[];
}

/**
 * Where skills come from: root paths, sources with names, loaded skills, or
 * installed skill packages (from `@skillrun/skillrun/package`: loaded
 * read-only after their files are checked against their digests, and against
 * the lock when they come from `loadLockedPackages`).
 */
export type SkillsInput =
  | string
  | SkillSource
  | InstalledSkillPackage
  | readonly (string | SkillSource | Skill | InstalledSkillPackage)[];

/** A configuration as given: built, or the options to build one. */
export type SkillRuntimeConfigInput =
  | SkillRuntimeConfig
  | SkillRuntimeConfigOptions;

/** Configurations by skill name: a record, a map, or a list of entries. */
export type SkillConfigsInput =
  | Readonly<Record<string, SkillRuntimeConfigInput>>
  | ReadonlyMap<string, SkillRuntimeConfigInput>
  | readonly (readonly [string, SkillRuntimeConfigInput])[];

/** Options of {@linkcode buildSkillTools}. */
export interface BuildSkillToolsOptions {
  /**
   * Where the skills come from: a root path (a skill folder or a folder of
   * skills), `{ root, names }`, loaded {@linkcode Skill} objects, or a list
   * mixing them. Default none (then there is no `skill` tool).
   */
  readonly skills?: SkillsInput;
  /** Keep only these skills (trimmed, case-sensitive), in this order. */
  readonly names?: readonly string[];
  /**
   * The runtime configuration of each skill, by name (trimmed,
   * case-sensitive). A name given twice (e.g. `"pdf"` and `" pdf "`): the
   * later replaces the earlier.
   */
  readonly configs?: SkillConfigsInput;
  /** Where skills are prepared and tools run. Default a plain local runtime. */
  readonly runtime?: SkillRuntime;
  /** Where `publish_file` sends files; without it there is no `publish_file` tool. */
  readonly publisher?: FilePublisher;
  /** The `skill` tool's description: a `{catalog}` template or a function. */
  readonly skillDescription?: SkillDescription;
  /** How the catalog is formatted (size budget, locations shown). */
  readonly catalog?: FormatCatalogOptions;
  /**
   * The most characters the `skill` tool's description and input schema may
   * take together (default 8,000: about 2,000 tokens, 1% of a 200,000-token
   * context window; see docs/skills.md). Within it every skill is listed and
   * `name` is an enum; over it the listing keeps as many skills as fit
   * (`priority` first, then the skills called most recently in this tool
   * set), says how many more exist, `name` becomes a string checked at call
   * time, and `skill_search` is offered. Each description is cut at 1,536
   * characters. Every skill stays callable by name.
   */
  readonly catalogBudget?: number;
  /**
   * Skill names listed first when not every skill fits the budget, in this
   * order (trimmed, case-sensitive; each must name a skill).
   */
  readonly priority?: readonly string[];
  /**
   * Offer `skill_search`: `true` always (when there are skills), `false`
   * never, default only when the catalog is over `catalogBudget`.
   */
  readonly skillSearch?: boolean;
  /** How skill folders are searched (depth, folder cap, ignored names). */
  readonly load?: Omit<LoadSkillsOptions, "signal">;
  /** Limits of the tools. */
  readonly limits?: Partial<ToolLimits>;
  /** Which tools to build (default all that apply). */
  readonly tools?: readonly ToolName[];
  /** Stops loading the skills. */
  readonly signal?: AbortSignal;
  /**
   * Receives the tools' events: tool calls, preparation progress, command
   * output (see `observe/events.ts`); configured values are redacted, and a
   * listener that throws breaks nothing. Give the runtime its own `onEvent`
   * for its HTTP and lifecycle events.
   */
  readonly onEvent?: SkillEventListener;
  /**
   * Background commands (default on): `bash` takes `run_in_background:
   * true`, and the `bash_output` and `kill_bash` tools come right after
   * `bash`. At most `limits.backgroundCommands` (default 4) at once; the
   * runtime's `close()` stops them. `false` turns them off (`bash` without
   * `run_in_background`, no `bash_output` nor `kill_bash`); so does a `tools`
   * list without `bash_output`.
   */
  readonly background?: boolean;
  /**
   * The approval policy over every call of the set (`skill`, `bash`, the
   * background tools, `read`, `write`, `edit`, `ls`, `glob`, `grep`,
   * `publish_file`): given `{ tool, input, skill? }` (the input validated,
   * `skill` the active skill), it answers `"allow"`, `"deny"` (an error
   * result, nothing runs) or `"ask"` (the call runs only once approved:
   * `dispatchToolCall(..., { approved: true })`, the AI SDK's approval
   * flow, an MCP client's `elicitation/create`). A policy that throws
   * denies. Where it answers `"ask"`, the active skill's `allowed-tools`
   * pre-approve what they cover (see `docs/approvals.md`). Without it every
   * call runs, as before.
   */
  readonly approve?: ToolApprovalPolicy;
  /**
   * Whether skills from installed packages, MCP servers (`loadMcpSkills`,
   * which also keeps their `allowed-tools` only with its own `allowedTools`)
   * or other sources than the application's folders pre-approve through
   * their `allowed-tools`. Default false: they do not, and their calls are
   * asked about.
   */
  readonly trustAllowedTools?: boolean;
  /**
   * Hot reload: the skill folders (and the `load.scopes` places) are watched;
   * a skill added, changed (any of its files) or removed is in the kit's
   * `tools` and `skills` at their next read, after `watchDebounceMs` without
   * a further change, without a restart, on the same runtime. A skill whose
   * files changed is prepared again at its next call, which gives its new
   * instructions. The kit's `close()` stops the watching. Default `false`.
   */
  readonly watch?: boolean;
  /** The pause after the last change before reloading; default 100 ms. */
  readonly watchDebounceMs?: number;
  /**
   * With `watch`: called after each reload that changed a skill, with the
   * names added, removed and changed (e.g. to revoke a changed skill's
   * approvals).
   */
  readonly onChange?: (change: SkillsChange) => void;
}

/** What a reload of a watched kit changed, by skill name. */
export interface SkillsChange {
  /** Skills that are new. */
  readonly added: readonly string[];
  /** Skills that are gone. */
  readonly removed: readonly string[];
  /** Skills whose files (or SKILL.md) changed. */
  readonly changed: readonly string[];
}

/** What {@linkcode buildSkillTools} returns. */
export interface SkillTools extends AsyncDisposable {
  /** The tools, in the order of {@linkcode TOOL_NAMES}. */
  readonly tools: readonly Tool[];
  /** The skills offered, in catalog order. */
  readonly skills: readonly Skill[];
  /** The runtime the tools use. */
  readonly runtime: SkillRuntime;
  /** What loading skipped or noticed (skills skipped, duplicate names...). */
  readonly warnings: readonly string[];
  /** What the tools share (preparation state, limits). */
  readonly context: ToolContext;
  /**
   * Finds a tool by name.
   *
   * @param name The tool's name.
   * @returns The tool, or `undefined`.
   */
  tool(name: string): Tool | undefined;
  /**
   * With `watch`: adds a listener of reloads (see `onChange`); returns its
   * removal. Absent without `watch`.
   */
  subscribe?(listener: (change: SkillsChange) => void): () => void;
  /**
   * Closes the runtime when the builder created it (an application's own
   * runtime stays open: close it yourself). Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Builds the model-facing tools: `skill` (when there are skills),
 * `skill_search` (when the catalog is over `catalogBudget`, or with
 * `skillSearch: true`), `bash`,
 * `read`, `write`, `edit`, `ls`, `glob`, `grep`, and `publish_file` (when a
 * publisher is given).
 *
 * Building loads the skills leniently, selects the names asked for, checks
 * every configuration against the selected skills, and prepares nothing: the
 * first `skill` call for a skill prepares it.
 *
 * Needs `--allow-read` of the skill roots. The tools need what the runtime
 * needs (for the local runtime: read/write of the paths used, `--allow-run`).
 *
 * @example Tools for a folder of skills, with a configuration
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildSkillTools, SkillRuntimeConfig } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/greet`);
 * await Deno.writeTextFile(
 *   `${root}/greet/SKILL.md`,
 *   "---\nname: greet\ndescription: Greets the user.\n---\nRun `echo hello`.\n",
 * );
 * await using set = await buildSkillTools({
 *   skills: root,
 *   configs: { greet: new SkillRuntimeConfig({ env: { GREETING: "hi" } }) },
 * });
 * assert(set.tools[0]?.name === "skill");
 * const result = await set.tool("skill")!.execute({ name: "greet" });
 * assert(result.text.includes("Run `echo hello`."));
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @example Tools whose commands run in a sandbox (the isolated local mode)
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   buildSkillTools,
 *   IsolationUnavailableError,
 *   LocalSkillRuntime,
 * } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * try {
 *   // Each command in a bubblewrap sandbox: no network, nothing of the host
 *   // writable but the workspace. Creation fails (never falls back) where
 *   // bubblewrap cannot run, with a message saying what to install.
 *   await using runtime = await LocalSkillRuntime.create({
 *     conversationsRoot: root,
 *     conversationId: "t1",
 *     isolate: { allowNet: false },
 *   });
 *   await using set = await buildSkillTools({ runtime });
 *   const result = await set.tool("bash")!.execute({ command: "echo $HOME" });
 *   assert(result.text === "/tmp/home\n");
 * } catch (error) {
 *   if (!(error instanceof IsolationUnavailableError)) throw error;
 * } finally {
 *   await Deno.remove(root, { recursive: true });
 * }
 * ```
 *
 * @param options Skills, names, configurations, runtime, publisher, description.
 * @returns The tool set.
 * @throws {TypeError} An option has the wrong type, a configuration name is
 * blank, a configuration is missing or invalid, or a skill name is selected twice.
 * @throws {RangeError} A selected name or a configuration's name matches no skill.
 * @throws {Deno.errors.NotFound} A skill root does not exist.
 */
export async function buildSkillTools(
  options: BuildSkillToolsOptions = {},
): Promise<SkillTools> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Cannot build the tools: options must be an object`);
  }
  checkRuntime(options.runtime);
  if (options.watch === true) {
    const { watchedSkillTools } = await import("./_watch.ts");
    return await watchedSkillTools(options, buildSkillTools);
  }
  const wanted = checkToolNames(options.tools);
  const { skills, warnings, configs } = await loadToolInput(options);
  checkPackageSkills(skills, options.runtime);

  // Background commands need bash to start them and bash_output to read them.
  const background = options.background !== false && wanted.has("bash") &&
    wanted.has("bash_output");
  if (!background) {
    wanted.delete("bash_output");
    wanted.delete("kill_bash");
  }
  const owned = options.runtime === undefined;
  // The local runtime is loaded only when it is the default (not at import;
  // its own module, not the kind's index with the doctor).
  const runtime = options.runtime ??
    new (await import("../runtimes/local/runtime.ts")).LocalSkillRuntime();
  const context = createToolContext(runtime, {
    skills,
    configs,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.publisher ? { publisher: options.publisher } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(background ? { background: true } : {}),
    ...(options.approve !== undefined
      ? { approve: checkPolicy(options.approve) }
      : {}),
    ...(options.trustAllowedTools ? { trustAllowedTools: true } : {}),
  });
  if (options.skillSearch !== undefined) {
    checkBoolean(options.skillSearch, "skillSearch");
  }
  const skillOptions = {
    ...(options.skillDescription !== undefined
      ? { description: options.skillDescription }
      : {}),
    ...(options.catalog ? { catalog: options.catalog } : {}),
    ...(options.catalogBudget !== undefined
      ? { catalogBudget: options.catalogBudget }
      : {}),
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
    ...(!wanted.has("skill_search")
      ? { skillSearch: false }
      : options.skillSearch !== undefined
      ? { skillSearch: options.skillSearch }
      : {}),
    toolNames: TOOL_NAMES.filter((name) =>
      name !== "skill" && name !== "skill_search" && wanted.has(name) &&
      (name !== "publish_file" || options.publisher)
    ),
  };
  // Made first: whether skill_search is offered depends on it.
  const listing = wanted.has("skill")
    ? createSkillListing(context, skillOptions)
    : undefined;
  // Loaded only with a publisher (its media-type table costs a cold start).
  const createPublishFileTool = wanted.has("publish_file") && options.publisher
    ? (await import("./publish_file.ts")).createPublishFileTool
    : undefined;
  const factories: Record<ToolName, () => Tool | undefined> = {
    skill: () =>
      createSkillTool(context, {
        ...skillOptions,
        ...(listing ? { listing } : {}),
      }),
    skill_search: () =>
      listing?.searchOffered ? createSkillSearchTool(context) : undefined,
    bash: () => createBashTool(context),
    bash_output: () => createBashOutputTool(context),
    kill_bash: () => createKillBashTool(context),
    read: () => createReadTool(context),
    write: () => createWriteTool(context),
    edit: () => createEditTool(context),
    ls: () => createLsTool(context),
    glob: () => createGlobTool(context),
    grep: () => createGrepTool(context),
    publish_file: () => createPublishFileTool?.(context),
  };
  const tools: Tool[] = [];
  for (const name of TOOL_NAMES) {
    if (!wanted.has(name)) continue;
    const tool = factories[name]();
    if (tool) tools.push(tool);
  }
  Object.freeze(tools);

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= owned ? runtime.close() : Promise.resolve();
    return closed;
  };
  return Object.freeze({
    tools,
    skills,
    runtime,
    warnings,
    context,
    tool: (name: string) => tools.find((tool) => tool.name === name),
    close,
    [Symbol.asyncDispose]: close,
  });
}

function checkPolicy(approve: unknown): ToolApprovalPolicy {
  if (typeof approve !== "function") {
    throw new TypeError(
      `Cannot build the tools: approve must be a function answering "allow", "deny" or "ask"`,
    );
  }
  return approve as ToolApprovalPolicy;
}

function checkBoolean(value: unknown, name: string): void {
  if (typeof value !== "boolean") {
    throw new TypeError(
      `Cannot build the tools: ${name} must be true or false, got ${typeof value}`,
    );
  }
}

function checkRuntime(runtime: unknown): void {
  if (runtime === undefined) return;
  const r = runtime as Partial<SkillRuntime> | null;
  if (
    r === null || typeof r !== "object" || typeof r.prepare !== "function" ||
    typeof r.execute !== "function" || typeof r.environment !== "function" ||
    typeof r.fs !== "object" || r.fs === null
  ) {
    throw new TypeError(
      `Cannot build the tools: runtime must implement SkillRuntime (name, prepare, execute, fs, environment, close)`,
    );
  }
}

function checkToolNames(names: readonly ToolName[] | undefined): Set<string> {
  if (names === undefined) return new Set(TOOL_NAMES);
  if (!Array.isArray(names)) {
    throw new TypeError(
      `Cannot build the tools: tools must be a list of names`,
    );
  }
  for (const name of names) {
    if (!(TOOL_NAMES as readonly unknown[]).includes(name)) {
      throw new RangeError(
        `Cannot build tool ${JSON.stringify(name)}: no such tool (available: ${
          TOOL_NAMES.join(", ")
        })`,
      );
    }
  }
  return new Set(names);
}

/**
 * A skill from a package that is not on this host (`loadPackageSkill`) can
 * only be prepared by a remote runtime, straight inside its sandbox.
 */
function checkPackageSkills(
  skills: readonly Skill[],
  runtime: SkillRuntime | undefined,
): void {
  if (acceptsRemoteOrigins(runtime)) return;
  for (const skill of skills) {
    if (remoteOriginOf(skill) && "package" in skill) {
      throw new TypeError(
        `Cannot build the tools: the skill "${skill.name}" comes from a package that is not extracted on this host, which only a remote runtime prepares; give a remote runtime, or install the package (installPackage) and pass the installed package`,
      );
    }
  }
}

/**
 * A fluent builder with the shape of the original Java `SkillsTool.builder()`.
 * Each call records its arguments; {@linkcode SkillToolsBuilder.build} does the
 * work of {@linkcode buildSkillTools}.
 *
 * @example The Java-style chain
 * ```ts
 * import { assert } from "@std/assert";
 * import { SkillToolsBuilder, SkillRuntimeConfig } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/report`);
 * await Deno.writeTextFile(
 *   `${root}/report/SKILL.md`,
 *   "---\nname: report\ndescription: Makes reports.\n---\nUse scripts/make.sh.\n",
 * );
 * const config = SkillRuntimeConfig.builder().env("REPORT_FORMAT", "pdf").build();
 * await using set = await new SkillToolsBuilder()
 *   .addSkillsDirectory(root, "report")
 *   .skillRuntimeConfig("report", config)
 *   .build();
 * assert(set.tools.map((t) => t.name).join() ===
 *   "skill,bash,bash_output,kill_bash,read,write,edit,ls,glob,grep");
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export class SkillToolsBuilder {
  #skills: (string | SkillSource | Skill)[] = [];
  #configs: [string, SkillRuntimeConfigInput][] = [];
  #options: Omit<BuildSkillToolsOptions, "skills" | "configs"> = {};

  /**
   * Adds a skill folder or a folder of skills (`addSkillsDirectory` in Java).
   *
   * @param root The folder.
   * @param names The skills to keep from it (default all).
   * @returns This builder.
   */
  addSkillsDirectory(root: string, ...names: string[]): this {
    this.#skills.push(names.length ? { root, names } : root);
    return this;
  }

  /**
   * Adds skills already loaded.
   *
   * @param skills The skills.
   * @returns This builder.
   */
  addSkills(...skills: Skill[]): this {
    this.#skills.push(...skills);
    return this;
  }

  /**
   * Binds a configuration to a skill by name; the same name again replaces it.
   *
   * @param name The skill's name (trimmed, case-sensitive).
   * @param config The configuration.
   * @returns This builder.
   */
  skillRuntimeConfig(name: string, config: SkillRuntimeConfigInput): this {
    this.#configs.push([name, config]);
    return this;
  }

  /**
   * Sets the runtime (default a plain local runtime).
   *
   * @param runtime The runtime.
   * @returns This builder.
   */
  runtime(runtime: SkillRuntime): this {
    this.#options = { ...this.#options, runtime };
    return this;
  }

  /**
   * Sets the publisher of the `publish_file` tool.
   *
   * @param publisher The publisher.
   * @returns This builder.
   */
  filePublisher(publisher: FilePublisher): this {
    this.#options = { ...this.#options, publisher };
    return this;
  }

  /**
   * Sets the `skill` tool's description (a `{catalog}` template or a function).
   *
   * @param description The description.
   * @returns This builder.
   */
  skillDescription(description: SkillDescription): this {
    this.#options = { ...this.#options, skillDescription: description };
    return this;
  }

  /**
   * Sets any other option of {@linkcode buildSkillTools}.
   *
   * @param options The options.
   * @returns This builder.
   */
  options(options: Omit<BuildSkillToolsOptions, "skills" | "configs">): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  /**
   * Builds the tool set (prepares nothing).
   *
   * @returns The tool set.
   * @throws {TypeError} See {@linkcode buildSkillTools}.
   * @throws {RangeError} See {@linkcode buildSkillTools}.
   */
  build(): Promise<SkillTools> {
    return buildSkillTools({
      ...this.#options,
      skills: [...this.#skills],
      configs: [...this.#configs],
    });
  }

  /**
   * Builds and returns only the tools (`buildTools()` in Java). The runtime
   * stays open: pass your own runtime to close it when done.
   *
   * @returns The tools.
   * @throws {TypeError} See {@linkcode buildSkillTools}.
   * @throws {RangeError} See {@linkcode buildSkillTools}.
   */
  async buildTools(): Promise<readonly Tool[]> {
    return (await this.build()).tools;
  }
}
