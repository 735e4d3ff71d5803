/**
 * The `skill_search` tool: ranked full-text search over the skills' names,
 * descriptions and headings, for catalogs too large to list in the `skill`
 * tool's description.
 *
 * @module
 */
import { CATALOG_DESCRIPTION_CAP } from "../skill/catalog_budget.ts";
import { skillIndexOf } from "../skill/skill_index.ts";
import { modelInvocable } from "../skill/invocation.ts";
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { defineTool, okResult } from "./_shared.ts";

/** How many skills `skill_search` answers by default. */
const DEFAULT_LIMIT = 5;
/** The most skills one `skill_search` call answers. */
const MAX_LIMIT = 20;

/**
 * Makes the `skill_search` tool, or `undefined` without skills. It answers
 * the names and descriptions of the skills that best match a query, best
 * first (BM25 over name, description and headings, prefixes and typos
 * allowed; see `skill/skill_index.ts`). The index is built at the first
 * search, once per list of skills: tool sets over the same skills share it,
 * and a reloaded list gets a new one.
 *
 * @example Finding a skill
 * ```ts
 * import { assert } from "@std/assert";
 * import { createSkillSearchTool } from "./skill_search.ts";
 * import { createToolContext } from "./context.ts";
 * import { loadSkills, LocalSkillRuntime } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * for (const [name, description] of [["pdf-forms", "Fills PDF forms."], ["xlsx", "Builds spreadsheets."]]) {
 *   await Deno.mkdir(`${root}/${name}`);
 *   await Deno.writeTextFile(
 *     `${root}/${name}/SKILL.md`,
 *     `---\nname: ${name}\ndescription: ${description}\n---\n`,
 *   );
 * }
 * const { skills } = await loadSkills(root);
 * await using runtime = new LocalSkillRuntime();
 * const tool = createSkillSearchTool(createToolContext(runtime, { skills }))!;
 * const result = await tool.execute({ query: "make a spreadsheet" });
 * assert(result.text.includes("1. xlsx"));
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @param context The shared context (its skills are searched).
 * @returns The tool, or `undefined` without skills.
 */
export function createSkillSearchTool(context: ToolContext): Tool | undefined {
  // Skills with `disable-model-invocation: true` are not found by the model.
  const skills = modelInvocable(context.skills);
  if (skills.length === 0) return undefined;
  return defineTool(context, {
    name: "skill_search",
    description:
      "Searches the skills by what they do: answers the names and descriptions of the skills that best match the query, best first. " +
      "Use it when no skill listed in the skill tool's description fits the task, then load the skill found with the skill tool and its exact name. " +
      "Describe the task in a few words (what it is about, the kind of file or service).",
    inputSchema: {
      type: "object",
      properties: {
        query: {
          type: "string",
          minLength: 1,
          description: 'Words describing the task, e.g. "fill a PDF form".',
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_LIMIT,
          description:
            `The most skills to answer (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}).`,
        },
      },
      required: ["query"],
      additionalProperties: false,
    },
    run({ input }) {
      const query = (input.query as string).trim();
      const limit = (input.limit as number | undefined) ?? DEFAULT_LIMIT;
      const index = skillIndexOf(skills);
      const matches = index.search(query, limit);
      if (matches.length === 0) {
        return Promise.resolve(okResult(
          `No skill matches ${
            JSON.stringify(query)
          } (${index.size} skills searched). Try other words: what the task is about, the kind of file or service.`,
        ));
      }
      const lines = [
        `The skills that best match ${
          JSON.stringify(query)
        }, best first (${index.size} skills searched):`,
      ];
      matches.forEach(({ skill }, at) => {
        lines.push(
          `${at + 1}. ${skill.name}`,
          `   ${cut(skill.description.trim().replace(/\s+/g, " "))}`,
        );
      });
      lines.push(
        "Load one with the skill tool and its exact name, e.g. " +
          JSON.stringify({ name: matches[0]!.skill.name }) + ".",
      );
      return Promise.resolve(okResult(lines.join("\n")));
    },
  });
}

function cut(text: string): string {
  const chars = Array.from(text);
  return chars.length <= CATALOG_DESCRIPTION_CAP
    ? text
    : chars.slice(0, CATALOG_DESCRIPTION_CAP - 1).join("") + "…";
}
