/**
 * Hot reload of a tool kit (`buildSkillTools({ watch: true })`): the skill
 * folders are watched, and after a change (debounced) the skills are loaded
 * again and the tools rebuilt on the same runtime; the kit's `tools`,
 * `skills`, `warnings` and `context` are the current ones at each read.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import type { Skill } from "../skill/types.ts";
import { scopeRoots } from "../skill/sources.ts";
import { walkSkillFiles } from "../workspace/copy.ts";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import type {
  BuildSkillToolsOptions,
  SkillsChange,
  SkillSource,
  SkillTools,
} from "./builder.ts";

/** The default pause after the last change before reloading, in ms. */
export const DEFAULT_WATCH_DEBOUNCE_MS = 100;

/** What makes a kit (the builder without `watch`). */
type Build = (options: BuildSkillToolsOptions) => Promise<SkillTools>;

/** The folders whose changes reload the skills. */
async function watchRoots(options: BuildSkillToolsOptions): Promise<string[]> {
  const input = options.skills;
  const items = input === undefined
    ? []
    : Array.isArray(input)
    ? input
    : [input];
  const paths: string[] = [];
  for (const item of items) {
    if (typeof item === "string") paths.push(item);
    else if (item && typeof item === "object") {
      const value = item as Partial<SkillSource & Skill & { path: string }>;
      if (typeof value.root === "string") paths.push(value.root);
      else if (typeof value.basePath === "string") paths.push(value.basePath);
      else if (typeof value.path === "string") paths.push(value.path);
    }
  }
  if (options.load?.scopes !== undefined) {
    paths.push(...(await scopeRoots(options.load)).roots);
  }
  const real = new Set<string>();
  for (const path of paths) {
    try {
      const resolved = await Deno.realPath(hostPath.resolve(path));
      const info = await Deno.stat(resolved);
      real.add(info.isDirectory ? resolved : hostPath.dirname(resolved));
    } catch {
      // A root that does not exist is not watched (loading reports it).
    }
  }
  return [...real];
}

/** What a skill is now: its files (path, size, time) and its SKILL.md. */
async function fingerprint(skill: Skill): Promise<string> {
  const parts = [
    skill.location,
    skill.instructions,
    JSON.stringify(skill.frontMatter),
  ];
  try {
    for await (const file of walkSkillFiles(skill.basePath)) {
      const info = await Deno.lstat(file.path).catch(() => undefined);
      parts.push(
        `${file.relativePath}\0${file.size}\0${info?.mtime?.getTime() ?? ""}`,
      );
    }
  } catch {
    parts.push("(unreadable)");
  }
  return parts.join("\n");
}

async function fingerprints(
  skills: readonly Skill[],
): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  for (const skill of skills) map.set(skill.name, await fingerprint(skill));
  return map;
}

function diff(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
): SkillsChange {
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const [name, print] of after) {
    if (!before.has(name)) added.push(name);
    else if (before.get(name) !== print) changed.push(name);
  }
  for (const name of before.keys()) if (!after.has(name)) removed.push(name);
  return { added, removed, changed };
}

/**
 * Builds a kit that reloads its skills when their folders change.
 *
 * @param options The build's options (`watch` set).
 * @param build The builder without `watch`.
 * @returns The live kit.
 */
export async function watchedSkillTools(
  options: BuildSkillToolsOptions,
  build: Build,
): Promise<SkillTools> {
  const debounceMs = options.watchDebounceMs ?? DEFAULT_WATCH_DEBOUNCE_MS;
  if (!Number.isFinite(debounceMs) || debounceMs < 0) {
    throw new RangeError(
      `Cannot build the tools with watchDebounceMs ${debounceMs}: expected a non-negative number of milliseconds`,
    );
  }
  const owned = options.runtime === undefined;
  const runtime = options.runtime ?? new LocalSkillRuntime();
  const rebuild = () => build({ ...options, watch: false, runtime });
  let current: SkillTools;
  try {
    current = await rebuild();
  } catch (error) {
    if (owned) await runtime.close();
    throw error;
  }
  let prints = await fingerprints(current.skills);
  let reloadError: string | undefined;
  const listeners = new Set<(change: SkillsChange) => void>();
  if (options.onChange) listeners.add(options.onChange);

  const roots = await watchRoots(options);
  const watcher = roots.length > 0 ? Deno.watchFs(roots) : undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let reloading: Promise<void> = Promise.resolve();
  let again = false;
  let closed = false;

  const reload = async (): Promise<void> => {
    let next: SkillTools;
    let nextPrints: Map<string, string>;
    try {
      next = await rebuild();
      nextPrints = await fingerprints(next.skills);
    } catch (error) {
      // The last good kit stays; the failure is a warning until a reload works.
      reloadError = `Reloading the skills failed, the previous ones stay: ${
        error instanceof Error ? error.message : String(error)
      }`;
      return;
    }
    reloadError = undefined;
    const change = diff(prints, nextPrints);
    if (
      change.added.length + change.removed.length + change.changed.length ===
        0
    ) return; // Nothing a skill is made of changed: keep what is prepared.
    current = next;
    prints = nextPrints;
    for (const listener of listeners) {
      try {
        listener(change);
      } catch {
        // A listener that throws breaks nothing.
      }
    }
  };
  const schedule = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (closed) return;
      again = true;
      reloading = reloading.then(async () => {
        while (again && !closed) {
          again = false;
          await reload();
        }
      });
    }, debounceMs);
  };
  const watching = (async () => {
    if (!watcher) return;
    try {
      for await (const event of watcher) {
        if (event.kind === "access") continue;
        schedule();
      }
    } catch {
      // The watcher closed.
    }
  })();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      closed = true;
      clearTimeout(timer);
      watcher?.close();
      await watching;
      await reloading;
      if (owned) await runtime.close();
    })();
    return closing;
  };
  return Object.freeze({
    get tools() {
      return current.tools;
    },
    get skills() {
      return current.skills;
    },
    get warnings() {
      return reloadError === undefined
        ? current.warnings
        : Object.freeze([...current.warnings, reloadError]);
    },
    get context() {
      return current.context;
    },
    runtime,
    tool: (name: string) => current.tool(name),
    subscribe(listener: (change: SkillsChange) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close,
    [Symbol.asyncDispose]: close,
  });
}
