/**
 * A client of the MCP Skills extension (SEP-2640, Final): skills taken from
 * any MCP server that serves them, for an agent to run. Listing reads the
 * entries only; loading a skill fetches its `SKILL.md`; its other files are
 * fetched when asked for. Every file is checked against the held entry (size
 * and SHA-256; the `SKILL.md`'s front matter against the entry's) and never
 * used when it fails. Skills are keyed by the server's label (given by the
 * application, not the server's own name) and their URI, and cached under a
 * folder that encodes both. Their `allowed-tools` are dropped unless the
 * application opts in.
 *
 * @module
 */
import type { Skill } from "../../skill/types.ts";
import type { McpTransport } from "./_server.ts";

/** Options of {@linkcode loadMcpSkills}. */
export interface LoadMcpSkillsOptions {
  /**
   * The application's own label for the server (its identity in keys and
   * cache paths; never the server's self-reported name). Required.
   */
  readonly server: string;
  /**
   * Where verified files are written, under `<cacheDir>/<server>/<skill
   * path>`; default a new temp folder. Keep it out of every folder skills
   * are discovered in.
   */
  readonly cacheDir?: string;
  /** Honour the skills' `allowed-tools` (default `false`: dropped). */
  readonly allowedTools?: boolean;
  /** Stops the loading. */
  readonly signal?: AbortSignal;
}

/** A skill taken from an MCP server: where it came from. */
export interface McpSkill extends Skill {
  /** The server's label and the skill's `SKILL.md` URI: its identity. */
  readonly mcp: { readonly server: string; readonly uri: string };
}

/** What {@linkcode loadMcpSkills} gives. */
export interface McpSkills extends AsyncDisposable {
  /** The skills, each with its `SKILL.md` fetched and verified. */
  readonly skills: readonly McpSkill[];
  /** What was left out and why. */
  readonly warnings: readonly string[];
  /**
   * Fetches one file of a skill (a path relative to its folder), verified
   * against the held entry, and writes it into the skill's folder.
   */
  readFile(skill: McpSkill, path: string): Promise<Uint8Array>;
  /** Fetches every file of a skill (verified) into its folder. */
  fetchAll(skill: McpSkill): Promise<void>;
  /** Closes the connection. */
  close(): Promise<void>;
}

/** A failed check of a file against the held entry: the file is not used. */
export class SkillVerificationError extends Error {
  /** The error's name. */
  override readonly name = "SkillVerificationError";
}

/**
 * Takes the skills an MCP server serves through the skills extension:
 * connects over `transport`, lists every page of `skills/list`, checks each
 * entry (naming rules, a complete manifest, the limits; `"dynamic"` skills
 * are left out), fetches and verifies each skill's `SKILL.md` and writes it
 * under `<cacheDir>/<server>/<skill path>`, the skill's `basePath`. Other
 * files come with `readFile` and `fetchAll`, verified too.
 *
 * Needs `--allow-write` and `--allow-read` of the cache folder (and what the
 * transport needs).
 *
 * @param transport An unstarted MCP client transport (stdio, HTTP...).
 * @param options The server's label, the cache folder, `allowedTools`.
 * @returns The skills, warnings, file fetching and `close`.
 * @throws {TypeError} `server` is missing or blank.
 *
 * @example Skills of a server over an in-memory connection
 * ```ts
 * import { assert } from "@std/assert";
 * import { connectMcpServer, loadMcpSkills } from "@skillrun/skillrun/mcp";
 * import { loadSkills } from "@skillrun/skillrun";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/hello`);
 * await Deno.writeTextFile(`${root}/hello/SKILL.md`, "---\nname: hello\ndescription: Says hello.\n---\nSay hello.\n");
 * const [client, server] = InMemoryTransport.createLinkedPair();
 * const connection = await connectMcpServer([], server, { skills: (await loadSkills(root)).skills });
 * await using remote = await loadMcpSkills(client, { server: "local" });
 * assert(remote.skills[0]!.instructions === "Say hello.\n");
 * await connection.close();
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function loadMcpSkills(
  transport: McpTransport,
  options: LoadMcpSkillsOptions,
): Promise<McpSkills> {
  // Loaded on first use: importing `./mcp` stays light.
  const { loadMcpSkills: load } = await import("./_skills_client.ts");
  return await load(transport, options);
}
