/**
 * The `skill` tool: prepares a skill on first use and returns its
 * instructions, base directory and files.
 *
 * @module
 */
import type { FormatCatalogOptions } from "../skill/catalog.ts";
import { modelInvocable } from "../skill/invocation.ts";
import { PUBLISH_GUIDANCE } from "./_publish_guidance.ts";
import type { Skill } from "../skill/types.ts";
import type { ToolContext } from "./context.ts";
import type { EventSink } from "../observe/events.ts";
import type { Tool, ToolResult } from "./types.ts";
import { defineTool, errorResult, errorText, okResult } from "./_shared.ts";
import { engineOf } from "./_search.ts";
import { type CatalogUsage, SkillListing } from "./_skill_listing.ts";
export type { CatalogUsage, SkillListing } from "./_skill_listing.ts";
import { skillIndexOf } from "../skill/skill_index.ts";

/** What a description function of the `skill` tool gets. */
export interface SkillDescriptionContext {
  /**
   * The catalog of the skills (`<available_skills>...`); over the catalog
   * budget, the listed skills and a line saying how many more exist.
   */
  readonly catalog: string;
  /** The skills offered. */
  readonly skills: readonly Skill[];
  /** The runtime's name. */
  readonly runtimeName: string;
  /** The names of the other tools of the set. */
  readonly toolNames: readonly string[];
}

/**
 * The `skill` tool's description: a template where `{catalog}` stands for the
 * catalog (appended after a blank line when the template lacks it), or a
 * function that writes it.
 */
export type SkillDescription =
  | string
  | ((context: SkillDescriptionContext) => string);

/** Options of {@linkcode createSkillTool}. */
export interface SkillToolOptions {
  /** The description (template or function). Default {@linkcode DEFAULT_SKILL_DESCRIPTION}. */
  readonly description?: SkillDescription;
  /** How the catalog is formatted (size budget, locations). */
  readonly catalog?: FormatCatalogOptions;
  /** The names of the other tools, mentioned in the default description. */
  readonly toolNames?: readonly string[];
  /**
   * The most characters the description and input schema may take together
   * (see `buildSkillTools`'s `catalogBudget`). Default 8,000.
   */
  readonly catalogBudget?: number;
  /** Skill names listed first when not all fit, in this order. */
  readonly priority?: readonly string[];
  /**
   * Whether `skill_search` is offered beside the tool (the listing points to
   * it): `true` always, `false` never, default when over the budget.
   */
  readonly skillSearch?: boolean;
  /** The listing, when already made with {@linkcode createSkillListing}. */
  readonly listing?: SkillListing;
}

/**
 * The default description template of the `skill` tool. `{runtime}` is the
 * runtime's name, `{tools}` the other tools' names, `{publishing}` the
 * guidance on delivering files when a publisher is configured (empty
 * otherwise; see `PUBLISH_GUIDANCE`) and `{catalog}` the catalog.
 */
export const DEFAULT_SKILL_DESCRIPTION: string =
  "Loads a skill: a folder of instructions, scripts and resources for one kind of task. " +
  "When a task matches a skill's description, call this tool with the skill's name before you start; " +
  'it prepares the skill in the "{runtime}" runtime and returns its instructions, its base directory and a list of its files. ' +
  "Then follow the instructions, working only through the tools given with this one ({tools}): " +
  "they act where the skill is prepared, with its configured environment. " +
  "Paths in a skill's instructions are relative to its base directory.{publishing}\n\n" +
  "{catalog}";

