/**
 * `--scope project,user` of `skillrun list` and `skillrun mcp`: the standard
 * places of skills (`<cwd>/.agents/skills`, `$HOME/.agents/skills`, and their
 * `.claude/skills`), loaded after the `--skills` folders.
 *
 * @module
 */
import { loadSkills } from "../skill/load.ts";
import { SKILL_SCOPES, type SkillScope } from "../skill/sources.ts";
import type { Skill } from "../skill/types.ts";
import { UsageError } from "./_args.ts";

/** The help line of `--scope`. */
export const SCOPE_OPTION_HELP: string =
  `  --scope <scopes>     Also load the standard places: project
                       (./.agents/skills, ./.claude/skills), user
                       ($HOME/.agents/skills, $HOME/.claude/skills); the
                       project's copy of a name wins`;

/**
 * Checks the values of `--scope`.
 *
 * @param values The values given (commas already split).
 * @returns The scopes.
 * @throws {UsageError} A value is neither `project` nor `user`.
 */
export function parseScopes(values: readonly string[]): SkillScope[] {
  for (const value of values) {
    if (!SKILL_SCOPES.includes(value as SkillScope)) {
      throw new UsageError(
        `Option "--scope" takes "project" and "user", not "${value}"`,
      );
    }
  }
  return values as SkillScope[];
}

/**
 * The skills of `--skills` folders and `--scope` places: the folders as they
 * are without scopes, else the skills loaded from both (with the warnings).
 *
 * @param dirs The folders of `--skills`.
 * @param scopes The scopes of `--scope`, if given.
 * @returns What to build the tools from, and loading's warnings.
 */
export async function scopedSkills(
  dirs: readonly string[],
  scopes: readonly SkillScope[] | undefined,
): Promise<
  { skills: readonly (string | Skill)[]; warnings: readonly string[] }
> {
  if (scopes === undefined) return { skills: dirs, warnings: [] };
  const loaded = await loadSkills(dirs, { scopes });
  return { skills: loaded.skills, warnings: loaded.warnings };
}

/**
 * A warning printer that prints each message once (servers repeat them per
 * session).
 *
 * @param print Prints one message.
 * @returns The printer.
 */
export function onceEach(
  print: (message: string) => Promise<void>,
): (message: string) => void {
  const seen = new Set<string>();
  return (message) => {
    if (seen.has(message)) return;
    seen.add(message);
    void print(message);
  };
}
