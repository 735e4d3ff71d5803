/**
 * Where packages come from: a local archive or folder, an `https://` URL with
 * its digest, a well-known index (Agent Skills discovery, v0.2.0), or a store.
 * Every source ends in {@linkcode installPackage}: a digest-named folder in a
 * local cache, shared safely by concurrent processes.
 *
 * @module
 */
import { concatBytes, hostPath } from "../_internal/std.ts";
import { PackageError } from "./errors.ts";
import { checkDigest, sha256Of } from "./_digest.ts";
import { installPackage, type InstallPackageOptions } from "./install.ts";
import { type InstalledSkillPackage, readInstalled } from "./installed.ts";
import { packSkill } from "./pack.ts";
import type { SkillPackageStore } from "./store.ts";
import { checkSkillFolderName } from "./_entries.ts";
import { crc32, deflateRawSync } from "node:zlib";
import { ZipWriter } from "./_zip_writer.ts";

/** Options shared by the installs from a source. */
export type InstallFromOptions = Omit<InstallPackageOptions, "source">;

/**
 * Materializes a package of a store in a local cache: reused when the cache
 * already holds its digest, otherwise streamed from the store and installed
 * (digest checked while streaming). Safe when several processes do it at once.
 *
 * @param store The store.
 * @param digest The package's digest.
 * @param options The cache folder (`root`), limits, signal.
 * @returns The installed package.
 *
 * @example From a folder store into a cache
 * ```ts
 * import { assert } from "@std/assert";
 * import { FileSkillPackageStore, installFromStore, packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(dir);
 *   const store = new FileSkillPackageStore(`${dir}/.store`);
 *   await store.put(packed.digest, packed.bytes!);
 *   const pkg = await installFromStore(store, packed.digest, { root: `${dir}/.cache` });
 *   assert(pkg.name === "hello");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function installFromStore(
  store: SkillPackageStore,
  digest: string,
  options: InstallFromOptions,
): Promise<InstalledSkillPackage> {
  checkDigest(digest);
  const cached = await readInstalled(options.root, digest);
  if (cached) return cached;
  return await installPackage(await store.open(digest), {
    ...options,
    digest,
    source: `store:${digest}`,
  });
}

/** Whether a URL may be fetched: https, or http on a loopback host (tests). */
function checkUrl(url: URL): void {
  const loopback = url.hostname === "127.0.0.1" || url.hostname === "[::1]" ||
    url.hostname === "localhost";
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new TypeError(
      `Cannot fetch "${url.href}": only https:// URLs (or http:// on loopback) are allowed`,
    );
  }
}

async function fetchOk(url: string, signal?: AbortSignal): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, signal ? { signal } : {});
  } catch (error) {
    throw new PackageError(
      "source",
      `fetching "${url}" failed: ${
        error instanceof Error ? error.message : error
      }`,
      { cause: error },
    );
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new PackageError(
      "source",
      `fetching "${url}" answered HTTP ${response.status}`,
    );
  }
  return response;
}

/**
 * Installs a package from an `https://` URL (or `http://` on loopback); the
 * expected digest is required, and checked while the bytes stream in.
 *
 * @param url The package's URL.
 * @param digest Its expected digest.
 * @param options The cache folder (`root`), limits, signal.
 * @returns The installed package.
 * @throws {PackageError} The download failed or the digest differs.
 *
 * @example A URL needs a digest
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { installFromUrl } from "@skillrun/skillrun/package";
 * await assertRejects(() => installFromUrl("http://example.com/x.zip", "", { root: "." }), TypeError);
 * ```
 */
export async function installFromUrl(
  url: string,
  digest: string,
  options: InstallFromOptions,
): Promise<InstalledSkillPackage> {
  checkDigest(digest, "the expected digest of a URL");
  const parsed = new URL(url);
  checkUrl(parsed);
  const cached = await readInstalled(options.root, digest);
  if (cached) return cached;
  const response = await fetchOk(parsed.href, options.signal);
  return await installPackage(response.body!, {
    ...options,
    digest,
    source: parsed.href,
  });
}

/** One skill of a well-known index (Agent Skills discovery, v0.2.0). */
export interface IndexEntry {
  /** The skill's name. */
  readonly name: string;
  /** `skill-md`: the URL is one `SKILL.md`; `archive`: a ZIP or tar.gz. */
  readonly type: "skill-md" | "archive";
  /** What the skill does. */
  readonly description?: string;
  /** The artifact's URL, relative to the index's URL or absolute. */
  readonly url: string;
  /** `sha256:` of the artifact. */
  readonly digest: string;
}

/** A well-known index. */
export interface SkillIndex {
  /** `https://schemas.agentskills.io/discovery/0.2.0/schema.json`. */
  readonly $schema: string;
  /** The skills. */
  readonly skills: readonly IndexEntry[];
}

/** The schema URI of v0.2.0 of the discovery draft. */
export const INDEX_SCHEMA =
  "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

/** Where the index lives below an origin. */
export const INDEX_PATH = "/.well-known/agent-skills/index.json";

/**
 * Reads a well-known index: `<origin>/.well-known/agent-skills/index.json`
 * (or the exact URL of an `index.json`), checks its entries.
 *
 * @param site The site's origin, or the index's URL.
 * @param signal Stops the request.
 * @returns The index URL and its entries.
 *
 * @example Refusing a plain http URL off loopback
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { readSkillIndex } from "@skillrun/skillrun/package";
 * await assertRejects(() => readSkillIndex("http://example.com"), TypeError);
 * ```
 */
