/**
 * The implementation of {@linkcode loadMcpSkills} (see `skills_client.ts`),
 * loaded on the first call, so that importing `./mcp` does not load it.
 *
 * @module
 */
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ResultSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { hostPath } from "../../_internal/std.ts";
import { sha256Of } from "../../package/_digest.ts";
import { parseSkillMd } from "../../skill/parse.ts";
import type { McpTransport } from "./_server.ts";
import { SKILLS_EXTENSION } from "./_skill_digests.ts";
import {
  parseFrontmatter,
  SKILL_LIMITS,
  type SkillEntry,
} from "./_skills_extension.ts";
import {
  type LoadMcpSkillsOptions,
  type McpSkill,
  type McpSkills,
  SkillVerificationError,
} from "./skills_client.ts";

const NAME_RULE = /^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

function entryProblem(value: unknown): string | undefined {
  const entry = value as Partial<SkillEntry> | null;
  if (!entry || typeof entry.uri !== "string") return "it has no uri";
  if (!entry.uri.endsWith("/SKILL.md")) {
    return "its uri does not end in /SKILL.md";
  }
  const fm = entry.frontmatter as Record<string, unknown> | undefined;
  if (!fm || typeof fm !== "object" || Array.isArray(fm)) {
    return "it has no frontmatter object";
  }
  if (typeof fm.name !== "string" || !NAME_RULE.test(fm.name)) {
    return "its name breaks the Agent Skills naming rules";
  }
  const root = entry.uri.slice(0, -"/SKILL.md".length);
  if (root.slice(root.lastIndexOf("/") + 1) !== fm.name) {
    return "its uri's last segment is not its name";
  }
  if (typeof fm.description !== "string" || fm.description === "") {
    return "it has no description";
  }
  if (entry.resources === ("dynamic" as unknown)) {
    return `its resources are "dynamic": no content can be verified`;
  }
  if (!Array.isArray(entry.resources)) return "it has no resources manifest";
  if (entry.resources.length > SKILL_LIMITS.files) {
    return `it has more than ${SKILL_LIMITS.files} files`;
  }
  let total = 0;
  const seen = new Set<string>();
  for (const resource of entry.resources) {
    if (
      typeof resource?.uri !== "string" || !DIGEST.test(resource.digest) ||
      !Number.isSafeInteger(resource.size) || resource.size < 0
    ) return "a resource lacks a uri, a sha256 digest or a size";
    if (resource.uri !== entry.uri && !resource.uri.startsWith(`${root}/`)) {
      return `the resource ${resource.uri} is outside the skill`;
    }
    if (seen.has(resource.uri)) return `${resource.uri} is listed twice`;
    seen.add(resource.uri);
    total += resource.size;
  }
  if (!seen.has(entry.uri)) return "its manifest does not list its SKILL.md";
  if (total > SKILL_LIMITS.bytes) return "its files total over 16 MiB";
  return undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === "object"
      ? Object.fromEntries(
        Object.keys(value).sort().map((
          key,
        ) => [key, canonical((value as Record<string, unknown>)[key])]),
      )
      : value;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** A path segment safe in a file name, and reversible. */
function segment(text: string): string {
  return encodeURIComponent(text).replaceAll(".", "%2E");
}

/** See {@linkcode loadMcpSkills} in `skills_client.ts`. */
export async function loadMcpSkills(
  transport: McpTransport,
  options: LoadMcpSkillsOptions,
): Promise<McpSkills> {
  if (typeof options?.server !== "string" || options.server.trim() === "") {
    throw new TypeError(
      `Cannot load MCP skills: options.server must name the server (the application's own label)`,
    );
  }
  const server = options.server;
  const cacheDir = options.cacheDir ??
    await Deno.makeTempDir({ prefix: "skillrun-mcp-skills-" });
  // The SDK's client, loaded by the first call (not by importing ./mcp).
  const { Client } = await import(
    "npm:@modelcontextprotocol/sdk@1.32.2/client"
  );
  const client = new Client({ name: "skillrun", version: "1" });
  await client.connect(transport as unknown as Transport);
  const request = async (
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> =>
    await client.request(
      { method, params },
      ResultSchema.passthrough(),
      options.signal ? { signal: options.signal } : {},
    ) as Record<string, unknown>;
  const warnings: string[] = [];
  const skills: McpSkill[] = [];
  const entries = new Map<McpSkill, SkillEntry>();
  const close = async () => await client.close();
  try {
    const capabilities = client.getServerCapabilities() as
      | { extensions?: Record<string, unknown> }
      | undefined;
    if (capabilities?.extensions?.[SKILLS_EXTENSION] === undefined) {
      warnings.push(
        `The MCP server "${server}" does not serve the skills extension (${SKILLS_EXTENSION})`,
      );
    } else {
      const listed: SkillEntry[] = [];
      let cursor: string | undefined;
      const cursors = new Set<string>();
      do {
        const page = await request("skills/list", cursor ? { cursor } : {});
        listed.push(...(Array.isArray(page.skills) ? page.skills : []));
        cursor = typeof page.nextCursor === "string" && page.nextCursor !== ""
          ? page.nextCursor
          : undefined;
        if (cursor !== undefined && cursors.has(cursor)) break;
        if (cursor !== undefined) cursors.add(cursor);
      } while (cursor !== undefined);
      const names = new Map<string, string>();
      for (const entry of listed) {
        const problem = entryProblem(entry);
        const uri = typeof entry?.uri === "string" ? entry.uri : "(no uri)";
        if (problem) {
          warnings.push(`Skipped the skill ${uri} of "${server}": ${problem}`);
          continue;
        }
        const name = entry.frontmatter.name as string;
        const other = names.get(name);
        if (other !== undefined) {
          warnings.push(
            `Skipped the skill ${uri} of "${server}": the name "${name}" is already used by ${other} of the same server`,
          );
          continue;
        }
        try {
          const skill = await loadOne(entry);
          names.set(name, uri);
          skills.push(skill);
          entries.set(skill, entry);
        } catch (error) {
          warnings.push(
            `Skipped the skill ${uri} of "${server}": ${
              error instanceof Error ? error.message : String(error)
            }`,
          );
        }
      }
    }
  } catch (error) {
    await close();
    throw error;
  }

  function folderOf(uri: string): string {
    const scheme = uri.indexOf("://");
    const path = uri.slice(scheme + 3, -"/SKILL.md".length).split("/");
    return hostPath.join(
      cacheDir,
      segment(server),
      segment(uri.slice(0, scheme)),
      ...path.map(segment),
    );
  }

  /** Fetches one listed file, verifies it and writes it into the cache. */
  async function fetchFile(
    entry: SkillEntry,
    uri: string,
  ): Promise<Uint8Array> {
    const listed = entry.resources.find((r) => r.uri === uri);
    if (listed === undefined) {
      throw new SkillVerificationError(
        `${uri} is not listed in the held entry of ${entry.uri}`,
      );
    }
    const result = await request("resources/read", { uri });
    const content = (result.contents as Record<string, unknown>[] | undefined)
      ?.find((c) => c.uri === uri) ??
      (result.contents as Record<string, unknown>[] | undefined)?.[0];
    let bytes: Uint8Array;
    if (typeof content?.text === "string") {
      bytes = new TextEncoder().encode(content.text);
    } else if (typeof content?.blob === "string") {
      bytes = Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0));
    } else {
      throw new SkillVerificationError(`${uri} came without content`);
    }
    if (bytes.length !== listed.size) {
      throw new SkillVerificationError(
        `${uri} has ${bytes.length} bytes, the entry says ${listed.size}`,
      );
    }
    if (sha256Of(bytes) !== listed.digest) {
      throw new SkillVerificationError(
        `${uri} does not match its digest ${listed.digest}`,
      );
    }
    const root = entry.uri.slice(0, -"/SKILL.md".length);
    const relative = uri === entry.uri
      ? "SKILL.md"
      : uri.slice(root.length + 1);
    const segments = relative.split("/").map((s) => {
      const decoded = decodeURIComponent(s);
      if (
        decoded === "" || decoded === "." || decoded === ".." ||
        /[/\\\0]/.test(decoded)
      ) {
        throw new SkillVerificationError(`${uri}: not a path inside the skill`);
      }
      return decoded;
    });
    const target = hostPath.join(folderOf(entry.uri), ...segments);
    await Deno.mkdir(hostPath.dirname(target), { recursive: true });
    await Deno.writeFile(target, bytes);
    return bytes;
  }

  async function loadOne(entry: SkillEntry): Promise<McpSkill> {
    const bytes = await fetchFile(entry, entry.uri);
    const typed = parseFrontmatter(bytes);
    if (typed instanceof Error) throw new SkillVerificationError(typed.message);
    if (!sameJson(typed, entry.frontmatter)) {
      throw new SkillVerificationError(
        `the front matter of ${entry.uri} differs from its entry's`,
      );
    }
    const doc = parseSkillMd(new TextDecoder().decode(bytes));
    const basePath = folderOf(entry.uri);
    const skill: { -readonly [K in keyof McpSkill]: McpSkill[K] } = {
      name: entry.frontmatter.name as string,
      description: entry.frontmatter.description as string,
      basePath,
      location: hostPath.join(basePath, "SKILL.md"),
      instructions: doc.body,
      frontMatter: Object.freeze({ ...doc.frontMatter }),
      warnings: Object.freeze([...doc.warnings]),
      mcp: Object.freeze({ server, uri: entry.uri }),
    };
    if (doc.license !== undefined) skill.license = doc.license;
    if (doc.compatibility !== undefined) {
      skill.compatibility = doc.compatibility;
    }
    if (doc.metadata !== undefined) {
      skill.metadata = Object.freeze({ ...doc.metadata });
    }
    if (doc.allowedTools !== undefined) {
      if (options.allowedTools === true) {
        skill.allowedTools = Object.freeze([...doc.allowedTools]);
      } else {
        skill.warnings = Object.freeze([
          ...skill.warnings,
          `allowed-tools: not honoured for a skill from the MCP server "${server}" (allowedTools: true opts in)`,
        ]);
      }
    }
    return Object.freeze(skill);
  }

  const held = (skill: McpSkill): SkillEntry => {
    const entry = entries.get(skill);
    if (entry === undefined) {
      throw new TypeError(
        `Cannot fetch files of "${skill?.name}": not a skill of this loader`,
      );
    }
    return entry;
  };
  return Object.freeze({
    skills: Object.freeze(skills),
    warnings: Object.freeze(warnings),
    readFile: async (skill: McpSkill, path: string) => {
      const entry = held(skill);
      const root = entry.uri.slice(0, -"/SKILL.md".length);
      const uri = `${root}/${
        path.split("/").map(encodeURIComponent).join("/")
      }`;
      const listed = entry.resources.find((r) =>
        r.uri === uri || r.uri === `${root}/${path}`
      );
      return await fetchFile(entry, listed?.uri ?? uri);
    },
    fetchAll: async (skill: McpSkill) => {
      const entry = held(skill);
      for (const resource of entry.resources) {
        await fetchFile(entry, resource.uri);
      }
    },
    close,
    [Symbol.asyncDispose]: close,
  });
}