/**
 * Makes the `skill` tool, or `undefined` when there are no skills (no catalog,
 * no tool). When its description and input schema with every skill listed fit
 * the catalog budget (default 8,000 characters), they list every skill and
 * `name` is an enum of the skills' names; otherwise the description lists as
 * many skills as fit (`priority` first, then the skills called most
 * recently, then the rest in catalog order) and says how many more exist,
 * and `name` is a string checked at call time: any skill is loaded by its
 * exact name, listed or not, and an unknown name is answered with the
 * closest names. The first
 * call for a skill prepares it through the runtime (once, even for concurrent
 * calls); a failure is the call's error result, is not cached, and the next
 * call retries.
 *
 * @example Building the tool from loaded skills
 * ```ts
 * import { assert } from "@std/assert";
 * import { createSkillTool } from "./skill_tool.ts";
 * import { createToolContext } from "./context.ts";
 * import { loadSkills, LocalSkillRuntime } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/greet`);
 * await Deno.writeTextFile(
 *   `${root}/greet/SKILL.md`,
 *   "---\nname: greet\ndescription: Greets the user.\n---\nRun `echo hello`.\n",
 * );
 * const { skills } = await loadSkills(root);
 * await using runtime = new LocalSkillRuntime();
 * const tool = createSkillTool(createToolContext(runtime, { skills }))!;
 * assert(tool.description.includes("<name>greet</name>"));
 * const result = await tool.execute({ name: "greet" });
 * assert(result.text.includes("Run `echo hello`."));
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @param context The shared context (skills, runtime, limits).
 * @param options Description and catalog options.
 * @returns The tool, or `undefined` without skills.
 * @throws {TypeError} The description function did not return a string.
 * @throws {RangeError} The catalog options are invalid.
 */
export function createSkillTool(
  context: ToolContext,
  options: SkillToolOptions = {},
): Tool | undefined {
  // Skills with `disable-model-invocation: true` are not offered: they are
  // out of the enum, so a call naming one is refused as an unknown name.
  const skills = modelInvocable(context.skills);
  if (skills.length === 0) return undefined;
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  const listing = options.listing ?? createSkillListing(context, options)!;
  const tool = defineTool(context, {
    name: "skill",
    description: listing.description,
    inputSchema: listing.inputSchema,
    run({ input, signal, callEvents }) {
      const skill = byName.get(input.name as string);
      if (skill === undefined) {
        return Promise.resolve(
          unknownSkill(skills, input.name, listing.searchOffered),
        );
      }
      listing.used(skill);
      return activate(context, skill, signal, callEvents);
    },
  });
  if (listing.whole) return tool;
  // Not every skill listed: the listing follows the skills called.
  return Object.freeze({
    name: tool.name,
    get description() {
      return listing.description;
    },
    inputSchema: tool.inputSchema,
    execute: tool.execute,
  });
}

/** Options of {@linkcode invokeSkill}. */
export interface InvokeSkillOptions {
  /** Stops the preparation. */
  readonly signal?: AbortSignal;
}

/**
 * The application (or its user) starts a skill, as the `skill` tool would but
 * for any skill of the context, `disable-model-invocation: true` included:
 * prepares it and answers its instructions, base directory and files, for
 * the application to put in the conversation. The skill is then active: a
 * later `skill` call for it answers that it is active without the
 * instructions again.
 *
 * @example Invoking a skill the model cannot start
 * ```ts
 * import { assert } from "@std/assert";
 * import { createSkillTool, invokeSkill } from "./skill_tool.ts";
 * import { createToolContext } from "./context.ts";
 * import { loadSkills, LocalSkillRuntime } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/deploy`);
 * await Deno.writeTextFile(
 *   `${root}/deploy/SKILL.md`,
 *   "---\nname: deploy\ndescription: Deploys.\ndisable-model-invocation: true\n---\nRun deploy.\n",
 * );
 * const { skills } = await loadSkills(root);
 * await using runtime = new LocalSkillRuntime();
 * const context = createToolContext(runtime, { skills });
 * assert(createSkillTool(context) === undefined);
 * const result = await invokeSkill(context, "deploy");
 * assert(!result.isError && result.text.includes("Run deploy."));
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @param context The shared context (skills, runtime, limits).
 * @param name The skill's name.
 * @param options A signal.
 * @returns The result the `skill` tool would give.
 * @throws {RangeError} No skill of the context has this name.
 */
