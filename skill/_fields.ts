/**
 * Field helpers shared by parsing, lenient loading and strict validation.
 *
 * @module
 */
import { hiddenCharacters } from "../_internal/escape_text.ts";

/**
 * Splits `allowed-tools` into tool names: a string is split on spaces and
 * commas outside parentheses (so `Bash(git add:*)` stays whole); a list keeps
 * its string items. Returns `undefined` for anything else.
 */
export function splitAllowedTools(value: unknown): string[] | undefined {
  if (typeof value === "string") return splitToolString(value);
  if (Array.isArray(value)) {
    if (!value.every((item) => typeof item === "string")) return undefined;
    return value.flatMap((item: string) => splitToolString(item));
  }
  return undefined;
}

function splitToolString(value: string): string[] {
  const tools: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of value) {
    if (char === "(") depth++;
    else if (char === ")" && depth > 0) depth--;
    if (depth === 0 && (char === "," || /\s/.test(char))) {
      if (current) tools.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  if (current) tools.push(current);
  return tools;
}

/** What a parsed YAML value is, for messages: `a list`, `a map`, `"text"`. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  if (typeof value === "string") return JSON.stringify(value);
  return typeof value;
}

/** The top-level fields of the Agent Skills specification. */
export const KNOWN_FIELDS: readonly string[] = [
  "name",
  "description",
  "license",
  "compatibility",
  "metadata",
  "allowed-tools",
  // The client guide's field: the model cannot start the skill.
  "disable-model-invocation",
];
/** Longest `name`, in characters. */
export const MAX_NAME_LENGTH = 64;
/** Longest `description`, in characters. */
export const MAX_DESCRIPTION_LENGTH = 1024;
/** Longest `compatibility`, in characters. */
export const MAX_COMPATIBILITY_LENGTH = 500;

/** A broken rule: the field (`name`, `metadata.version`, ...) and a message naming it. */
export interface FieldProblem {
  /** The field concerned. */
  readonly field: string;
  /** What is wrong, starting with the field's name. */
  readonly message: string;
}

/** The length of a string in characters (code points), as the specification counts. */
export function charLength(text: string): number {
  // Without surrogate pairs, UTF-16 length is the answer.
  if (!/[\uD800-\uDFFF]/.test(text)) return text.length;
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function problem(field: string, reason: string): FieldProblem {
  return { field, message: `${field}: ${reason}` };
}

const NAME_CHARS = /^[\p{L}\p{N}-]+$/u;
const ASCII_NAME = /^[a-z0-9-]+$/;

/**
 * Checks every Agent Skills rule on a parsed front matter. `folderName` is the
 * name of the skill's folder (`undefined`: not checked).
 */
export function checkFrontMatter(
  frontMatter: Readonly<Record<string, unknown>>,
  folderName: string | undefined,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  problems.push(...checkName(frontMatter["name"], folderName));

  const description = frontMatter["description"];
  if (description === undefined) {
    problems.push(problem("description", "is required"));
  } else if (typeof description !== "string") {
    problems.push(
      problem(
        "description",
        `must be a string, got ${describeValue(description)}`,
      ),
    );
  } else if (description.trim() === "") {
    problems.push(problem("description", "must not be blank"));
  } else {
    problems.push(...checkHidden("description", description));
    const length = charLength(description);
    if (length > MAX_DESCRIPTION_LENGTH) {
      problems.push(
        problem(
          "description",
          `must be at most ${MAX_DESCRIPTION_LENGTH} characters, got ${length}`,
        ),
      );
    }
  }

  if ("license" in frontMatter) {
    const license = frontMatter["license"];
    if (typeof license !== "string") {
      problems.push(
        problem("license", `must be a string, got ${describeValue(license)}`),
      );
    }
  }

  if ("compatibility" in frontMatter) {
    const compatibility = frontMatter["compatibility"];
    if (typeof compatibility !== "string") {
      problems.push(
        problem(
          "compatibility",
          `must be a string of 1-${MAX_COMPATIBILITY_LENGTH} characters, got ${
            describeValue(compatibility)
          }`,
        ),
      );
    } else {
      const length = charLength(compatibility);
      if (compatibility.trim() === "") {
        problems.push(
          problem(
            "compatibility",
            `must be 1-${MAX_COMPATIBILITY_LENGTH} characters and not blank`,
          ),
        );
      } else if (length > MAX_COMPATIBILITY_LENGTH) {
        problems.push(
          problem(
            "compatibility",
            `must be at most ${MAX_COMPATIBILITY_LENGTH} characters, got ${length}`,
          ),
        );
      }
    }
  }

  if ("metadata" in frontMatter) {
    const metadata = frontMatter["metadata"];
    if (
      metadata === null || typeof metadata !== "object" ||
      Array.isArray(metadata)
    ) {
      problems.push(
        problem(
          "metadata",
          `must be a map of strings to strings, got ${describeValue(metadata)}`,
        ),
      );
    } else {
      for (const [key, value] of Object.entries(metadata)) {
        if (typeof value !== "string") {
          problems.push(
            problem(
              `metadata.${key}`,
              `must be a string, got ${describeValue(value)}`,
            ),
          );
        }
      }
    }
  }

  if ("allowed-tools" in frontMatter) {
    const tools = frontMatter["allowed-tools"];
    if (splitAllowedTools(tools) === undefined) {
      problems.push(
        problem(
          "allowed-tools",
          `must be a space-separated string or a list of strings, got ${
            describeValue(tools)
          }`,
        ),
      );
    }
  }

  const invocation = frontMatter["disable-model-invocation"];
  if (
    invocation !== undefined && typeof invocation !== "boolean" &&
    invocation !== "true" && invocation !== "false"
  ) {
    problems.push(
      problem(
        "disable-model-invocation",
        `must be true or false, got ${describeValue(invocation)}`,
      ),
    );
  }

  for (const key of Object.keys(frontMatter)) {
    if (!KNOWN_FIELDS.includes(key)) {
      problems.push(
        problem(
          key,
          `unknown field: the specification allows only ${
            KNOWN_FIELDS.join(", ")
          }`,
        ),
      );
    }
  }
  return problems;
}

/**
 * Control characters, Unicode tag characters and bidi controls in a field a
 * person and a model both read: one problem per class, naming the first.
 */
function checkHidden(field: string, text: string): FieldProblem[] {
  return hiddenCharacters(text).map(({ kind, first }) =>
    problem(field, `must not contain ${kind} (found ${first})`)
  );
}

function checkName(
  raw: unknown,
  folderName: string | undefined,
): FieldProblem[] {
  if (raw === undefined) return [problem("name", "is required")];
  if (typeof raw !== "string") {
    return [problem("name", `must be a string, got ${describeValue(raw)}`)];
  }
  const name = raw.trim().normalize("NFKC");
  if (name === "") {
    return [
      problem("name", `must be 1-${MAX_NAME_LENGTH} characters and not blank`),
    ];
  }
  const problems: FieldProblem[] = checkHidden("name", name);
  const quoted = JSON.stringify(name);
  const length = charLength(name);
  if (length > MAX_NAME_LENGTH) {
    problems.push(
      problem(
        "name",
        `must be at most ${MAX_NAME_LENGTH} characters, got ${length}`,
      ),
    );
  }
  const ascii = ASCII_NAME.test(name);
  if (!ascii && name !== name.toLowerCase()) {
    problems.push(problem("name", `must be lowercase, got ${quoted}`));
  }
  if (!ascii && !NAME_CHARS.test(name)) {
    problems.push(
      problem(
        "name",
        `may contain only letters, digits and "-", got ${quoted}`,
      ),
    );
  }
  if (name.startsWith("-") || name.endsWith("-")) {
    problems.push(
      problem("name", `must not start or end with "-", got ${quoted}`),
    );
  }
  if (name.includes("--")) {
    problems.push(problem("name", `must not contain "--", got ${quoted}`));
  }
  if (folderName !== undefined) {
    const folder = folderName === name ? name : folderName.normalize("NFKC");
    if (folder !== name) {
      problems.push(
        problem(
          "name",
          `must equal the folder name ${JSON.stringify(folder)}, got ${quoted}`,
        ),
      );
    }
  }
  return problems;
}
