/**
 * A catalog within a budget: as many skills as fit, in an order of
 * preference, each entry rendered as {@linkcode formatCatalog} renders it.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import { formatCatalog, type FormatCatalogOptions } from "./catalog.ts";
import type { Skill } from "./types.ts";

/**
 * The default budget of the `skill` tool, in characters: its description and
 * its input schema together. About 2,000 tokens, 1% of a 200,000-token
 * context window (Claude Code's default share for its skills listing): room
 * for the tool's own text (about 900 characters) and some 20 to 40 typical
 * skills.
 */
export const DEFAULT_SKILL_CATALOG_BUDGET = 8_000;

/** The most characters of one skill's description in the `skill` tool (as Claude Code). */
export const CATALOG_DESCRIPTION_CAP = 1_536;

/** The characters `<available_skills>` and its end tag add around the entries. */
export const CATALOG_WRAPPER_CHARS: number = (() => {
  const skill: Skill = {
    name: "x",
    description: "",
    basePath: "",
    location: "",
    instructions: "",
    frontMatter: {},
    warnings: [],
  };
  // One entry and the wrapper, two entries and the wrapper.
  return 2 * formatCatalog([skill]).length -
    formatCatalog([skill, skill]).length;
})();

/** Options of {@linkcode fitCatalog}. */
export interface FitCatalogOptions
  extends Omit<FormatCatalogOptions, "maxChars"> {
  /** The most characters the catalog text may take (a non-negative integer). */
  readonly room: number;
  /**
   * The skills in the order they are kept: the first ones that fit are
   * listed. Default: the order of `skills`.
   */
  readonly order?: readonly Skill[];
  /**
   * The size of a skill's entry, when measured elsewhere (e.g. cached; see
   * {@linkcode catalogEntrySize}). Default: measured here.
   */
  readonly sizeOf?: (skill: Skill) => number;
}

/** What {@linkcode fitCatalog} returns. */
export interface FittedCatalog {
  /** The catalog text of the listed skills (sorted by name), or `""`. */
  readonly text: string;
  /** The skills listed, in the order they were kept. */
  readonly listed: readonly Skill[];
  /** The skills left out, in the order given. */
  readonly unlisted: readonly Skill[];
}

/**
 * The characters a skill's entry takes in the catalog (its `<skill>` element
 * as {@linkcode formatCatalog} renders it, the description cut at
 * `maxDescriptionChars`): a catalog of several skills takes the sum of their
 * entries and {@linkcode CATALOG_WRAPPER_CHARS}.
 *
 * @param skill The skill.
 * @param options How the catalog is formatted.
 * @returns The size of its entry.
 */
export function catalogEntrySize(
  skill: Skill,
  options: Omit<FormatCatalogOptions, "maxChars"> = {},
): number {
  return formatCatalog([skill], {
    ...options,
    maxChars: Number.MAX_SAFE_INTEGER,
  }).length - CATALOG_WRAPPER_CHARS;
}

/**
 * Lists as many skills as fit in `room` characters: in the order given, up
 * to the first one whose entry does not fit (so the listing is always the
 * head of the order, and calling a listed skill never changes it).
 * Descriptions are cut at
 * `maxDescriptionChars`, never shortened further: a skill is listed whole or
 * not at all.
 *
 * Needs no permission.
 *
 * @example Keeping the skills that fit
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { fitCatalog } from "./catalog_budget.ts";
 * import type { Skill } from "./types.ts";
 * const skill = (name: string): Skill => ({
 *   name, description: `Does ${name}.`, basePath: `/s/${name}`,
 *   location: `/s/${name}/SKILL.md`, instructions: "", frontMatter: {},
 *   warnings: [],
 * });
 * const skills = ["a", "b", "c"].map(skill);
 * const fitted = fitCatalog(skills, { room: 200, order: [skills[2]!, skills[0]!, skills[1]!] });
 * assertEquals(fitted.listed.map((s) => s.name), ["c"]);
 * assertEquals(fitted.unlisted.map((s) => s.name), ["a", "b"]);
 * ```
 *
 * @param skills The skills.
 * @param options The room, the order of preference and the format.
 * @returns The catalog text, the listed skills and the others.
 * @throws {RangeError} `room` is not a non-negative integer.
 */
export function fitCatalog(
  skills: readonly Skill[],
  options: FitCatalogOptions,
): FittedCatalog {
  const room = checkNumber(
    options.room,
    "room",
    "non-negative integer",
    "fit the catalog in",
  );
  const { order, sizeOf: given, room: _, ...format } = options;
  const sizeOf = given ?? ((skill: Skill) => catalogEntrySize(skill, format));
  const listed: Skill[] = [];
  const kept = new Set<Skill>();
  let used = CATALOG_WRAPPER_CHARS;
  for (const skill of order ?? skills) {
    if (kept.has(skill)) continue;
    const size = sizeOf(skill);
    if (used + size > room) break;
    used += size;
    listed.push(skill);
    kept.add(skill);
  }
  return {
    text: listed.length
      ? formatCatalog(listed, { ...format, maxChars: Number.MAX_SAFE_INTEGER })
      : "",
    listed,
    unlisted: skills.filter((skill) => !kept.has(skill)),
  };
}
