/**
 * Incremental SHA-256 (`node:crypto`, which Deno and the edge runtimes that
 * run Deno code provide) and the `sha256:` digest form.
 *
 * @module
 */
import type { Hash } from "node:crypto";
import { PackageError } from "./errors.ts";

let nodeCrypto: typeof import("node:crypto") | undefined;

/**
 * `createHash` of `node:crypto`, loaded by the first hash rather than at
 * import: loading Node's modules costs every cold start (about 15 ms), and
 * `process.getBuiltinModule` loads one synchronously when first needed.
 */
function createHash(algorithm: "sha256"): Hash {
  nodeCrypto ??= process.getBuiltinModule(
    "node:crypto",
  ) as typeof import("node:crypto");
  return nodeCrypto.createHash(algorithm);
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** An incremental SHA-256. */
export class Sha256 {
  #hash: Hash = createHash("sha256");
  /** Adds bytes. */
  update(bytes: Uint8Array): void {
    this.#hash.update(bytes);
  }
  /** The digest as `sha256:<64 hex>`. */
  digest(): string {
    return `sha256:${this.#hash.digest("hex")}`;
  }
  /** The digest as 64 hex digits. */
  hex(): string {
    return this.#hash.digest("hex");
  }
}

/** The `sha256:` digest of bytes. */
export function sha256Of(bytes: Uint8Array | string): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** Whether a value is a `sha256:` digest with 64 lowercase hex digits. */
export function isDigest(value: unknown): value is string {
  return typeof value === "string" && DIGEST.test(value);
}

/** Checks a digest's form; throws a `TypeError` naming what is wrong. */
export function checkDigest(value: unknown, what = "digest"): string {
  if (!isDigest(value)) {
    throw new TypeError(
      `Cannot use ${what} ${
        JSON.stringify(value)
      }: it must be "sha256:" followed by 64 lowercase hex digits`,
    );
  }
  return value;
}

/**
 * A pass-through stream that hashes what goes through it; `digest` resolves
 * when the stream ends, and when `expected` is given, the end of the stream is
 * an error unless the digest matches (so a consumer never sees a clean end of
 * wrong bytes).
 */
export function hashingStream(expected?: string): {
  readonly stream: TransformStream<Uint8Array, Uint8Array>;
  readonly digest: Promise<string>;
  readonly bytes: () => number;
} {
  const hash = new Sha256();
  let count = 0;
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  promise.catch(() => {});
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      hash.update(chunk);
      count += chunk.byteLength;
      controller.enqueue(chunk);
    },
    flush() {
      const digest = hash.digest();
      if (expected !== undefined && digest !== expected) {
        const error = new PackageError(
          "digest-mismatch",
          `its digest is ${digest}, expected ${expected}`,
        );
        reject(error);
        throw error;
      }
      resolve(digest);
    },
    cancel(reason) {
      reject(reason);
    },
  });
  return { stream, digest: promise, bytes: () => count };
}
