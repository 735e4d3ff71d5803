/**
 * What building tools loads and checks before any tool exists: the skills
 * (folders, sources, loaded skills, installed packages; names selected),
 * their configurations bound by name, the publisher and the limits. Shared by
 * `buildSkillTools` and the MCP HTTP handler, which loads once for every
 * session.
 *
 * @module
 */
import {
  SkillRuntimeConfig,
  type SkillRuntimeConfigOptions,
} from "../runtimes/config.ts";
import {
  loadSkills,
  type LoadSkillsOptions,
  selectSkills,
} from "../skill/load.ts";
import type { Skill } from "../skill/types.ts";
import {
  type InstalledSkillPackage,
  verifyInstalled,
} from "../package/installed.ts";
import type {
  BuildSkillToolsOptions,
  SkillConfigsInput,
  SkillSource,
} from "./builder.ts";
import { checkToolLimits, type FilePublisher } from "./context.ts";
import type { RemoteSkillOrigin } from "../runtimes/remote/origin.ts";

/** What {@linkcode loadToolInput} gives. */
export interface ToolInput {
  /** The skills, sorted by name. */
  readonly skills: readonly Skill[];
  /** What loading skipped or noticed. */
  readonly warnings: readonly string[];
  /** The configurations by skill name. */
  readonly configs: Map<string, SkillRuntimeConfig>;
}

/**
 * Loads the skills of a build's options and checks the rest of what building
 * checks before any tool exists (publisher, limits, configurations).
 *
 * Needs `--allow-read` of the skill roots.
 *
 * @param options The build's options.
 * @returns The skills, the warnings and the configurations.
 */
export async function loadToolInput(
  options: BuildSkillToolsOptions,
): Promise<ToolInput> {
  checkPublisher(options.publisher);
  checkToolLimits(options.limits);
  const { skills, warnings } = await gatherSkills(options);
  const configs = bindConfigs(skills, options.configs);
  return { skills, warnings, configs };
}

function checkPublisher(publisher: unknown): void {
  if (publisher === undefined) return;
  const p = publisher as Partial<FilePublisher> | null;
  if (p === null || typeof p !== "object" || typeof p.publish !== "function") {
    throw new TypeError(
      `Cannot build the tools: publisher must have a publish() method`,
    );
  }
}

function isSkill(value: unknown): value is Skill {
  const v = value as Partial<Skill> | null;
  return v !== null && typeof v === "object" && typeof v.name === "string" &&
    typeof v.basePath === "string" && typeof v.instructions === "string";
}

function isInstalledPackage(value: unknown): value is InstalledSkillPackage {
  return (value as Partial<InstalledSkillPackage> | null)?.kind ===
    "installed-skill-package";
}

/**
 * Loads an installed package after checking its files against its digests
 * (and against the lock's tree digest when it came from a lock).
 */
async function loadInstalledPackage(
  pkg: InstalledSkillPackage,
  options: LoadSkillsOptions,
): Promise<{ skills: readonly Skill[]; warnings: readonly string[] }> {
  const locked = (pkg as { locked?: { tree?: string } }).locked?.tree;
  const result = await verifyInstalled(pkg, locked ?? pkg.tree);
  if (!result.ok) {
    throw new Error(
      `Cannot load the installed skill package "${pkg.name}" (${pkg.digest}): it is not what was ${
        locked ? "locked" : "installed"
      }: ${result.problems.join("; ")}`,
    );
  }
  const loaded = await loadSkills(pkg.path, { ...options, maxDepth: 0 });
  if (loaded.skills.length !== 1) {
    throw new Error(
      `Cannot load the installed skill package "${pkg.name}" (${pkg.digest}): ${
        loaded.warnings.join("; ") || "it holds no skill"
      }`,
    );
  }
  const archivePath = pkg.archivePath;
  if (archivePath === undefined) return loaded;
  // A remote runtime streams the kept archive into its sandbox (its digest
  // checked again in the stream) instead of uploading file by file.
  const origin: RemoteSkillOrigin = {
    digest: pkg.digest,
    materialize: async (target) => {
      const { packageSource, preparePackageInSandbox } = await import(
        "../package/remote.ts"
      );
      await preparePackageInSandbox(
        packageSource({ path: archivePath, digest: pkg.digest }),
        target,
      );
    },
  };
  return {
    skills: loaded.skills.map((skill) =>
      Object.freeze({ ...skill, remoteOrigin: origin })
    ),
    warnings: loaded.warnings,
  };
}

