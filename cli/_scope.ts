/**
 * `--scope project,user` of `skillrun list` and `skillrun mcp`: the standard
 * places of skills (`<cwd>/.agents/skills`, `$HOME/.agents/skills`, and their
 * `.claude/skills`), loaded after the `--skills` folders.
 *
 * @module
 */
import { SKILL_SCOPES, type SkillScope } from "../skill/sources.ts";
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
