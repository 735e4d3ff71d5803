/**
 * The catalog budget on the command line: `--catalog-budget <chars>`, and the
 * report of how much of the budget a folder's catalog takes (for `list` and
 * `doctor`).
 *
 * @module
 */
import { DEFAULT_SKILL_CATALOG_BUDGET } from "../skill/catalog_budget.ts";
import type { Skill } from "../skill/types.ts";
import { type CatalogUsage, measureSkillCatalog } from "../tools/skill_tool.ts";
import { UsageError } from "./_args.ts";

/** The help line of `--catalog-budget`. */
export const CATALOG_BUDGET_HELP: string = `  --catalog-budget <chars>
                       The most characters the skill tool's description and
                       input schema may take (default ${DEFAULT_SKILL_CATALOG_BUDGET}); over it the
                       tool lists the skills that fit and skill_search finds
                       the rest
`;

/** How many names outside the listing the text report prints. */
const SHOWN_OUTSIDE = 20;

/**
 * Reads `--catalog-budget`.
 *
 * @param value The flag's value, if given.
 * @returns The budget, or `undefined` when not given.
 * @throws {UsageError} It is not a positive integer.
 */
export function parseCatalogBudget(
  value: string | boolean | undefined,
): number | undefined {
  if (value === undefined) return undefined;
  const budget = typeof value === "string" && /^\d+$/.test(value.trim())
    ? Number(value.trim())
    : NaN;
  if (!Number.isSafeInteger(budget) || budget <= 0) {
    throw new UsageError(
      `Option "--catalog-budget" must be a positive number of characters, got ${
        JSON.stringify(value)
      }`,
    );
  }
  return budget;
}

/**
 * How the skills' catalog stands against the budget, with the default
 * description of the skill tool.
 *
 * @param skills The skills.
 * @param budget The budget (default 8,000).
 * @returns The usage.
 * @throws {RangeError} The budget cannot hold the tool's own text.
 */
export function catalogUsage(
  skills: readonly Skill[],
  budget?: number,
): CatalogUsage | undefined {
  if (skills.length === 0) return undefined;
  return measureSkillCatalog(
    skills,
    budget === undefined ? {} : { catalogBudget: budget },
  );
}

/**
 * The report's text: what the catalog takes of the budget, and the skills
 * outside the listing (the first 20 named).
 *
 * @param usage The usage.
 * @returns One or two lines, ending with a newline.
 */
export function formatCatalogUsage(usage: CatalogUsage): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const count = usage.listed.length + usage.outside.length;
  if (usage.whole) {
    return `Catalog: ${n(usage.wholeChars)} of the ${
      n(usage.budget)
    }-character budget (${
      Math.round((usage.wholeChars / usage.budget) * 100)
    }%); every skill is listed (${count}).\n`;
  }
  const shown = usage.outside.slice(0, SHOWN_OUTSIDE);
  const more = usage.outside.length - shown.length;
  return `Catalog: over the ${n(usage.budget)}-character budget (all ${
    n(count)
  } skills would take ${n(usage.wholeChars)}, ${
    (usage.wholeChars / usage.budget).toFixed(1)
  } times it): ${n(usage.listed.length)} listed, ${
    n(usage.outside.length)
  } outside the listing (skill_search finds them; the skill tool loads them by name).\n` +
    `Outside: ${shown.join(", ")}${
      more > 0 ? `, and ${n(more)} more (--json lists them all)` : ""
    }\n`;
}