async function gatherSkills(
  options: BuildSkillToolsOptions,
): Promise<{ skills: readonly Skill[]; warnings: readonly string[] }> {
  const input = options.skills;
  const items = input === undefined
    ? []
    : typeof input === "string" || !Array.isArray(input)
    ? [input as string | SkillSource | InstalledSkillPackage]
    : input as readonly (
      | string
      | SkillSource
      | Skill
      | InstalledSkillPackage
    )[];
  const warnings: string[] = [];
  const byName = new Map<string, Skill>();
  const add = (skill: Skill) => {
    const first = byName.get(skill.name);
    if (!first) byName.set(skill.name, skill);
    else if (first !== skill) {
      warnings.push(
        `Skipped "${skill.location}": the skill name "${skill.name}" is already used by "${first.location}"`,
      );
    }
  };
  // The standard places (`load.scopes`) are searched once, after the rest.
  const { scopes, trustProject, cwd, home, ...load } = options.load ?? {};
  const loadOptions: LoadSkillsOptions = {
    ...load,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  // Consecutive plain roots load together, so loadSkills sees them all at once.
  let roots: string[] = [];
  const flush = async () => {
    if (roots.length === 0) return;
    const loaded = await loadSkills(roots, loadOptions);
    warnings.push(...loaded.warnings);
    loaded.skills.forEach(add);
    roots = [];
  };
  for (const item of items) {
    if (typeof item === "string") {
      roots.push(item);
    } else if (isInstalledPackage(item)) {
      await flush();
      const loaded = await loadInstalledPackage(item, loadOptions);
      warnings.push(...loaded.warnings);
      loaded.skills.forEach(add);
    } else if (isSkill(item)) {
      await flush();
      add(item);
    } else if (
      item !== null && typeof item === "object" &&
      typeof (item as SkillSource).root === "string"
    ) {
      await flush();
      const source = item as SkillSource;
      const loaded = await loadSkills(source.root, loadOptions);
      warnings.push(...loaded.warnings);
      const picked = source.names === undefined
        ? loaded.skills
        : selectSkills(loaded.skills, source.names);
      picked.forEach(add);
    } else {
      throw new TypeError(
        `Cannot build the tools: each skills entry must be a path, { root, names }, a loaded skill or an installed skill package`,
      );
    }
  }
  await flush();
  if (scopes !== undefined) {
    const loaded = await loadSkills([], {
      ...loadOptions,
      scopes,
      ...(trustProject !== undefined ? { trustProject } : {}),
      ...(cwd !== undefined ? { cwd } : {}),
      ...(home !== undefined ? { home } : {}),
    });
    warnings.push(...loaded.warnings);
    loaded.skills.forEach(add);
  }
  let skills = [...byName.values()];
  if (options.names !== undefined) skills = selectSkills(skills, options.names);
  skills.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return {
    skills: Object.freeze(skills),
    warnings: Object.freeze(warnings),
  };
}

function bindConfigs(
  skills: readonly Skill[],
  input: SkillConfigsInput | undefined,
): Map<string, SkillRuntimeConfig> {
  const bound = new Map<string, SkillRuntimeConfig>();
  if (input === undefined) return bound;
  let entries: (readonly [unknown, unknown])[];
  if (Array.isArray(input)) entries = input;
  else if (input instanceof Map) entries = [...input.entries()];
  else if (input !== null && typeof input === "object") {
    entries = Object.entries(input);
  } else {
    throw new TypeError(
      `Cannot bind configurations: configs must be a record, a map or a list of [name, config] entries`,
    );
  }
  const names = new Set(skills.map((skill) => skill.name));
  for (const entry of entries) {
    if (!Array.isArray(entry) || entry.length !== 2) {
      throw new TypeError(
        `Cannot bind configurations: each entry must be a [name, config] pair`,
      );
    }
    const [rawName, config] = entry;
    if (typeof rawName !== "string") {
      throw new TypeError(
        `Cannot bind a configuration: the skill name must be a string, got ${typeof rawName}`,
      );
    }
    const name = rawName.trim();
    if (name === "") {
      throw new TypeError(
        `Cannot bind a configuration to skill ${
          JSON.stringify(rawName)
        }: the name is blank`,
      );
    }
    if (!names.has(name)) {
      const available = [...names].sort().map((n) => `"${n}"`).join(", ");
      throw new RangeError(
        `Cannot bind a configuration to skill "${name}": no such skill (available: ${
          available || "none"
        })`,
      );
    }
    bound.set(name, toConfig(name, config));
  }
  return bound;
}

function toConfig(name: string, config: unknown): SkillRuntimeConfig {
  if (config instanceof SkillRuntimeConfig) return config;
  if (config === null || config === undefined) {
    throw new TypeError(
      `Cannot bind a configuration to skill "${name}": the configuration is missing`,
    );
  }
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new TypeError(
      `Cannot bind a configuration to skill "${name}": expected a SkillRuntimeConfig, got ${
        Array.isArray(config) ? "an array" : typeof config
      }`,
    );
  }
  const known = new Set(["env", "bootstrap"]);
  for (const key of Object.keys(config)) {
    if (!known.has(key)) {
      throw new TypeError(
        `Cannot bind a configuration to skill "${name}": unknown field "${key}" (expected env, bootstrap)`,
      );
    }
  }
  try {
    return new SkillRuntimeConfig(config as SkillRuntimeConfigOptions);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new TypeError(
      `Cannot bind a configuration to skill "${name}": ${message}`,
      { cause: error },
    );
  }
}
