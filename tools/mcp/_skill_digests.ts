// The digests of installed skill packages, for the resources (`_meta`): an
// installed skill package (a folder beside its `.skillrun-package.json`
// manifest) has its digests from its manifest, which `buildSkillTools`
// checked against the files when loading it, and every read of its files is
// checked against them. (The skills extension's manifests: _skills_extension.ts.)
import { hostPath } from "../../_internal/std.ts";
import type { Skill } from "../../skill/types.ts";
import {
  MANIFEST_FILE,
  type PackageManifest,
} from "../../package/installed.ts";
import { sha256Of } from "../../package/_digest.ts";

export { SKILLS_EXTENSION } from "./_protocol.ts";

/** The `_meta` key of a resource's digest. */
export const DIGEST_META_KEY = "io.modelcontextprotocol.skills/digest";

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
  readonly #manifests = new Map<
    string,
    Promise<ReadonlyMap<string, string> | undefined>
  >();

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
}
