/**
 * Writing a well-known index (Agent Skills discovery, v0.2.0) for a folder
 * of packages.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { parseSkillMd } from "../skill/parse.ts";
import { installPackage, removeTree } from "./install.ts";
import { INDEX_SCHEMA, type IndexEntry, type SkillIndex } from "./sources.ts";

/** Options of {@linkcode writeSkillIndex}. */
export interface WriteSkillIndexOptions {
  /**
   * The URL the folder is served at; each entry's `url` is then absolute.
   * Default: URLs relative to the index (the folder served as
   * `/.well-known/agent-skills/`).
   */
  readonly baseUrl?: string;
}

const ARCHIVE = /\.(zip|tar\.gz|tgz)$/;

/**
 * Writes `<dir>/index.json` listing every package of a folder (`*.zip`,
 * `*.tar.gz`, `*.tgz`) as an `archive` entry with its name, description,
 * URL and digest. Each package is checked (installed into a temporary
 * folder) first: a package that would be refused is not listed, it fails
 * the call.
 *
 * Needs `--allow-read` and `--allow-write` of the folder.
 *
 * @param dir The folder of packages.
 * @param options The base URL.
 * @returns The index written.
 *
 * @example Indexing a folder of one package
 * ```ts
 * import { assert } from "@std/assert";
 * import { packSkill, writeSkillIndex } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   await Deno.mkdir(`${dir}/site`);
 *   const packed = await packSkill(`${dir}/hello`, { output: `${dir}/site/hello.zip` });
 *   const index = await writeSkillIndex(`${dir}/site`);
 *   assert(index.skills[0]?.digest === packed.digest && index.skills[0]?.url === "hello.zip");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function writeSkillIndex(
  dir: string,
  options: WriteSkillIndexOptions = {},
): Promise<SkillIndex> {
  const names = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && ARCHIVE.test(entry.name)) names.push(entry.name);
  }
  names.sort();
  const scratch = await Deno.makeTempDir({ prefix: "skillrun-index-" });
  const skills: IndexEntry[] = [];
  try {
    for (const file of names) {
      const pkg = await installPackage({ path: hostPath.join(dir, file) }, {
        root: scratch,
      });
      let description: string | undefined;
      try {
        description = parseSkillMd(
          await Deno.readTextFile(hostPath.join(pkg.path, "SKILL.md")),
        ).description;
      } catch {
        description = undefined;
      }
      skills.push({
        name: pkg.name,
        type: "archive",
        ...(description ? { description } : {}),
        url: options.baseUrl === undefined
          ? encodeURIComponent(file)
          : new URL(encodeURIComponent(file), withSlash(options.baseUrl)).href,
        digest: pkg.digest,
      });
    }
  } finally {
    await removeTree(scratch);
  }
  const index: SkillIndex = { $schema: INDEX_SCHEMA, skills };
  await Deno.writeTextFile(
    hostPath.join(dir, "index.json"),
    JSON.stringify(index, null, 2) + "\n",
  );
  return index;
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}
