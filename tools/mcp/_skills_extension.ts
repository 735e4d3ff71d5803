// The MCP Skills extension (SEP-2640, Final: `specification/stable/skills.mdx`
// of modelcontextprotocol/ext-skills), server side: each skill's entry
// (`{ uri, frontmatter, resources }`) with its front matter as the YAML says
// and a complete manifest of its files (`{ uri, digest, size }` of the bytes
// served), `skills/list` by pages, and the per-skill limits. Digests are kept
// by file identity (device, inode), modification time and size: a repeat
// listing of unchanged files hashes nothing.
import { parseYaml } from "../../_internal/std.ts";
import { Sha256 } from "../../package/_digest.ts";
import type { Skill } from "../../skill/types.ts";
import { type CopyPolicy, walkSkillFiles } from "../../workspace/copy.ts";

/** The extension's per-skill limits: files (SKILL.md included) and bytes. */
export const SKILL_LIMITS: Readonly<{ files: number; bytes: number }> = Object
  .freeze({ files: 512, bytes: 16 * 1024 * 1024 });

/** Skills per page of `skills/list`. */
export const SKILLS_PAGE_SIZE = 100;

/** The caching fields of every extension result (and of `resources/read`). */
export const CACHE_FIELDS: Readonly<{
  resultType: "complete";
  ttlMs: number;
  cacheScope: "public";
}> = Object.freeze({
  resultType: "complete",
  ttlMs: 60_000,
  cacheScope: "public",
});

/** The `mimeType` of a directory resource. */
export const DIRECTORY_MIME_TYPE = "inode/directory";

/** The Agent Skills naming rules: 1-64 lowercase letters, digits and single hyphens. */
const NAME_RULE = /^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$/;

/** One file of a skill's manifest. */
export interface SkillResourceEntry {
  uri: string;
  digest: string;
  size: number;
}

/** One skill as `skills/list` and `skills/get` give it. */
export interface SkillEntry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: SkillResourceEntry[];
}

/** A skill's entry, or why it is not served. */
export type EntryResult =
  | { readonly ok: true; readonly entry: SkillEntry }
  | { readonly ok: false; readonly reason: string };

interface Cached {
  dev: number;
  ino: number | null;
  mtime: number | undefined;
  size: number;
  digest: string;
  frontmatter?: Record<string, unknown> | Error;
}

const MAX_CACHED = 200_000;
/** Digests by absolute path, shared by every server of the process. */
const DIGESTS = new Map<string, Cached>();

/** Empties the digest cache (for the benchmarks' first listing). */
export function forgetDigests(): void {
  DIGESTS.clear();
}

/** How many files were hashed (read in full) since the process started. */
export let filesHashed = 0;

function sameFile(cached: Cached, info: Deno.FileInfo): boolean {
  return cached.dev === info.dev && cached.ino === info.ino &&
    cached.mtime === info.mtime?.getTime() && cached.size === info.size;
}

function remember(
  path: string,
  info: Deno.FileInfo,
  entry: Omit<Cached, "dev" | "ino" | "mtime" | "size">,
): Cached {
  if (DIGESTS.size >= MAX_CACHED) DIGESTS.clear();
  const cached: Cached = {
    dev: info.dev,
    ino: info.ino,
    mtime: info.mtime?.getTime(),
    size: info.size,
    ...entry,
  };
  DIGESTS.set(path, cached);
  return cached;
}

function digestOf(bytes: Uint8Array): string {
  const hash = new Sha256();
  hash.update(bytes);
  return hash.digest();
}

/**
 * Records the digest of bytes just read from `path` (with the file's
 * information from before the read), so the manifest describes the bytes
 * served. Bytes of another length than the file's size are not recorded.
 */
export function recordRead(
  path: string,
  info: Deno.FileInfo,
  bytes: Uint8Array,
): void {
  if (bytes.length !== info.size) return;
  const cached = DIGESTS.get(path);
  const digest = digestOf(bytes);
  if (cached && sameFile(cached, info) && cached.digest === digest) return;
  remember(path, info, { digest });
}

