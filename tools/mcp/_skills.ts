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
import { DIGEST_META_KEY, SkillDigests } from "./_skill_digests.ts";
import { McpRequestError } from "./_protocol.ts";
import {
  CACHE_FIELDS,
  decodeCursor,
  DIRECTORY_MIME_TYPE,
  encodeCursor,
  recordRead,
  type SkillEntry,
  skillEntry,
  SKILLS_PAGE_SIZE,
} from "./_skills_extension.ts";

/** The default largest skill file `resources/read` returns: 4 MiB. */
export const DEFAULT_MAX_RESOURCE_BYTES = 4 * 1024 * 1024;

/** Resources listed per page of `resources/list` (and prompts of `prompts/list`). */
const PAGE_SIZE = 500;

/**
 * JSON-RPC's invalid params: also what the skills extension (and the base
 * Resources specification) answers for a skill, file or folder not served.
 */
const INVALID_PARAMS = -32602;

/** What serving skills as prompts and resources needs. */
export interface SkillCatalogOptions {
  /** The largest file `resources/read` returns; default 4 MiB. */
  readonly maxResourceBytes?: number;
  /** Which files are offered; default the copy policy's defaults. */
  readonly copyPolicy?: CopyPolicy;
  /** Whether a `skill` tool is served beside them (the prompt then names it). */
  readonly hasSkillTool?: boolean;
  /**
   * Called once per skill the skills extension does not serve (a name that
   * breaks the naming rules, over 512 files or 16 MiB...), with why.
   */
  readonly onWarning?: (message: string) => void;
}