export async function invokeSkill(
  context: ToolContext,
  name: string,
  options: InvokeSkillOptions = {},
): Promise<ToolResult> {
  const skill = context.skills.find((s) => s.name === name);
  if (skill === undefined) {
    throw new RangeError(
      `Cannot invoke skill "${name}": no such skill (available: ${
        context.skills.map((s) => `"${s.name}"`).join(", ") || "none"
      })`,
    );
  }
  return await activate(context, skill, options.signal, undefined);
}

/**
 * The skills active in each conversation (tool context): the skill object
 * whose instructions were given. A reloaded skill is a new object: its
 * instructions are given again.
 */
const ACTIVE = new WeakMap<ToolContext, Map<string, Skill>>();

async function activate(
  context: ToolContext,
  skill: Skill,
  signal: AbortSignal | undefined,
  callEvents: EventSink | undefined,
): Promise<ToolResult> {
  const { runtime, limits } = context;
  let active = ACTIVE.get(context);
  if (active === undefined) {
    active = new Map();
    ACTIVE.set(context, active);
  }
  let basePath: string;
  try {
    basePath = (await context.prepare(skill, {
      ...(signal ? { signal } : {}),
      ...(callEvents ? { events: callEvents } : {}),
    }))
      .basePath;
    // The active skill of this tool set (its allowed-tools, its digest).
    await context.approval?.activate(skill, basePath, signal);
  } catch (error) {
    return errorResult(
      `${
        errorText(error, signal)
      }\nThe skill is not ready; calling skill again retries the preparation.`,
    );
  }
  if (active.get(skill.name) === skill) {
    return okResult(
      `Skill "${skill.name}" is already active: its instructions were given earlier in this conversation and have not changed. ` +
        `Base directory: ${basePath}`,
    );
  }
  const files = await listFiles(
    context,
    basePath,
    limits.skillFilesListed,
    signal,
  );
  const parts = [
    `Skill "${skill.name}" is ready in the "${runtime.name}" runtime.`,
    `Base directory: ${basePath}`,
    "Paths in the instructions are relative to the base directory: pass it as working_directory to bash, or join it to paths for the file tools.",
    "",
    `<skill_instructions name="${skill.name}">`,
    skill.instructions.trim(),
    "</skill_instructions>",
    "",
    files,
  ];
  active.set(skill.name, skill);
  return okResult(parts.join("\n"));
}

/**
 * The listing of the `skill` tool within its budget (what `createSkillTool`
 * makes by itself): made first when `skill_search` depends on it.
 *
 * @param context The shared context.
 * @param options Description, catalog, budget, priority and search options.
 * @returns The listing, or `undefined` without skills.
 * @throws {RangeError} See {@linkcode createSkillTool}.
 */
export function createSkillListing(
  context: ToolContext,
  options: SkillToolOptions = {},
): SkillListing | undefined {
  // Skills with `disable-model-invocation: true` are never listed.
  const skills = modelInvocable(context.skills);
  if (skills.length === 0) return undefined;
  // Configured values never reach the model through a skill's description.
  // The path the model can read: where the runtime prepares the skill.
  const { runtime } = context;
  return new SkillListing(skills, {
    render: (catalog) => describe(context, options, catalog),
    format: {
      ...(runtime.skillLocation
        ? { locationOf: (skill: Skill) => runtime.skillLocation!(skill) }
        : {}),
      ...options.catalog,
      secrets: [...context.secrets(), ...(options.catalog?.secrets ?? [])],
    },
    ...(options.catalogBudget !== undefined
      ? { budget: options.catalogBudget }
      : {}),
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
    ...(options.skillSearch !== undefined
      ? { search: options.skillSearch }
      : {}),
  });
}

/** The answer to a name that is no skill's: the closest names. */
function unknownSkill(
  skills: readonly Skill[],
  name: unknown,
  search: boolean,
): ToolResult {
  const closest = skillIndexOf(skills).closestNames(String(name));
  return errorResult(
    `Unknown skill ${JSON.stringify(name)}. ${
      closest.length
        ? `The closest names: ${closest.join(", ")}.`
        : "No skill has a name close to it."
    } Call this tool with a skill's exact name${
      search ? "; skill_search finds skills by what they do" : ""
    }.`,
  );
}

