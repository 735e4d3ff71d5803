/**
 * Skills that are not a folder on this host: a skill may carry a
 * {@linkcode RemoteSkillOrigin} (a package, for instance), and a remote
 * runtime then lets the origin put the skill's files into the sandbox
 * instead of uploading a local folder.
 *
 * @module
 */
import type { Skill } from "../../skill/types.ts";
import type { ExecuteResult, PrepareProgress } from "../types.ts";
import type { RemoteFileOps } from "./fs.ts";

/** What a remote runtime lends an origin to materialize a skill in its sandbox. */
export interface RemoteMaterializeTarget {
  /** The skill's name (for progress). */
  readonly skillName: string;
  /** The skill's folder in the sandbox (absolute POSIX), to make. */
  readonly basePath: string;
  /** The sandbox's file calls. */
  readonly files: RemoteFileOps;
  /**
   * Runs one helper command in the sandbox with `bash -c` (cwd `/`, no
   * configured variables); a failing command is a result, not an error.
   * Only the signal given here stops it (a clean-up after an abort runs).
   */
  run(
    command: string,
    options?: {
      readonly timeoutMs?: number;
      readonly maxOutputBytes?: number;
      readonly signal?: AbortSignal;
    },
  ): Promise<ExecuteResult>;
  /** Stops the work. */
  readonly signal?: AbortSignal;
  /** Reports progress (stage `upload`). */
  readonly onProgress?: (progress: PrepareProgress) => void;
}

/**
 * Where a skill's files come from when they are not a folder on this host
 * (or should not be uploaded file by file): e.g. a package streamed from a
 * store, a URL or a file straight into the sandbox.
 */
export interface RemoteSkillOrigin {
  /**
   * What identifies the content (e.g. the package's `sha256:` digest): a
   * conversation record holding the same value (and configuration) is
   * prepared already.
   */
  readonly digest: string;
  /**
   * Makes `target.basePath` hold exactly the skill's files, atomically: on
   * a failure nothing is left in the sandbox.
   */
  materialize(target: RemoteMaterializeTarget): Promise<void>;
}

/** A skill carrying its {@linkcode RemoteSkillOrigin}. */
export interface SkillWithOrigin extends Skill {
  /** How a remote runtime puts its files into the sandbox. */
  readonly remoteOrigin: RemoteSkillOrigin;
}

/**
 * The origin a skill carries, or `undefined` for a plain skill folder.
 *
 * @param skill The skill.
 * @returns Its origin.
 *
 * @example A plain skill has none
 * ```ts
 * import { assert } from "@std/assert";
 * import { remoteOriginOf } from "./origin.ts";
 * assert(remoteOriginOf({
 *   name: "a", description: "A.", basePath: "/s/a", location: "/s/a/SKILL.md",
 *   instructions: "", frontMatter: {}, warnings: [],
 * }) === undefined);
 * ```
 */
export function remoteOriginOf(skill: Skill): RemoteSkillOrigin | undefined {
  const origin = (skill as Partial<SkillWithOrigin>).remoteOrigin;
  return origin && typeof origin.materialize === "function" &&
      typeof origin.digest === "string"
    ? origin
    : undefined;
}

/**
 * The key a runtime sets to `true` when it prepares skills through their
 * {@linkcode RemoteSkillOrigin} (every `RemoteSkillRuntime` does).
 */
export const ACCEPTS_REMOTE_ORIGINS: unique symbol = Symbol.for(
  "skillrun.acceptsRemoteOrigins",
);

/**
 * Whether a runtime prepares skills through their origins.
 *
 * @param runtime The runtime.
 * @returns `true` for a remote runtime.
 *
 * @example A plain object does not
 * ```ts
 * import { assert } from "@std/assert";
 * import { acceptsRemoteOrigins } from "./origin.ts";
 * assert(!acceptsRemoteOrigins({}));
 * ```
 */
export function acceptsRemoteOrigins(runtime: unknown): boolean {
  return runtime !== null && typeof runtime === "object" &&
    (runtime as { [ACCEPTS_REMOTE_ORIGINS]?: unknown })[
        ACCEPTS_REMOTE_ORIGINS
      ] === true;
}
