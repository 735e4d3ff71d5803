// Per-file SHA-256 digests of served skills, for the resources (`_meta`) and
// for the draft skills extension of MCP (SEP-2640, `io.modelcontextprotocol/
// skills`: `skills/list` and `skills/get`, each skill with the digest of every
// file). An installed skill package (a folder beside its
// `.skillrun-package.json` manifest) has its digests from its manifest, which
// `buildSkillTools` checked against the files when loading it, and every
// read of its files is checked against them; other skills' files are hashed
// when listed.
import { hostPath } from "../../_internal/std.ts";
import type { Skill } from "../../skill/types.ts";
import { type CopyPolicy, walkSkillFiles } from "../../workspace/copy.ts";
import {
  MANIFEST_FILE,
  type PackageManifest,
} from "../../package/installed.ts";
import { Sha256, sha256Of } from "../../package/_digest.ts";

/** The extension's identifier, declared in the server's capabilities. */
export const SKILLS_EXTENSION = "io.modelcontextprotocol/skills";

/** The `_meta` key of a resource's digest. */
export const DIGEST_META_KEY = "io.modelcontextprotocol.skills/digest";

/** One skill as `skills/list` and `skills/get` give it. */
export interface SkillEntry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: { uri: string; digest: string }[];
}

/** Finds the manifest of an installed package beside a skill folder. */
async function readManifest(
  skill: Skill,
): Promise<ReadonlyMap<string, string> | undefined> {
  const path = hostPath.join(hostPath.dirname(skill.basePath), MANIFEST_FILE);
  let manifest: PackageManifest;
  try {
    manifest = JSON.parse(await Deno.readTextFile(path));
  } catch {
    return undefined;
  }
  if (manifest?.name !== hostPath.basename(skill.basePath)) return undefined;
  return new Map(manifest.files.map((file) => [file.path, file.digest]));
}

/** The digests of skills' files, by skill name. */
export class SkillDigests {
  readonly #policy: CopyPolicy | undefined;
  readonly #manifests = new Map<
    string,
    Promise<ReadonlyMap<string, string> | undefined>
  >();

  constructor(policy: CopyPolicy | undefined) {
    this.#policy = policy;
  }

  /** The installed package's digests of a skill, or `undefined`. */
  installed(skill: Skill): Promise<ReadonlyMap<string, string> | undefined> {
    let manifest = this.#manifests.get(skill.name);
    if (manifest === undefined) {
      manifest = readManifest(skill);
      this.#manifests.set(skill.name, manifest);
    }
    return manifest;
  }

  /**
   * Checks bytes read from an installed skill against its manifest; throws
   * when they differ. Skills not installed from a package pass.
   */
  async check(skill: Skill, path: string, bytes: Uint8Array): Promise<void> {
    const expected = (await this.installed(skill))?.get(path);
    if (expected !== undefined && sha256Of(bytes) !== expected) {
      throw new Error(
        `the file changed since its package was installed (its SHA-256 is not ${expected})`,
      );
    }
  }

  /** The skill's entry: its SKILL.md's URI, front matter, every file's digest. */
  async entry(
    skill: Skill,
    uriOf: (skill: string, path: string) => string,
    signal?: AbortSignal,
  ): Promise<SkillEntry> {
    const installed = await this.installed(skill);
    const resources: { uri: string; digest: string }[] = [];
    for await (
      const file of walkSkillFiles(
        skill.basePath,
        this.#policy,
        signal ? { signal } : {},
      )
    ) {
      const digest = installed?.get(file.relativePath) ??
        await hashFile(file.path);
      resources.push({ uri: uriOf(skill.name, file.relativePath), digest });
    }
    return {
      uri: uriOf(skill.name, "SKILL.md"),
      frontmatter: { ...skill.frontMatter },
      resources,
    };
  }
}

async function hashFile(path: string): Promise<string> {
  const hash = new Sha256();
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest();
}