export { McpRequestError };

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
  readonly #onWarning: ((message: string) => void) | undefined;
  readonly #warned = new Set<string>();

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
    this.#digests = new SkillDigests();
    this.#onWarning = options.onWarning;
  }

  /**
   * `skills/list` (the skills extension): the skills by name, a page at a
   * time (a cursor names the last skill of the previous page), each a
   * complete manifest; skills the extension does not serve are left out
   * with a warning.
   */
  async listSkills(
    cursor: string | undefined,
    signal?: AbortSignal,
  ): Promise<
    { skills: SkillEntry[]; nextCursor?: string } & typeof CACHE_FIELDS
  > {
    let after: string | undefined;
    if (cursor !== undefined) {
      after = typeof cursor === "string" ? decodeCursor(cursor) : undefined;
      if (after === undefined) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot list skills from cursor ${
            JSON.stringify(cursor)
          }: not a cursor this server gave`,
        );
      }
    }
    const names = [...this.#skills.keys()].sort();
    const skills: SkillEntry[] = [];
    let index = after === undefined ? 0 : names.findIndex((n) => n > after!);
    if (index === -1) index = names.length;
    let last: string | undefined;
    for (; index < names.length; index++) {
      if (skills.length === SKILLS_PAGE_SIZE) {
        return { skills, nextCursor: encodeCursor(last!), ...CACHE_FIELDS };
      }
      const name = names[index]!;
      const entry = await this.#entry(this.#skills.get(name)!, signal);
      last = name;
      if (entry) skills.push(entry);
    }
    return { skills, ...CACHE_FIELDS };
  }

  /** `skills/get` (the skills extension): one skill by its SKILL.md's URI. */
  async getSkill(
    uri: unknown,
  ): Promise<{ skill: SkillEntry } & typeof CACHE_FIELDS> {
    if (typeof uri !== "string") {
      throw new McpRequestError(
        INVALID_PARAMS,
        `skills/get needs params.uri, the URI of a skill's SKILL.md (skill://<name>/SKILL.md)`,
      );
    }
    const parsed = /^skill:\/\/([^/?#]+)\/SKILL\.md$/.exec(uri);
    let name: string | undefined;
    try {
      name = parsed ? decodeURIComponent(parsed[1]!) : undefined;
    } catch {
      name = undefined;
    }
    const skill = name === undefined ? undefined : this.#skills.get(name);
    const entry = skill === undefined ? undefined : await this.#entry(skill);
    if (entry === undefined) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `No skill is served at ${uri}: expected skill://<name>/SKILL.md of ${this.#names()}`,
      );
    }
    return { skill: entry, ...CACHE_FIELDS };
  }

  /** The entry of a skill, or `undefined` (with a warning) when not served. */
  async #entry(
    skill: Skill,
    signal?: AbortSignal,
  ): Promise<SkillEntry | undefined> {
    const result = await skillEntry(
      skill,
      skillResourceUri,
      this.#policy,
      signal,
    );
    if (result.ok) return result.entry;
    const message =
      `Not serving skill "${skill.name}" (${skill.basePath}) over the MCP skills extension: ${result.reason}`;
    if (!this.#warned.has(message)) {
      this.#warned.add(message);
      this.#onWarning?.(message);
    }
    return undefined;
  }

  /**
   * `resources/directory/read` (the skills extension): the direct children
   * of a skill's folder (`skill://<name>`) or of a folder in it, files as
   * the copy policy lets them through (symlinks left out), folders as
   * `inode/directory`; by pages of 500.
   */
  async readDirectory(
    uri: unknown,
    cursor: string | undefined,
  ): Promise<
    {
      resources: {
        uri: string;
        name: string;
        mimeType?: string;
        size?: number;
      }[];
      nextCursor?: string;
    } & typeof CACHE_FIELDS
  > {
    const notDirectory = () =>
      new McpRequestError(
        INVALID_PARAMS,
        `${
          typeof uri === "string" ? uri : JSON.stringify(uri)
        } is not a directory resource`,
      );
    if (typeof uri !== "string") {
      throw new McpRequestError(
        INVALID_PARAMS,
        `resources/directory/read needs params.uri, the URI of a directory resource`,
      );
    }
    const match = /^skill:\/\/([^/?#]+)(?:\/([^?#]*))?$/.exec(uri);
    if (!match) throw notDirectory();
    let name: string;
    let segments: string[];
    try {
      name = decodeURIComponent(match[1]!);
      segments = (match[2] ?? "") === ""
        ? []
        : match[2]!.split("/").map(decodeURIComponent);
    } catch {
      throw notDirectory();
    }
    if (
      segments.some((s) =>
        s === "" || s === "." || s === ".." || /[\\\0]/.test(s)
      )
    ) {
      throw notDirectory();
    }
    const skill = this.#skills.get(name);
    if (skill === undefined) throw notDirectory();
    const relative = segments.join("/");
    if (
      relative !== "" && isExcluded(relative, this.#policy, { directory: true })
    ) {
      throw notDirectory();
    }
    let start = 0;
    if (cursor !== undefined) {
      start = Number(cursor);
      if (!/^\d+$/.test(String(cursor)) || !Number.isSafeInteger(start)) {
        throw new McpRequestError(
          INVALID_PARAMS,
          `Cannot read ${uri} from cursor ${
            JSON.stringify(cursor)
          }: not a cursor this server gave`,
        );
      }
    }
    const fence = await this.#fence(skill);
    const folder = relative === ""
      ? fence.root
      : hostPath.join(fence.root, relative);
    let entries: Deno.DirEntry[];
    try {
      // No symlink on the way: the lexical path must be the real one.
      if (relative !== "" && (await Deno.realPath(folder)) !== folder) {
        throw notDirectory();
      }
      entries = await Array.fromAsync(Deno.readDir(folder));
    } catch (error) {
      if (error instanceof McpRequestError) throw error;
      throw notDirectory();
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const children: {
      uri: string;
      name: string;
      mimeType?: string;
      size?: number;
    }[] = [];
    for (const entry of entries) {
      if (entry.isSymlink || (!entry.isFile && !entry.isDirectory)) continue;
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (isExcluded(path, this.#policy, { directory: entry.isDirectory })) {
        continue;
      }
      const childUri = skillResourceUri(skill.name, path);
      if (entry.isDirectory) {
        children.push({
          uri: childUri,
          name: entry.name,
          mimeType: DIRECTORY_MIME_TYPE,
        });
      } else {
        const mimeType = mimeTypeOf(path);
        children.push({
          uri: childUri,
          name: entry.name,
          ...(mimeType ? { mimeType } : {}),
        });
      }
    }
    const page = children.slice(start, start + PAGE_SIZE);
    return {
      resources: page,
      ...(start + PAGE_SIZE < children.length
        ? { nextCursor: String(start + PAGE_SIZE) }
        : {}),
      ...CACHE_FIELDS,
    };
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
          // SKILL.md is named as the skill (the extension's resource metadata).
          name: file.relativePath === "SKILL.md"
            ? skill.name
            : `${skill.name}/${file.relativePath}`,
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
  async readResource(
    uri: string,
  ): Promise<{ contents: ResourceContents[] } & typeof CACHE_FIELDS> {
    const { skill: name, path } = parseUri(uri);
    const skill = this.#skills.get(name);
    if (skill === undefined) {
      throw new McpRequestError(
        INVALID_PARAMS,
        `Cannot read "${uri}": no skill is named "${name}" (available: ${this.#names()})`,
      );
    }
    if (isExcluded(path, this.#policy)) {
      throw new McpRequestError(
        INVALID_PARAMS,
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
      const opened = await file.stat();
      const bytes = await readAtMost(file, this.#maxBytes);
      if (bytes === undefined) throw this.#tooLarge(uri);
      await this.#digests.check(skill, path, bytes);
      // The skills extension's manifest then describes these very bytes.
      recordRead(target, opened, bytes);
      const mimeType = mimeTypeOf(path);
      const text = decodeText(bytes);
      return {
        contents: [
          text === undefined
            ? { uri, ...(mimeType ? { mimeType } : {}), blob: base64(bytes) }
            : { uri, mimeType: mimeType ?? "text/plain", text },
        ],
        ...CACHE_FIELDS,
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
        INVALID_PARAMS,
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
