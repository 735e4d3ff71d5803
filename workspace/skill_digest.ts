/**
 * The digest of a skill as it would be uploaded (its files and its
 * configuration): what a conversation's record keeps of each prepared skill,
 * so that an unchanged skill is not prepared again.
 *
 * @module
 */
import { type CopyPolicy, walkSkillFiles } from "./copy.ts";

/**
 * What {@linkcode skillDigest} hashes of a skill's configuration: the shape of
 * `SkillRuntimeConfig` (environment and bootstrap commands).
 */
export interface SkillDigestConfig {
  /** Environment variables (their values are hashed, never stored). */
  readonly env: Readonly<Record<string, string>>;
  /** Bootstrap commands in order. */
  readonly bootstrap: readonly {
    readonly command: string;
    readonly timeoutMs: number;
  }[];
}

/** Options of {@linkcode skillDigest}. */
export interface SkillDigestOptions {
  /** The skill's configuration (`SkillRuntimeConfig`), when it has one. */
  readonly config?: SkillDigestConfig | undefined;
  /** The copy policy the upload uses (same files hashed as uploaded). */
  readonly policy?: CopyPolicy | undefined;
  /** Stops the walk. */
  readonly signal?: AbortSignal | undefined;
}

/** Files hashed at once. */
const HASH_CONCURRENCY = 8;
/** Bytes hashed per piece of a large file. */
const HASH_PIECE = 4 * 1024 * 1024;

/**
 * The digest of a skill as it would be uploaded: its files, walked with the
 * copy policy of `walkSkillFiles` (the same files an upload sends), each with
 * its path, size, executable bit and a SHA-256 of its content, and its
 * configuration's environment (names and values) and bootstrap commands. Any
 * change of what an upload or a bootstrap would do changes the digest;
 * nothing else does (times, excluded files, symlinks). Values appear only
 * inside a SHA-256, never in clear.
 *
 * Large files are hashed in 4 MiB pieces (memory stays bounded).
 *
 * Needs `--allow-read` for the skill's folder.
 *
 * @param basePath The skill's folder.
 * @param options The configuration, the copy policy, a signal.
 * @returns `sha256:` and 64 hex digits.
 * @throws {Deno.errors.NotFound} The folder does not exist.
 * @throws {Deno.errors.NotADirectory} The path is not a folder.
 *
 * @example A digest changes with the configuration
 * ```ts
 * import { assert } from "@std/assert";
 * import { skillDigest } from "./skill_digest.ts";
 * const skill = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${skill}/SKILL.md`, "---\nname: x\n---\n");
 *   const plain = await skillDigest(skill);
 *   const configured = await skillDigest(skill, {
 *     config: { env: { TOKEN: "s3cret" }, bootstrap: [] },
 *   });
 *   assert(/^sha256:[0-9a-f]{64}$/.test(plain) && plain !== configured);
 *   assert(!configured.includes("s3cret"));
 * } finally {
 *   await Deno.remove(skill, { recursive: true });
 * }
 * ```
 */
export async function skillDigest(
  basePath: string,
  options: SkillDigestOptions = {},
): Promise<string> {
  const { signal } = options;
  signal?.throwIfAborted();
  const lines: string[] = ["skillrun skill digest v1"];
  const pending: Promise<string>[] = [];
  let index = 0;
  // Hash a few files ahead of the walk; keep their order.
  const window: Promise<string>[] = [];
  for await (
    const file of walkSkillFiles(basePath, options.policy, {
      ...(signal ? { signal } : {}),
    })
  ) {
    const line = (async (): Promise<string> => {
      const hash = await hashFile(file.path, file.size, signal);
      return `file ${JSON.stringify(file.relativePath)} ${file.size} ${
        file.executable ? "x" : "-"
      } ${hash}`;
    })();
    // Hold the rejection until the line is awaited in order.
    line.catch(() => {});
    pending.push(line);
    window.push(line);
    if (window.length >= HASH_CONCURRENCY) await window.shift();
    index++;
  }
  for (const line of pending) lines.push(await line);
  lines.push(`files ${index}`);
  const config = options.config;
  if (config) {
    if (typeof config !== "object" || config === null) {
      throw new TypeError("Invalid skill configuration: expected an object");
    }
    for (const name of Object.keys(config.env).sort()) {
      lines.push(
        `env ${JSON.stringify(name)} ${await sha256Hex(config.env[name]!)}`,
      );
    }
    for (const step of config.bootstrap) {
      lines.push(
        `bootstrap ${step.timeoutMs} ${await sha256Hex(step.command)}`,
      );
    }
  }
  return `sha256:${await sha256Hex(lines.join("\n"))}`;
}

async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string"
    ? new TextEncoder().encode(data)
    : data;
  const digest = await crypto.subtle.digest(
    "SHA-256",
    bytes as Uint8Array<ArrayBuffer>,
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

/** SHA-256 of a file, or of its pieces' SHA-256s when it is large. */
async function hashFile(
  path: string,
  size: number,
  signal: AbortSignal | undefined,
): Promise<string> {
  if (size < HASH_PIECE) {
    const bytes = await Deno.readFile(path, signal ? { signal } : {});
    if (bytes.length < HASH_PIECE) return await sha256Hex(bytes);
  }
  using file = await Deno.open(path, { read: true });
  const pieces: string[] = [];
  const buffer = new Uint8Array(HASH_PIECE);
  while (true) {
    signal?.throwIfAborted();
    let length = 0;
    while (length < buffer.length) {
      const n = await file.read(buffer.subarray(length));
      if (n === null) break;
      length += n;
    }
    if (length > 0) pieces.push(await sha256Hex(buffer.subarray(0, length)));
    if (length < buffer.length) break;
  }
  return `pieces:${await sha256Hex(pieces.join(""))}`;
}