async function fileDigest(
  path: string,
  withFrontmatter: boolean,
): Promise<Cached> {
  const info = await Deno.lstat(path);
  const cached = DIGESTS.get(path);
  if (
    cached && sameFile(cached, info) &&
    (!withFrontmatter || cached.frontmatter !== undefined)
  ) return cached;
  const bytes = await Deno.readFile(path);
  filesHashed++;
  const after = await Deno.lstat(path);
  const entry: Omit<Cached, "dev" | "ino" | "mtime" | "size"> = {
    digest: digestOf(bytes),
  };
  if (withFrontmatter) entry.frontmatter = parseFrontmatter(bytes);
  // Changed while read: described by the bytes read, not kept.
  if (
    bytes.length !== after.size || after.ino !== info.ino ||
    after.mtime?.getTime() !== info.mtime?.getTime()
  ) {
    return {
      dev: after.dev,
      ino: after.ino,
      mtime: undefined,
      size: bytes.length,
      ...entry,
    };
  }
  return remember(path, info, entry);
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/**
 * The front matter of a SKILL.md as the YAML says (YAML 1.2 core schema:
 * booleans, numbers, null, lists and maps keep their types), or the error.
 */
export function parseFrontmatter(
  bytes: Uint8Array,
): Record<string, unknown> | Error {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return new Error("its SKILL.md is not UTF-8 text");
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const match = FRONT_MATTER.exec(text);
  if (!match) {
    return new Error("its SKILL.md does not begin with --- front matter ---");
  }
  let value: unknown;
  try {
    value = parseYaml(match[1]!.replaceAll("\r\n", "\n"), { schema: "core" });
  } catch (error) {
    return new Error(
      `its front matter is not valid YAML (${
        error instanceof Error ? error.message.split("\n")[0] : String(error)
      })`,
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return new Error("its front matter is not a map");
  }
  if (Object.hasOwn(value, "__proto__")) {
    return new Error(`its front matter has a "__proto__" field`);
  }
  // JSON-safe: a value YAML gives that JSON cannot carry (NaN, Infinity).
  const json = JSON.stringify(value, (_key, v) => {
    if (typeof v === "number" && !Number.isFinite(v)) {
      throw new Error(
        `its front matter holds the number ${v}, which JSON cannot carry`,
      );
    }
    return v;
  });
  return JSON.parse(json) as Record<string, unknown>;
}

/**
 * A skill's entry, checked against the extension's rules: its name by the
 * Agent Skills naming rules, its front matter typed and naming it, at most
 * 512 files and 16 MiB. Files are those the copy policy lets through,
 * symlinks left out, each once.
 */
export async function skillEntry(
  skill: Skill,
  uriOf: (skill: string, path: string) => string,
  policy: CopyPolicy | undefined,
  signal?: AbortSignal,
): Promise<EntryResult> {
  if (!NAME_RULE.test(skill.name)) {
    return {
      ok: false,
      reason:
        `its name breaks the Agent Skills naming rules (1-64 lowercase letters, digits and single hyphens)`,
    };
  }
  const files: { relativePath: string; path: string; size: number }[] = [];
  let total = 0;
  for await (
    const file of walkSkillFiles(
      skill.basePath,
      policy,
      signal ? { signal } : {},
    )
  ) {
    files.push(file);
    total += file.size;
    if (files.length > SKILL_LIMITS.files) {
      return {
        ok: false,
        reason:
          `it has more than ${SKILL_LIMITS.files} files, the limit per skill`,
      };
    }
  }
  if (total > SKILL_LIMITS.bytes) {
    return {
      ok: false,
      reason: `its files total ${total} bytes, over the 16 MiB limit per skill`,
    };
  }
  if (!files.some((f) => f.relativePath === "SKILL.md")) {
    return { ok: false, reason: `it has no file named exactly "SKILL.md"` };
  }
  const resources: SkillResourceEntry[] = [];
  let frontmatter: Record<string, unknown> | undefined;
  total = 0;
  for (const file of files) {
    signal?.throwIfAborted();
    const isSkillMd = file.relativePath === "SKILL.md";
    let cached: Cached;
    try {
      cached = await fileDigest(file.path, isSkillMd);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue; // vanished
      throw error;
    }
    total += cached.size;
    resources.push({
      uri: uriOf(skill.name, file.relativePath),
      digest: cached.digest,
      size: cached.size,
    });
    if (isSkillMd) {
      if (cached.frontmatter instanceof Error) {
        return { ok: false, reason: cached.frontmatter.message };
      }
      frontmatter = cached.frontmatter;
    }
  }
  if (total > SKILL_LIMITS.bytes) {
    return {
      ok: false,
      reason: `its files total ${total} bytes, over the 16 MiB limit per skill`,
    };
  }
  if (frontmatter === undefined) {
    return { ok: false, reason: `its SKILL.md cannot be read` };
  }
  if (frontmatter.name !== skill.name) {
    return {
      ok: false,
      reason: `its front matter's name (${
        JSON.stringify(frontmatter.name)
      }) is not exactly its name as loaded`,
    };
  }
  const problem = frontmatterProblem(frontmatter);
  if (problem !== undefined) return { ok: false, reason: problem };
  return {
    ok: true,
    entry: { uri: uriOf(skill.name, "SKILL.md"), frontmatter, resources },
  };
}

function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * What breaks the Agent Skills specification's field rules in typed front
 * matter (hosts such as the official SDK's client refuse such an entry).
 */
function frontmatterProblem(
  frontmatter: Record<string, unknown>,
): string | undefined {
  const { description, compatibility, metadata } = frontmatter;
  if (
    typeof description !== "string" || description === "" ||
    characters(description) > 1024
  ) {
    return `its description must be a string of 1-1024 characters`;
  }
  if (
    compatibility !== undefined &&
    (typeof compatibility !== "string" || compatibility === "" ||
      characters(compatibility) > 500)
  ) {
    return `its compatibility must be a string of 1-500 characters`;
  }
  if (
    metadata !== undefined &&
    (metadata === null || typeof metadata !== "object" ||
      Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === "string"))
  ) {
    return `its metadata must map strings to strings`;
  }
  return undefined;
}

/** A `skills/list` cursor: the name of the last skill of the previous page. */
export function encodeCursor(afterName: string): string {
  return `after:${encodeURIComponent(afterName)}`;
}

/** The name a cursor of {@linkcode encodeCursor} carries, or `undefined`. */
export function decodeCursor(cursor: string): string | undefined {
  if (!cursor.startsWith("after:")) return undefined;
  try {
    return decodeURIComponent(cursor.slice("after:".length));
  } catch {
    return undefined;
  }
}
