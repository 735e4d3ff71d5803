// Skills as MCP prompts and resources: each skill's instructions as a prompt,
// each of its files as a resource `skill://<name>/<path>`, read from the
// skill's own folder (where it was loaded from) through the copy policy and a
// path fence, so secrets, symlinks and paths outside the folder stay out.
import { checkNumber } from "../../_internal/check_number.ts";
import { hostPath } from "../../_internal/std.ts";
import { WorkspaceEscapeError } from "../../runtimes/errors.ts";
import type { Skill } from "../../skill/types.ts";
import {
  type CopyPolicy,
  isExcluded,
  walkSkillFiles,
} from "../../workspace/copy.ts";
import { PathFence } from "../../workspace/fence.ts";
import {
  DIGEST_META_KEY,
  SkillDigests,
  type SkillEntry,
} from "./_skill_digests.ts";

/** The default largest skill file `resources/read` returns: 4 MiB. */
export const DEFAULT_MAX_RESOURCE_BYTES = 4 * 1024 * 1024;

/** Resources listed per page of `resources/list` (and prompts of `prompts/list`). */
const PAGE_SIZE = 500;

/** The JSON-RPC code for a resource that does not exist (MCP's own). */
const RESOURCE_NOT_FOUND = -32002;
/** JSON-RPC's invalid params. */
const INVALID_PARAMS = -32602;

/** What serving skills as prompts and resources needs. */
export interface SkillCatalogOptions {
  /** The largest file `resources/read` returns; default 4 MiB. */
  readonly maxResourceBytes?: number;
  /** Which files are offered; default the copy policy's defaults. */
  readonly copyPolicy?: CopyPolicy;
  /** Whether a `skill` tool is served beside them (the prompt then names it). */
  readonly hasSkillTool?: boolean;
}

/**
 * An error the SDK answers as a JSON-RPC error with this code and this
 * message (no prefix added on our side).
 */