/** What the description needs of the context. */
interface DescribeContext {
  readonly skills: readonly Skill[];
  readonly runtime: { readonly name: string };
  readonly publisher?: unknown;
}

/**
 * How a catalog stands against the `skill` tool's budget, with the default
 * description (what `skillrun list` and `doctor` report): what the
 * description and input schema take with every skill listed, and which
 * skills the listing keeps and leaves out. Needs no permission.
 *
 * @param skills The skills.
 * @param options The budget, the priority, the runtime's name (default
 * `local`) and the other tools' names.
 * @returns The usage.
 * @throws {RangeError} See {@linkcode createSkillTool}.
 */
export function measureSkillCatalog(
  skills: readonly Skill[],
  options: SkillToolOptions & { readonly runtimeName?: string } = {},
): CatalogUsage {
  // Skills with `disable-model-invocation: true` are never listed.
  skills = modelInvocable(skills);
  const context: DescribeContext = {
    skills,
    runtime: { name: options.runtimeName ?? "local" },
  };
  return new SkillListing(skills, {
    render: (catalog) => describe(context, options, catalog),
    format: options.catalog ?? {},
    ...(options.catalogBudget !== undefined
      ? { budget: options.catalogBudget }
      : {}),
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
    ...(options.skillSearch !== undefined
      ? { search: options.skillSearch }
      : {}),
  }).usage();
}

function describe(
  context: DescribeContext,
  options: SkillToolOptions,
  catalog: string,
): string {
  const toolNames = options.toolNames ?? [];
  const template = options.description ?? DEFAULT_SKILL_DESCRIPTION;
  if (typeof template === "function") {
    const text = template({
      catalog,
      skills: modelInvocable(context.skills),
      runtimeName: context.runtime.name,
      toolNames,
    });
    if (typeof text !== "string") {
      throw new TypeError(
        `Cannot describe the skill tool: the description function returned ${typeof text}, not a string`,
      );
    }
    return text;
  }
  if (typeof template !== "string") {
    throw new TypeError(
      `Cannot describe the skill tool: the description must be a string or a function`,
    );
  }
  const filled = template
    .replaceAll("{runtime}", context.runtime.name)
    .replaceAll("{tools}", toolNames.join(", "))
    .replaceAll(
      "{publishing}",
      context.publisher ? `\n\n${PUBLISH_GUIDANCE}` : "",
    );
  return filled.includes("{catalog}")
    ? filled.replaceAll("{catalog}", catalog)
    : `${filled}\n\n${catalog}`;
}

/** How deep the file list of a skill goes. */
const FILE_LIST_DEPTH = 8;

/**
 * Lists a prepared skill's files (paths relative to its base), folders left
 * out, through the search engine so heavy folders made by a bootstrap
 * (`node_modules`, `.venv`...) are named but not walked.
 */
async function listFiles(
  context: ToolContext,
  basePath: string,
  cap: number,
  signal: AbortSignal | undefined,
): Promise<string> {
  try {
    const listing = await engineOf(context).ls({
      path: basePath,
      depth: FILE_LIST_DEPTH,
      // Folders count against the engine's limit: leave room for them.
      limit: cap * 4,
      ...(signal ? { signal } : {}),
    });
    const files = listing.entries.filter((entry) => entry.type !== "directory")
      .map((entry) => entry.path);
    const skipped = listing.entries.filter((entry) => entry.skipped)
      .map((entry) => `${entry.path}/`);
    const truncated = listing.truncated || files.length > cap;
    const shown = files.slice(0, cap);
    const header = truncated
      ? `Files (the first ${shown.length}; use ls or glob for the rest):`
      : `Files (${shown.length}):`;
    const lines = [header, ...shown];
    if (skipped.length) {
      lines.push(`Not listed (heavy folders): ${skipped.join(", ")}`);
    }
    return lines.join("\n");
  } catch (error) {
    return `Files: cannot list them (${errorText(error, signal)})`;
  }
}
