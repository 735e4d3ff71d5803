/**
 * Strict validation of a skill against the Agent Skills rules, for skill
 * authors (loading stays lenient: see `loadSkills`).
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import type { Skill } from "./types.ts";
import { parseSkillMd } from "./parse.ts";
import { readSkillMdBytes, SkillFileError } from "./_read.ts";
import { checkFrontMatter } from "./_fields.ts";

/** One broken rule. */
export interface ValidationProblem {
  /** The field concerned: `name`, `description`, `metadata.version`, `front matter`, `SKILL.md`... */
  readonly field: string;
  /** What is wrong, starting with the field and naming the limit, e.g. `description: must be at most 1024 characters, got 1342`. */
  readonly message: string;
}

/** Options of {@linkcode validateSkill}. */
export interface ValidateSkillOptions {
  /** Stops reading the file; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

const REPAIRED = /^([^:]+): the unquoted value containing ": "/;

/**
 * Checks a skill strictly against the Agent Skills rules:
 * - `name`: required, 1-64 characters, lowercase letters (Unicode lowercase
 *   letters are accepted after NFKC normalisation), digits and `-`, no leading
 *   or trailing `-`, no `--`, equal to the folder's name (both NFKC-normalised);
 * - `description`: required, 1-1024 characters, not blank;
 * - `compatibility`: 1-500 characters; `license`: a string;
 * - `metadata`: a map of strings to strings; `allowed-tools`: a
 *   space-separated string (a list of strings is accepted too);
 * - no other top-level field; YAML readable as written (no unquoted `": "`).
 *
 * Given a path (a skill folder or its `SKILL.md`), it reads and parses the file
 * itself; given a loaded {@linkcode Skill}, it checks its front matter and
 * folder without reading anything.
 *
 * Needs `--allow-read` of the skill when given a path; nothing otherwise.
 *
 * @param target A skill folder, a `SKILL.md` path, or a loaded skill.
 * @param options A signal.
 * @returns Every problem found; empty when the skill is valid.
 * @throws {TypeError} `target` is neither a path nor a skill.
 * @throws {Deno.errors.NotFound} The path does not exist.
 * @throws {Error} The `SKILL.md` cannot be read (e.g. `Deno.errors.NotCapable`
 * or a symlink loop); a folder or non-UTF-8 file is a problem, not an error.
 *
 * @example Validating a skill folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { validateSkill } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/pdf`);
 * await Deno.writeTextFile(
 *   `${root}/pdf/SKILL.md`,
 *   "---\nname: PDF\ndescription: Fills PDF forms.\n---\n",
 * );
 * const problems = await validateSkill(`${root}/pdf`);
 * assert(problems[0]!.message === 'name: must be lowercase, got "PDF"');
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function validateSkill(
  target: string | Skill,
  options: ValidateSkillOptions = {},
): Promise<ValidationProblem[]> {
  if (typeof target === "string") return await validatePath(target, options);
  if (
    target === null || typeof target !== "object" ||
    typeof target.frontMatter !== "object" || target.frontMatter === null ||
    typeof target.basePath !== "string"
  ) {
    throw new TypeError(
      `Cannot validate skill: expected a path or a loaded skill`,
    );
  }
  const problems: ValidationProblem[] = [];
  for (const warning of target.warnings ?? []) {
    const match = REPAIRED.exec(warning);
    if (match) problems.push(quoteProblem(match[1]!));
  }
  problems.push(
    ...checkFrontMatter(target.frontMatter, hostPath.basename(target.basePath)),
  );
  return problems;
}

function quoteProblem(field: string): ValidationProblem {
  return {
    field,
    message: `${field}: a value containing ": " must be quoted`,
  };
}

async function validatePath(
  path: string,
  options: ValidateSkillOptions,
): Promise<ValidationProblem[]> {
  options.signal?.throwIfAborted();
  const absolute = hostPath.resolve(path);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(absolute);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(
        `Cannot validate "${path}": no such file or folder`,
        { cause: error },
      );
    }
    throw error;
  }
  const folder = info.isDirectory ? absolute : hostPath.dirname(absolute);
  const location = info.isDirectory
    ? hostPath.join(absolute, "SKILL.md")
    : absolute;
  if (hostPath.basename(location) !== "SKILL.md") {
    return [{
      field: "SKILL.md",
      message: `SKILL.md: the file must be named "SKILL.md", got "${
        hostPath.basename(location)
      }"`,
    }];
  }
  let bytes: Uint8Array;
  try {
    bytes = await readSkillMdBytes(location, options.signal);
  } catch (error) {
    if (error instanceof SkillFileError) {
      return [{ field: "SKILL.md", message: `SKILL.md: ${error.message}` }];
    }
    if (error instanceof Deno.errors.NotFound) {
      const lower = await exists(hostPath.join(folder, "skill.md"));
      return [{
        field: "SKILL.md",
        message: lower
          ? `SKILL.md: the file must be named "SKILL.md", got "skill.md"`
          : `SKILL.md: no such file in "${folder}"`,
      }];
    }
    if (error instanceof Deno.errors.IsADirectory) {
      return [{
        field: "SKILL.md",
        message: "SKILL.md: must be a file, got a folder",
      }];
    }
    throw error;
  }
  let text: string;
  try {
    // Deno.readTextFile would replace bad bytes silently.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return [{ field: "SKILL.md", message: "SKILL.md: must be UTF-8 text" }];
  }
  let frontMatter: Readonly<Record<string, unknown>>;
  try {
    frontMatter = parseSkillMd(text, { retryUnquotedColons: false })
      .frontMatter;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const reason = message.replace(/^Cannot parse SKILL\.md: /, "");
    const problems: ValidationProblem[] = [
      { field: "front matter", message: `front matter: ${reason}` },
    ];
    // Say which unquoted values broke it, when quoting them would help.
    try {
      const lenient = parseSkillMd(text);
      for (const warning of lenient.warnings) {
        const match = REPAIRED.exec(warning);
        if (match) problems.push(quoteProblem(match[1]!));
      }
      problems.push(
        ...checkFrontMatter(lenient.frontMatter, hostPath.basename(folder)),
      );
    } catch {
      // Unreadable even leniently: the YAML problem says it all.
    }
    return problems;
  }
  return checkFrontMatter(frontMatter, hostPath.basename(folder));
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