export async function readSkillIndex(
  site: string,
  signal?: AbortSignal,
): Promise<{ readonly url: string; readonly index: SkillIndex }> {
  const base = new URL(site);
  checkUrl(base);
  const url = base.pathname.endsWith(".json")
    ? base
    : new URL(INDEX_PATH, base);
  const response = await fetchOk(url.href, signal);
  let index: SkillIndex;
  try {
    index = await response.json();
  } catch (error) {
    throw new PackageError("source", `"${url.href}" is not JSON`, {
      cause: error,
    });
  }
  if (!index || !Array.isArray(index.skills)) {
    throw new PackageError(
      "source",
      `"${url.href}" is not a skills index (no "skills" list)`,
    );
  }
  for (const entry of index.skills) {
    if (
      typeof entry?.name !== "string" || typeof entry.url !== "string" ||
      (entry.type !== "skill-md" && entry.type !== "archive")
    ) {
      throw new PackageError(
        "source",
        `"${url.href}" has an entry without name, url and type "skill-md" or "archive": ${
          JSON.stringify(entry).slice(0, 200)
        }`,
      );
    }
    checkDigest(entry.digest, `the digest of "${entry.name}" in ${url.href}`);
  }
  return { url: url.href, index };
}

/**
 * Installs one skill of a well-known index: its artifact is fetched from the
 * URL the index gives (resolved against the index's URL) and checked against
 * the index's digest; a `skill-md` entry becomes a package holding that one
 * `SKILL.md`, carrying the index's digest as `sourceDigest` beside its own
 * (both go into the lock).
 *
 * @param site The site's origin, or the index's URL.
 * @param name The skill's name in the index.
 * @param options The cache folder (`root`), limits, signal.
 * @returns The installed package.
 * @throws {PackageError} No such skill, a failed download, or a digest mismatch.
 *
 * @example A skill missing from an unreachable index
 * ```ts
 * import { assertRejects } from "@std/assert";
 * import { installFromIndex, PackageError } from "@skillrun/skillrun/package";
 * await assertRejects(
 *   () => installFromIndex("http://127.0.0.1:9/", "x", { root: "." }),
 *   PackageError,
 * );
 * ```
 */
export async function installFromIndex(
  site: string,
  name: string,
  options: InstallFromOptions,
): Promise<InstalledSkillPackage> {
  const { url, index } = await readSkillIndex(site, options.signal);
  const entry = index.skills.find((skill) => skill.name === name);
  if (!entry) {
    throw new PackageError(
      "source",
      `the index "${url}" has no skill named ${JSON.stringify(name)} (it has ${
        index.skills.map((s) => JSON.stringify(s.name)).join(", ") || "none"
      })`,
    );
  }
  if (options.digest !== undefined && options.digest !== entry.digest) {
    throw new PackageError(
      "digest-mismatch",
      `the index "${url}" gives ${entry.digest} for "${name}", expected ${options.digest}`,
    );
  }
  const artifact = new URL(entry.url, url);
  checkUrl(artifact);
  if (entry.type === "archive") {
    const cached = await readInstalled(options.root, entry.digest);
    if (cached) return cached;
    const response = await fetchOk(artifact.href, options.signal);
    return await installPackage(response.body!, {
      ...options,
      digest: entry.digest,
      source: `${url}#${name}`,
    });
  }
  // skill-md: one file, checked, then wrapped as a package of one file.
  const response = await fetchOk(artifact.href, options.signal);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const digest = sha256Of(bytes);
  if (digest !== entry.digest) {
    throw new PackageError(
      "digest-mismatch",
      `the SKILL.md of "${name}" at ${artifact.href} has digest ${digest}, the index says ${entry.digest}`,
    );
  }
  checkSkillFolderName(name);
  const { digest: _digest, ...rest } = options;
  const pkg = await installPackage(wrapSkillMd(name, bytes), {
    ...rest,
    source: `${url}#${name}`,
  });
  // Both digests: the index's (of the SKILL.md) and the package's.
  return Object.freeze({ ...pkg, sourceDigest: digest });
}

/** A ZIP holding `<name>/SKILL.md`, for `skill-md` entries. */
function wrapSkillMd(name: string, bytes: Uint8Array): Uint8Array {
  // The package writer's own ZIP container (one writer in the project).
  const chunks: Uint8Array[] = [];
  const zip = new ZipWriter((chunk) => chunks.push(chunk));
  zip.add(
    `${name}/SKILL.md`,
    0o644,
    crc32(bytes),
    bytes.byteLength,
    deflateRawSync(bytes),
  );
  zip.end();
  return concatBytes(chunks);
}

/**
 * Installs from a local path: an archive file (ZIP or tar.gz) or a skill
 * folder (packed first, as {@linkcode packSkill} does).
 *
 * @param path The archive or folder.
 * @param options The cache folder (`root`), expected digest, limits, signal.
 * @returns The installed package.
 *
 * @example Installing a folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { installFromPath } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const pkg = await installFromPath(`${dir}/hello`, { root: `${dir}/.cache` });
 *   assert(pkg.name === "hello");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function installFromPath(
  path: string,
  options: InstallFromOptions,
): Promise<InstalledSkillPackage> {
  const info = await Deno.stat(path);
  const source = hostPath.resolve(path);
  if (info.isDirectory) {
    const packed = await packSkill(path, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    if (options.digest !== undefined && options.digest !== packed.digest) {
      throw new PackageError(
        "digest-mismatch",
        `the folder "${path}" packs to ${packed.digest}, expected ${options.digest}`,
      );
    }
    return await installPackage(packed.bytes!, {
      ...options,
      digest: packed.digest,
      source,
    });
  }
  return await installPackage({ path }, { ...options, source });
}