export class McpRequestError extends Error {
  override readonly name = "McpRequestError";
  /** The JSON-RPC error code. */
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** The URI of a skill's file: `skill://<name>/<path>`, each part percent-encoded. */
export function skillResourceUri(skill: string, relativePath: string): string {
  return `skill://${encodeURIComponent(skill)}/${
    relativePath.split("/").map(encodeURIComponent).join("/")
  }`;
}

/** The template of every skill file's URI (RFC 6570). */
export const SKILL_RESOURCE_TEMPLATE = "skill://{skill}/{+path}";

interface ParsedUri {
  readonly skill: string;
  readonly path: string;
}

function parseUri(uri: string): ParsedUri {
  const match = /^skill:\/\/([^/?#]+)\/([^?#]+)$/.exec(uri);
  if (!match) {
    throw new McpRequestError(
      INVALID_PARAMS,
      `Cannot read "${uri}": expected a URI of the form skill://<skill>/<path>`,
    );
  }
  let skill: string;
  let segments: string[];
  try {
    skill = decodeURIComponent(match[1]!);
    segments = match[2]!.split("/").map(decodeURIComponent);
  } catch {
    throw new McpRequestError(
      INVALID_PARAMS,
      `Cannot read "${uri}": the URI has an invalid percent-encoding`,
    );
  }
  for (const segment of segments) {
    if (
      segment === "" || segment === "." || segment === ".." ||
      /[/\\\0]/.test(segment)
    ) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `Cannot read "${uri}": the path must name a file inside the skill folder`,
      );
    }
  }
  return { skill, path: segments.join("/") };
}

// Our own table, not @std/media-types: skills hold scripts, and std names
// `.ts` video/mp2t and knows no `.py`.
const MIME_TYPES: Readonly<Record<string, string>> = {
  md: "text/markdown",
  markdown: "text/markdown",
  txt: "text/plain",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  xml: "application/xml",
  json: "application/json",
  yaml: "application/yaml",
  yml: "application/yaml",
  toml: "application/toml",
  js: "text/javascript",
  mjs: "text/javascript",
  ts: "text/x-typescript",
  py: "text/x-python",
  sh: "text/x-shellscript",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  ttf: "font/ttf",
  otf: "font/otf",
  woff: "font/woff",
  woff2: "font/woff2",
};

function mimeTypeOf(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return dot > 0 ? MIME_TYPES[name.slice(dot + 1).toLowerCase()] : undefined;
}

function formatMiB(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** One prompt as `prompts/list` shows it. */
export interface PromptEntry {
  name: string;
  description: string;
  arguments: { name: string; description: string; required: boolean }[];
}

/** One resource as `resources/list` shows it. */
export interface ResourceEntry {
  uri: string;
  name: string;
  description?: string;
  mimeType?: string;
  size: number;
  /** The file's SHA-256, for installed skill packages. */
  _meta?: Record<string, string>;
}

/** The contents `resources/read` returns for one file. */
export type ResourceContents =
  | { uri: string; mimeType?: string; text: string }
  | { uri: string; mimeType?: string; blob: string };

/** Skills served as MCP prompts and resources. */
export class SkillCatalog {
  readonly #skills: ReadonlyMap<string, Skill>;
  readonly #maxBytes: number;
  readonly #policy: CopyPolicy | undefined;
  readonly #hasSkillTool: boolean;
  readonly #fences = new Map<string, Promise<PathFence>>();
  readonly #digests: SkillDigests;

  constructor(skills: readonly Skill[], options: SkillCatalogOptions = {}) {
    const maxBytes = checkNumber(
      options.maxResourceBytes ?? DEFAULT_MAX_RESOURCE_BYTES,
      "maxResourceBytes",
      "positive integer",
    );
    this.#skills = new Map(skills.map((skill) => [skill.name, skill]));
    this.#maxBytes = maxBytes;
    this.#policy = options.copyPolicy;
    this.#hasSkillTool = options.hasSkillTool ?? false;
    this.#digests = new SkillDigests(options.copyPolicy);
  }

  /** `skills/list` (draft skills extension): every skill with its files' digests. */
  async listSkills(signal?: AbortSignal): Promise<{ skills: SkillEntry[] }> {
    const skills: SkillEntry[] = [];
    for (const skill of this.#skills.values()) {
      skills.push(await this.#digests.entry(skill, skillResourceUri, signal));
    }
    return { skills };
  }

  /** `skills/get` (draft skills extension): one skill by its SKILL.md's URI. */
  async getSkill(uri: string): Promise<{ skill: SkillEntry }> {
    const parsed = /^skill:\/\/([^/?#]+)\/SKILL\.md$/.exec(uri);
    let name: string | undefined;
    try {
      name = parsed ? decodeURIComponent(parsed[1]!) : undefined;
    } catch {
      name = undefined;
    }
    const skill = name === undefined ? undefined : this.#skills.get(name);
    if (skill === undefined) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `Unknown skill "${uri}": expected skill://<name>/SKILL.md of ${this.#names()}`,
      );
    }
    return { skill: await this.#digests.entry(skill, skillResourceUri) };
  }

  /** `prompts/list`: one prompt per skill, named as the skill, by pages of 500. */
  listPrompts(
    cursor?: string,
  ): { prompts: PromptEntry[]; nextCursor?: string } {
    const start = cursor === undefined ? 0 : Number(cursor);
    if (
      cursor !== undefined &&
      (!/^\d+$/.test(cursor) || !Number.isSafeInteger(start))
    ) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `Cannot list prompts from cursor "${cursor}": not a cursor this server gave`,
      );
    }
    const skills = [...this.#skills.values()];
    const end = start + PAGE_SIZE;
    return {
      prompts: skills.slice(start, end).map((skill) => ({
        name: skill.name,
        description: skill.description,
        arguments: [{
          name: "task",
          description:
            "What to do with the skill (added after its instructions)",
          required: false,
        }],
      })),
      ...(end < skills.length ? { nextCursor: String(end) } : {}),
    };
  }

  /** `prompts/get`: the skill's instructions as one user message. */
  getPrompt(
    name: string,
    args: Readonly<Record<string, string>> | undefined,
  ): {
    description: string;
    messages: { role: "user"; content: { type: "text"; text: string } }[];
  } {
    const skill = this.#skills.get(name);
    if (skill === undefined) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `Unknown prompt "${name}": available prompts are ${this.#names()}`,
      );
    }
    const parts = [
      `Use the skill "${skill.name}": ${skill.description}`,
      "",
      `<skill_instructions name="${skill.name}">`,
      skill.instructions.trim(),
      "</skill_instructions>",
      "",
    ];
    if (this.#hasSkillTool) {
      parts.push(
        `Call the skill tool with the name "${skill.name}" before following these instructions: ` +
          "it prepares the skill and gives the base directory that the paths in them are relative to.",
      );
    }
    parts.push(
      `The skill's files can also be read as resources under ${
        skillResourceUri(skill.name, "")
      }.`,
    );
    const task = args?.task?.trim();
    if (task) parts.push("", `Task: ${task}`);
    return {
      description: skill.description,
      messages: [{
        role: "user",
        content: { type: "text", text: parts.join("\n") },
      }],
    };
  }

  /** `resources/templates/list`: the one template of skill files. */
  listResourceTemplates(): {
    resourceTemplates: {
      uriTemplate: string;
      name: string;
      description: string;
    }[];
  } {
    return {
      resourceTemplates: [{
        uriTemplate: SKILL_RESOURCE_TEMPLATE,
        name: "skill-file",
        description:
          `A file of a skill, by the skill's name and the file's path in its folder (skills: ${this.#names()})`,
      }],
    };
  }

  /**
   * `resources/list`: every file of every skill that the copy policy lets
   * through (symlinks skipped), by pages of 500.
   */
  async listResources(
    cursor: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ resources: ResourceEntry[]; nextCursor?: string }> {
    let start = 0;
    if (cursor !== undefined) {
      start = Number(cursor);
      if (!/^\d+$/.test(cursor) || !Number.isSafeInteger(start)) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot list resources from cursor "${cursor}": not a cursor this server gave`,
        );
      }
    }
    const resources: ResourceEntry[] = [];
    let index = 0;
    for (const skill of this.#skills.values()) {
      const installed = await this.#digests.installed(skill);
      for await (
        const file of walkSkillFiles(
          skill.basePath,
          this.#policy,
          signal ? { signal } : {},
        )
      ) {
        if (index++ < start) continue;
        if (resources.length === PAGE_SIZE) {
          return { resources, nextCursor: String(start + PAGE_SIZE) };
        }
        const mimeType = mimeTypeOf(file.relativePath);
        resources.push({
          uri: skillResourceUri(skill.name, file.relativePath),
          name: `${skill.name}/${file.relativePath}`,
          ...(file.relativePath === "SKILL.md"
            ? { description: skill.description }
            : {}),
          ...(mimeType ? { mimeType } : {}),
          size: file.size,
          ...(installed?.has(file.relativePath)
            ? {
              _meta: { [DIGEST_META_KEY]: installed.get(file.relativePath)! },
            }
            : {}),
        });
      }
    }
    return { resources };
  }

  /**
   * `resources/read`: one file, as text when it is UTF-8 without NUL bytes,
   * else as base64; refused when excluded by the policy, outside the skill's
   * folder, reached through a symlink (never followed, as by the copy
   * policy) or over the size limit.
   */
  async readResource(uri: string): Promise<{ contents: ResourceContents[] }> {
    const { skill: name, path } = parseUri(uri);
    const skill = this.#skills.get(name);
    if (skill === undefined) {
      throw new McpRequestError(
        RESOURCE_NOT_FOUND,
        `Cannot read "${uri}": no skill is named "${name}" (available: ${this.#names()})`,
      );
    }
    if (isExcluded(path, this.#policy)) {
      throw new McpRequestError(
        RESOURCE_NOT_FOUND,
        `Cannot read "${uri}": the copy policy excludes this file`,
      );
    }
    let target: string;
    try {
      target = await (await this.#fence(skill)).resolve(path);
    } catch (error) {
      if (error instanceof WorkspaceEscapeError) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot read "${uri}": the path leads outside the skill folder`,
        );
      }
      throw this.#failure(uri, error);
    }
    let file: Deno.FsFile | undefined;
    try {
      // As the copy policy: no symlink is followed, even one that stays inside.
      const lexical = hostPath.join((await this.#fence(skill)).root, path);
      if ((await Deno.realPath(target)) !== lexical) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot read "${uri}": the path goes through a symbolic link, which skills' resources never follow`,
        );
      }
      const info = await Deno.lstat(target);
      if (!info.isFile) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot read "${uri}": it is not a file`,
        );
      }
      if (info.size > this.#maxBytes) throw this.#tooLarge(uri);
      file = await Deno.open(target, { read: true });
      const bytes = await readAtMost(file, this.#maxBytes);
      if (bytes === undefined) throw this.#tooLarge(uri);
      await this.#digests.check(skill, path, bytes);
      const mimeType = mimeTypeOf(path);
      const text = decodeText(bytes);
      return {
        contents: [
          text === undefined
            ? { uri, ...(mimeType ? { mimeType } : {}), blob: base64(bytes) }
            : { uri, mimeType: mimeType ?? "text/plain", text },
        ],
      };
    } catch (error) {
      throw this.#failure(uri, error);
    } finally {
      file?.close();
    }
  }

  #tooLarge(uri: string): McpRequestError {
    return new McpRequestError(
      INVALID_PARAMS,
      `Cannot read "${uri}": the file is larger than the ${
        formatMiB(this.#maxBytes)
      } limit`,
    );
  }

  #failure(uri: string, error: unknown): McpRequestError {
    if (error instanceof McpRequestError) return error;
    if (error instanceof Deno.errors.NotFound) {
      return new McpRequestError(
        RESOURCE_NOT_FOUND,
        `Cannot read "${uri}": no such file`,
      );
    }
    return new McpRequestError(
      -32603,
      `Cannot read "${uri}": ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }

  #fence(skill: Skill): Promise<PathFence> {
    let fence = this.#fences.get(skill.name);
    if (fence === undefined) {
      fence = PathFence.create(skill.basePath);
      // A failure is not kept: the next read tries again.
      fence.catch(() => this.#fences.delete(skill.name));
      this.#fences.set(skill.name, fence);
    }
    return fence;
  }

  #names(): string {
    return [...this.#skills.keys()].map((n) => `"${n}"`).join(", ") || "none";
  }
}

// Reads the whole file, or answers `undefined` once it holds more than `max`
// bytes (it may have grown since it was measured).
async function readAtMost(
  file: Deno.FsFile,
  max: number,
): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  while (true) {
    const n = await file.read(buffer);
    if (n === null) break;
    total += n;
    if (total > max) return undefined;
    chunks.push(buffer.slice(0, n));
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}
