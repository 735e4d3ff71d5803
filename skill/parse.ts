/**
 * Lenient parsing of a `SKILL.md`: front matter (YAML) and Markdown body.
 *
 * @module
 */
import { parseYaml } from "../_internal/std.ts";
import { describeValue, splitAllowedTools } from "./_fields.ts";
import { parseSimpleYaml } from "./_simple_yaml.ts";

/** Options of {@linkcode parseSkillMd}. */
export interface ParseSkillMdOptions {
  /**
   * When the YAML cannot be read, retry once with every `key: value` line whose
   * unquoted value contains `": "` quoted as a string. Default `true`; strict
   * validation turns it off.
   */
  retryUnquotedColons?: boolean;
}

/** A parsed `SKILL.md`, its known fields normalised. */
export interface SkillDocument {
  /** The front matter as parsed (every scalar a string, empty values `null`). */
  readonly frontMatter: Readonly<Record<string, unknown>>;
  /** The Markdown body after the front matter, line endings turned into `\n`. */
  readonly body: string;
  /** `name`, trimmed and NFKC-normalised, when it is a string. */
  readonly name?: string;
  /** `description`, trimmed, when it is a string. */
  readonly description?: string;
  /** `license`, when it is a string. */
  readonly license?: string;
  /** `compatibility`, trimmed, when it is a string. */
  readonly compatibility?: string;
  /** `metadata`, every value turned into a string, when it is a map. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** `allowed-tools` split into tool names (from a string or a YAML list). */
  readonly allowedTools?: readonly string[];
  /** What parsing had to repair or ignore, e.g. a quoted value or a list as metadata. */
  readonly warnings: readonly string[];
}

const BOM = "\uFEFF";
const OPENING = /^(?:[ \t]*\n)*---[ \t]*\n/;
const CLOSING = /^---[ \t]*$/m;

/**
 * Parses the text of a `SKILL.md` leniently: strips a UTF-8 BOM, accepts CRLF
 * line endings, reads the `---` front matter as YAML with the failsafe schema
 * (so `version: 1.0` stays `"1.0"`), and when that fails retries once with
 * unquoted values containing `": "` quoted. Splits `allowed-tools` (a
 * space-separated string or a YAML list), turns `metadata` values into
 * strings and NFKC-normalises the name. It does not check the Agent Skills
 * rules: see `validateSkill` for that.
 *
 * Needs no permission.
 *
 * @param text The file's content.
 * @param options Whether to retry unreadable YAML.
 * @returns The front matter, the body and the normalised fields.
 * @throws {SyntaxError} There is no front matter, it is not closed, it is not a
 * map, its YAML cannot be read (even after the retry), or it uses an alias
 * (`*name`) of a map or list (which could expand exponentially).
 *
 * @example Parsing a SKILL.md with CRLF and an unquoted colon
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseSkillMd } from "./parse.ts";
 * const doc = parseSkillMd(
 *   "---\r\nname: csv-report\r\ndescription: Use when: a CSV needs a summary\r\n" +
 *     "metadata:\r\n  version: 1.0\r\n---\r\n# Steps\r\n",
 * );
 * assert(doc.description === "Use when: a CSV needs a summary");
 * assert(doc.metadata?.version === "1.0");
 * assert(doc.body === "# Steps\n");
 * ```
 */
export function parseSkillMd(
  text: string,
  options: ParseSkillMdOptions = {},
): SkillDocument {
  if (typeof text !== "string") {
    throw new TypeError(`Cannot parse SKILL.md: text must be a string`);
  }
  let source = text.startsWith(BOM) ? text.slice(1) : text;
  if (source.includes("\r")) source = source.replace(/\r\n?/g, "\n");
  const opening = OPENING.exec(source);
  if (!opening) {
    throw new SyntaxError(
      `Cannot parse SKILL.md: it has no "---" front matter`,
    );
  }
  const rest = source.slice(opening[0].length);
  const closing = CLOSING.exec(rest);
  if (!closing) {
    throw new SyntaxError(
      `Cannot parse SKILL.md: the front matter has no closing "---" line`,
    );
  }
  const yamlText = rest.slice(0, closing.index);
  let body = rest.slice(closing.index + closing[0].length);
  body = body.startsWith("\n") ? body.slice(1) : body;

  const warnings: string[] = [];
  let parsed: unknown;
  try {
    parsed = parseSimpleYaml(yamlText) ??
      parseYaml(yamlText, { schema: "failsafe" });
  } catch (error) {
    const repaired = options.retryUnquotedColons === false
      ? undefined
      : quoteUnquotedColons(yamlText);
    if (!repaired) throw yamlError(error);
    try {
      parsed = parseYaml(repaired.text, { schema: "failsafe" });
    } catch {
      throw yamlError(error);
    }
    for (const key of repaired.keys) {
      warnings.push(
        `${key}: the unquoted value containing ": " was read as a quoted string`,
      );
    }
  }
  refuseAliases(parsed);
  if (parsed === null || parsed === undefined) {
    throw new SyntaxError(`Cannot parse SKILL.md: the front matter is empty`);
  }
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new SyntaxError(
      `Cannot parse SKILL.md: the front matter must be a map, got ${
        describeValue(parsed)
      }`,
    );
  }
  const frontMatter = parsed as Record<string, unknown>;
  const doc: {
    -readonly [K in keyof SkillDocument]: SkillDocument[K];
  } = { frontMatter, body, warnings };

  const name = frontMatter["name"];
  if (typeof name === "string") doc.name = name.trim().normalize("NFKC");
  const description = frontMatter["description"];
  if (typeof description === "string") doc.description = description.trim();
  const license = frontMatter["license"];
  if (typeof license === "string") doc.license = license.trim();
  else if (license !== undefined && license !== null) {
    warnings.push(`license: ignored ${describeValue(license)}`);
  }
  const compatibility = frontMatter["compatibility"];
  if (typeof compatibility === "string") {
    doc.compatibility = compatibility.trim();
  } else if (compatibility !== undefined && compatibility !== null) {
    warnings.push(`compatibility: ignored ${describeValue(compatibility)}`);
  }
  const metadata = frontMatter["metadata"];
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata === "object" && !Array.isArray(metadata)) {
      doc.metadata = stringifyMetadata(
        metadata as Record<string, unknown>,
        warnings,
      );
    } else {
      warnings.push(`metadata: ignored ${describeValue(metadata)}`);
    }
  }
  const tools = frontMatter["allowed-tools"];
  if (tools !== undefined && tools !== null) {
    const allowedTools = splitAllowedTools(tools);
    if (allowedTools) doc.allowedTools = allowedTools;
    else warnings.push(`allowed-tools: ignored ${describeValue(tools)}`);
  }
  return doc;
}

