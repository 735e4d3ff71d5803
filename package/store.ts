/**
 * Where packages are kept, by digest: the {@linkcode SkillPackageStore}
 * interface and a store in a local folder.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { PackageError } from "./errors.ts";
import { checkDigest, hashingStream } from "./_digest.ts";

/** A package in a store. */
export interface StoredPackage {
  /** Its digest, `sha256:` and 64 hex digits. */
  readonly digest: string;
  /** Its size in bytes. */
  readonly size: number;
}

/** What a package can be put into a store from. */
export type PackageBody = Uint8Array | { readonly path: string };

/**
 * A place that keeps packages by digest: a folder, object storage... Every
 * store checks on `put` that the bytes have the digest they are put under.
 */
export interface SkillPackageStore {
  /**
   * Stores a package under its digest; the bytes must have that digest.
   *
   * @param digest The package's digest.
   * @param body The bytes, or `{ path }` of a file.
   */
  put(digest: string, body: PackageBody): Promise<void>;
  /**
   * Opens a package as a stream.
   *
   * @param digest The package's digest.
   * @returns Its bytes, as they come.
   * @throws {Deno.errors.NotFound} The store has no such package.
   */
  open(digest: string): Promise<ReadableStream<Uint8Array>>;
  /**
   * Removes a package; removing a missing one is not an error.
   *
   * @param digest The package's digest.
   */
  delete(digest: string): Promise<void>;
  /**
   * Lists the packages.
   *
   * @returns Every package with its size, sorted by digest.
   */
  list(): Promise<StoredPackage[]>;
}

/** The object name of a package: `sha256-<hex>.pkg`. */
export function packageKey(digest: string): string {
  return `sha256-${checkDigest(digest).slice("sha256:".length)}.pkg`;
}

const KEY = /^sha256-([0-9a-f]{64})\.pkg$/;

/** The digest a key names, or `undefined`. */
export function digestOfKey(key: string): string | undefined {
  const match = KEY.exec(key);
  return match ? `sha256:${match[1]}` : undefined;
}

/**
 * A store in a local folder: each package is a file `sha256-<hex>.pkg`,
 * written through a temporary file and renamed once its digest is checked,
 * so a reader never sees half a package and concurrent puts are safe.
 *
 * @example Putting, listing, opening and deleting a package
 * ```ts
 * import { assert } from "@std/assert";
 * import { FileSkillPackageStore, packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(dir);
 *   const store = new FileSkillPackageStore(`${dir}/.store`);
 *   await store.put(packed.digest, packed.bytes!);
 *   assert((await store.list())[0]!.digest === packed.digest);
 *   const bytes = await new Response(await store.open(packed.digest)).bytes();
 *   assert(bytes.length === packed.size);
 *   await store.delete(packed.digest);
 *   assert((await store.list()).length === 0);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export class FileSkillPackageStore implements SkillPackageStore {
  /** The store's folder. */
  readonly root: string;

  /**
   * Makes a store over a folder (created on the first `put`).
   *
   * @param root The folder.
   */
  constructor(root: string) {
    this.root = root;
  }

  /**
   * Stores a package; the bytes must have the digest.
   *
   * @param digest The package's digest.
   * @param body The bytes, or `{ path }` of a file.
   * @throws {PackageError} The bytes have another digest (nothing is stored).
   */
  async put(digest: string, body: PackageBody): Promise<void> {
    const key = packageKey(digest);
    await Deno.mkdir(this.root, { recursive: true });
    const temp = hostPath.join(
      this.root,
      `.${key}.${crypto.randomUUID()}.part`,
    );
    const hashing = hashingStream(digest);
    try {
      const source = body instanceof Uint8Array
        ? ReadableStream.from([body])
        : (await Deno.open(body.path)).readable;
      using file = await Deno.open(temp, {
        write: true,
        createNew: true,
        mode: 0o644,
      });
      await source.pipeThrough(hashing.stream).pipeTo(file.writable);
      await Deno.rename(temp, hostPath.join(this.root, key));
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw error;
    }
  }

  /**
   * Opens a package as a stream.
   *
   * @param digest The package's digest.
   * @returns Its bytes.
   * @throws {Deno.errors.NotFound} No such package.
   */
  async open(digest: string): Promise<ReadableStream<Uint8Array>> {
    const path = hostPath.join(this.root, packageKey(digest));
    try {
      return (await Deno.open(path)).readable;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new Deno.errors.NotFound(
          `No package ${digest} in the store "${this.root}"`,
        );
      }
      throw error;
    }
  }

  /**
   * Removes a package (a missing one is no error).
   *
   * @param digest The package's digest.
   */
  async delete(digest: string): Promise<void> {
    await Deno.remove(hostPath.join(this.root, packageKey(digest))).catch(
      (error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      },
    );
  }

  /**
   * Lists the packages.
   *
   * @returns Every package with its size, sorted by digest.
   */
  async list(): Promise<StoredPackage[]> {
    const out: StoredPackage[] = [];
    try {
      for await (const entry of Deno.readDir(this.root)) {
        const digest = entry.isFile ? digestOfKey(entry.name) : undefined;
        if (!digest) continue;
        const info = await Deno.stat(hostPath.join(this.root, entry.name));
        out.push({ digest, size: info.size });
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    return out.sort((a, b) => a.digest < b.digest ? -1 : 1);
  }
}

/** Turns a store's refusal into a clear error (used by the stores). */
export function storeError(
  what: string,
  status: number,
  detail: string,
): Error {
  if (status === 404) return new Deno.errors.NotFound(`${what}: not found`);
  if (status === 401 || status === 403) {
    return new Deno.errors.PermissionDenied(
      `${what}: the store refused the credentials (HTTP ${status}${
        detail ? `, ${detail}` : ""
      }); check the access key and secret`,
    );
  }
  return new PackageError(
    "source",
    `${what}: the store answered HTTP ${status}${detail ? ` (${detail})` : ""}`,
  );
}
