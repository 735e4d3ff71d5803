/**
 * An S3-compatible package store on `fetch`, requests signed (AWS Signature
 * Version 4) by `aws4fetch`: runs wherever `fetch` and Web Crypto do (Deno,
 * Deno Deploy, edge functions).
 *
 * @module
 */
import { AwsClient } from "aws4fetch";
import {
  digestOfKey,
  type PackageBody,
  packageKey,
  type SkillPackageStore,
  type StoredPackage,
  storeError,
} from "./store.ts";
import { checkDigest } from "./_digest.ts";

/** Options of {@linkcode S3SkillPackageStore}. */
export interface S3SkillPackageStoreOptions {
  /** The endpoint, e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`. */
  readonly endpoint: string;
  /** The bucket. */
  readonly bucket: string;
  /** Key prefix of the packages, e.g. `skills/`. Default none. */
  readonly prefix?: string;
  /** The region. Default `us-east-1`. */
  readonly region?: string;
  /** The access key id. */
  readonly accessKeyId: string;
  /** The secret access key; never shown in an error. */
  readonly secretAccessKey: string;
  /** A session token, for temporary credentials. */
  readonly sessionToken?: string;
  /** Addressing: `path` (`endpoint/bucket/key`, the default) or `virtual` (`bucket.endpoint/key`). */
  readonly style?: "path" | "virtual";
}

/**
 * A package store in an S3-compatible bucket (AWS S3, MinIO, R2, s3rver...),
 * one object `<prefix>sha256-<hex>.pkg` per package. `put` signs the
 * package's SHA-256 as the payload hash, so the service itself refuses bytes
 * that do not match the digest.
 *
 * @example A store over a bucket (no request is made here)
 * ```ts
 * import { assert } from "@std/assert";
 * import { S3SkillPackageStore } from "@skillrun/skillrun/package";
 * const store = new S3SkillPackageStore({
 *   endpoint: "http://127.0.0.1:9000",
 *   bucket: "skills",
 *   accessKeyId: "AKIDEXAMPLE",
 *   secretAccessKey: "not-a-real-secret",
 * });
 * assert(store.urlOf("sha256:" + "a".repeat(64)).endsWith("/skills/sha256-" + "a".repeat(64) + ".pkg"));
 * ```
 */
export class S3SkillPackageStore implements SkillPackageStore {
  readonly #client: AwsClient;
  readonly #base: string;
  readonly #prefix: string;

  /**
   * Makes the store; nothing is requested yet.
   *
   * @param options Endpoint, bucket, prefix, region, credentials.
   */
  constructor(options: S3SkillPackageStoreOptions) {
    for (
      const key of [
        "endpoint",
        "bucket",
        "accessKeyId",
        "secretAccessKey",
      ] as const
    ) {
      if (typeof options?.[key] !== "string" || options[key] === "") {
        throw new TypeError(`Cannot make an S3 store: ${key} is missing`);
      }
    }
    this.#client = new AwsClient({
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}),
      service: "s3",
      region: options.region ?? "us-east-1",
    });
    const endpoint = new URL(options.endpoint);
    if (options.style === "virtual") {
      endpoint.hostname = `${options.bucket}.${endpoint.hostname}`;
      this.#base = endpoint.href.replace(/\/$/, "");
    } else {
      this.#base = `${endpoint.href.replace(/\/$/, "")}/${
        encodeURIComponent(options.bucket)
      }`;
    }
    this.#prefix = options.prefix ?? "";
  }

  /**
   * The object URL of a package.
   *
   * @param digest The package's digest.
   * @returns Its URL.
   */
  urlOf(digest: string): string {
    return `${this.#base}/${this.#prefix}${packageKey(digest)}`;
  }

  /**
   * Uploads a package; the signed payload hash is its digest, so a
   * verifying service refuses other bytes.
   *
   * @param digest The package's digest.
   * @param body The bytes, or `{ path }` of a file.
   */
  async put(digest: string, body: PackageBody): Promise<void> {
    checkDigest(digest);
    let data: BodyInit;
    let size: number;
    if (body instanceof Uint8Array) {
      data = body as Uint8Array<ArrayBuffer>;
      size = body.byteLength;
    } else {
      const file = await Deno.open(body.path);
      size = (await file.stat()).size;
      data = file.readable;
    }
    const response = await this.#client.fetch(this.urlOf(digest), {
      method: "PUT",
      body: data,
      headers: {
        "content-length": String(size),
        "content-type": "application/octet-stream",
        "x-amz-content-sha256": digest.slice("sha256:".length),
      },
    });
    await this.#check(response, `Cannot put package ${digest}`);
  }

  /**
   * Downloads a package as a stream.
   *
   * @param digest The package's digest.
   * @returns Its bytes.
   * @throws {Deno.errors.NotFound} No such package.
   * @throws {Deno.errors.PermissionDenied} The credentials were refused.
   */
  async open(digest: string): Promise<ReadableStream<Uint8Array>> {
    const response = await this.#client.fetch(this.urlOf(digest));
    await this.#check(response, `Cannot open package ${digest}`, true);
    return response.body!;
  }

  /**
   * Removes a package (a missing one is no error).
   *
   * @param digest The package's digest.
   */
  async delete(digest: string): Promise<void> {
    const response = await this.#client.fetch(this.urlOf(digest), {
      method: "DELETE",
    });
    if (response.status === 404) {
      await response.body?.cancel();
      return;
    }
    await this.#check(response, `Cannot delete package ${digest}`);
  }

  /**
   * Lists the packages (ListObjectsV2, every page).
   *
   * @returns Every package with its size, sorted by digest.
   */
  async list(): Promise<StoredPackage[]> {
    const out: StoredPackage[] = [];
    let token: string | undefined;
    do {
      const url = new URL(`${this.#base}/`);
      url.searchParams.set("list-type", "2");
      if (this.#prefix) url.searchParams.set("prefix", this.#prefix);
      if (token) url.searchParams.set("continuation-token", token);
      const response = await this.#client.fetch(url.href);
      await this.#check(response, "Cannot list the packages", true);
      const xml = await response.text();
      for (
        const [, body] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)
      ) {
        const key = xmlValue(body!, "Key");
        const digest = key?.startsWith(this.#prefix)
          ? digestOfKey(key.slice(this.#prefix.length))
          : undefined;
        if (digest) out.push({ digest, size: Number(xmlValue(body!, "Size")) });
      }
      token = xmlValue(xml, "IsTruncated") === "true"
        ? xmlValue(xml, "NextContinuationToken")
        : undefined;
    } while (token);
    return out.sort((a, b) => a.digest < b.digest ? -1 : 1);
  }

  async #check(response: Response, what: string, keepBody = false) {
    if (response.ok) {
      if (!keepBody) await response.body?.cancel();
      return;
    }
    const text = await response.text().catch(() => "");
    const code = xmlValue(text, "Code") ?? "";
    throw storeError(what, response.status, code);
  }
}

function xmlValue(xml: string, tag: string): string | undefined {
  const match = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  if (!match) return undefined;
  return match[1]!
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'")
    .replaceAll("&amp;", "&");
}