function stringifyMetadata(
  metadata: Record<string, unknown>,
  warnings: string[],
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value === "string") result[key] = value;
    else if (value === null || value === undefined) result[key] = "";
    else {
      result[key] = JSON.stringify(value);
      warnings.push(
        `metadata.${key}: ${
          describeValue(value)
        } was turned into a JSON string`,
      );
    }
  }
  return result;
}

/**
 * Refuses front matter where one map or list is reached twice: a YAML alias
 * (`*name`) of an anchored map or list. The parser shares the anchored node,
 * so parsing is cheap, but every later walk of the value (freezing, turning
 * metadata into strings, JSON) expands it: ten levels of nine aliases ("a
 * billion laughs", 600 bytes) would never end. Front matter needs no aliases.
 * The check visits each node once, so it costs what the parse did.
 */
function refuseAliases(value: unknown): void {
  if (value === null || typeof value !== "object") return;
  const seen = new Set<object>();
  const stack: object[] = [value];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (seen.has(node)) {
      throw new SyntaxError(
        `Cannot parse SKILL.md: the front matter uses a YAML alias of a map or list (aliases are not allowed in front matter)`,
      );
    }
    seen.add(node);
    for (const child of Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push(child);
    }
  }
}

function yamlError(error: unknown): SyntaxError {
  // The parser's first line ends with ":" before a quote of the source,
  // which is not kept: the reason ends the message.
  const detail =
    (error instanceof Error
      ? error.message.split("\n")[0]!.trim()
      : String(error)).replace(/\s*:$/, "");
  return new SyntaxError(
    `Cannot parse SKILL.md: the front matter is not valid YAML: ${detail}`,
    { cause: error },
  );
}

const KEY_VALUE =
  /^([ \t]*)([^\s#'"{[\]}&*!|>%@`,?:-][^:#]*?|-[^\s:#][^:#]*?):[ \t]+(\S.*)$/;
const BLOCK_SCALAR = /^[|>][1-9+-]*[ \t]*(?:#.*)?$/;
const QUOTED_OR_STRUCTURED = /^["'[{|>&*!%@`]/;

/**
 * Quotes the value of every `key: value` line whose unquoted value contains
 * `": "` (or ends with `":"`), outside block scalars. Returns `undefined` when
 * no line needed it.
 */
function quoteUnquotedColons(
  yaml: string,
): { text: string; keys: string[] } | undefined {
  const keys: string[] = [];
  let blockIndent = -1;
  const lines = yaml.split("\n").map((line) => {
    const indent = /^[ \t]*/.exec(line)![0].length;
    if (blockIndent >= 0) {
      if (line.trim() === "" || indent > blockIndent) return line;
      blockIndent = -1;
    }
    const match = KEY_VALUE.exec(line);
    if (!match) return line;
    const [, space, key, value] = match as unknown as [
      string,
      string,
      string,
      string,
    ];
    if (BLOCK_SCALAR.test(value)) {
      blockIndent = indent;
      return line;
    }
    if (QUOTED_OR_STRUCTURED.test(value)) return line;
    const trimmed = value.trimEnd();
    if (!trimmed.includes(": ") && !trimmed.endsWith(":")) return line;
    keys.push(key.trim());
    return `${space}${key}: ${JSON.stringify(trimmed)}`;
  });
  return keys.length ? { text: lines.join("\n"), keys } : undefined;
}
