/**
 * The catalog of skills shown to a model.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import type { Skill } from "./types.ts";
import { Redactor } from "../_internal/redact.ts";
import { escapeControl } from "../_internal/escape_text.ts";
import { modelInvocable } from "./invocation.ts";

/** The default size budget of {@linkcode formatCatalog}, in characters. */
export const DEFAULT_CATALOG_BUDGET = 16_000;

/** Options of {@linkcode formatCatalog}. */
export interface FormatCatalogOptions {
  /**
   * The size the catalog should stay within, in characters. Descriptions are
   * shortened (ending with `…`) to fit; names and locations are always kept,
   * so with very many skills the catalog can still exceed it. Default
   * {@linkcode DEFAULT_CATALOG_BUDGET}.
   */
  maxChars?: number;
  /**
   * Where each skill is, as the model should see it. Default: the skill's
   * `location` (its `SKILL.md` path). A runtime may show its own path instead.
   */
  locationOf?: (skill: Skill) => string;
  /**
   * Configured values to keep out of the catalog (see `_internal/redact.ts`
   * for the rule): they are replaced with `[redacted]` in descriptions and
   * locations before anything is shortened, so no part of one survives a cut.
   * Names are kept: the model calls skills by them.
   */
  secrets?: Iterable<string>;
  /**
   * The most characters of each description (counting the `…` that ends a
   * cut one), applied after redaction and before the budget; default none.
   * The `skill` tool uses 1,536, as Claude Code does.
   */
  maxDescriptionChars?: number;
}

const ELLIPSIS = "…";

/**
 * Formats the catalog of skills for a model: one `<skill>` element per skill
 * (but none for a skill with `disable-model-invocation: true`)
 * with its name, description and location, sorted by name then location, XML
 * special characters escaped, control characters, Unicode tag characters and
 * bidi controls written as visible `\u....` escapes (so the model reads what a
 * person sees), inside `<available_skills>`. When the full text
 * exceeds the budget, the longest descriptions are shortened first (all cut to
 * one common length, each ending with `…`), so short ones stay whole.
 *
 * Needs no permission.
 *
 * @param skills The skills to list.
 * @param options The size budget and how to show locations.
 * @returns The catalog, or `""` when there are no skills.
 * @throws {RangeError} `maxChars` or `maxDescriptionChars` is not a positive
 * integer.
 *
 * @example Formatting a catalog
 * ```ts
 * import { assert } from "@std/assert";
 * import { formatCatalog } from "@skillrun/skillrun";
 * import type { Skill } from "@skillrun/skillrun";
 * import { Redactor } from "../_internal/redact.ts";
 * const skill: Skill = {
 *   name: "csv-report", description: "Summarises <CSV> files & tables",
 *   basePath: "/skills/csv-report", location: "/skills/csv-report/SKILL.md",
 *   instructions: "", frontMatter: {}, warnings: [],
 * };
 * const catalog = formatCatalog([skill]);
 * assert(catalog.includes(
 *   "<description>Summarises &lt;CSV&gt; files &amp; tables</description>",
 * ));
 * assert(formatCatalog([]) === "");
 * ```
 */
export function formatCatalog(
  skills: readonly Skill[],
  options: FormatCatalogOptions = {},
): string {
  const budget = checkNumber(
    options.maxChars ?? DEFAULT_CATALOG_BUDGET,
    "maxChars",
    "positive integer",
    "format the catalog with",
  );
  // Skills with `disable-model-invocation: true` are never shown to a model.
  skills = modelInvocable(skills);
  if (skills.length === 0) return "";
  const cap = options.maxDescriptionChars === undefined
    ? undefined
    : checkNumber(
      options.maxDescriptionChars,
      "maxDescriptionChars",
      "positive integer",
      "format the catalog with",
    );
  const locationOf = options.locationOf ?? ((skill: Skill) => skill.location);
  const redactor = new Redactor(options.secrets ?? []);
  const entries = skills.map((skill) => {
    const description = Array.from(
      escapeControl(redactor.redact(skill.description.trim())),
    );
    return {
      name: escapeControl(skill.name),
      location: escapeControl(redactor.redact(locationOf(skill))),
      description: cap === undefined || description.length <= cap
        ? description
        : Array.from(shorten(description, cap)),
    };
  }).sort((a, b) =>
    compareStrings(a.name, b.name) || compareStrings(a.location, b.location)
  );
  const render = (cap: number): string => {
    const parts = ["<available_skills>\n"];
    for (const entry of entries) {
      parts.push(
        "<skill>\n<name>",
        escapeXml(entry.name),
        "</name>\n<description>",
        escapeXml(shorten(entry.description, cap)),
        "</description>\n<location>",
        escapeXml(entry.location),
        "</location>\n</skill>\n",
      );
    }
    parts.push("</available_skills>");
    return parts.join("");
  };
  const longest = Math.max(...entries.map((e) => e.description.length));
  const full = render(longest);
  if (full.length <= budget) return full;
  // The largest common cap on description length that fits the budget.
  let low = 0;
  let high = longest - 1;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (render(mid).length <= budget) low = mid;
    else high = mid - 1;
  }
  return render(low);
}

/** Escapes `&`, `<` and `>`: enough for XML element text, and quotes stay readable. */
function escapeXml(text: string): string {
  return text.replace(/[&<>]/g, (char) => XML_ENTITIES[char]!);
}

const XML_ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
};

/** Cuts characters to `cap` (counting the ellipsis), at a word end when near. */
function shorten(chars: readonly string[], cap: number): string {
  if (chars.length <= cap) return chars.join("");
  if (cap <= 1) return cap === 1 ? ELLIPSIS : "";
  let cut = cap - 1;
  const space = chars.lastIndexOf(" ", cut);
  if (space > cut * 0.8) cut = space;
  return chars.slice(0, cut).join("").trimEnd() + ELLIPSIS;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
