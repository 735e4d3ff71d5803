/**
 * A full-text index of skills (name, description, headings of the
 * instructions), for the `skill_search` tool and for the closest names to an
 * unknown one.
 *
 * The library is MiniSearch (BM25, prefix and fuzzy matching, no dependency,
 * runs wherever JavaScript does, edge functions included). Measured against
 * Orama on 9,000 generated skills differing by a pair of topic words (900
 * queries, load average about 6 on 2 shared cores, 2026-12-05):
 * MiniSearch 7.2.0 built in 0.7-1.1 s, about 30-35 MB of heap, the described
 * skill in the first 3 answers for 99.8-100% of queries, median 0.5 ms (fuzzy
 * matching for words of 5 letters and more; 6 ms with fuzzy matching for all);
 * `@orama/orama` 3.1.18 (English stemming, typo tolerance 1) built in 4.0 s,
 * 69% in the first 3, median 74 ms. Hence MiniSearch. As written here (common
 * words dropped only from 1,000 skills and beyond half of them), at load 1.5:
 * built in 0.5 s with 17 MiB of heap, 99.2% in the first 3, median 2.7 ms,
 * p99 16 ms (bench/catalog_bench.ts).
 *
 * @module
 */
import MiniSearch from "minisearch";
import type { Skill } from "./types.ts";

/** One answer of {@linkcode SkillIndex.search}. */
export interface SkillMatch {
  /** The skill. */
  readonly skill: Skill;
  /** Its relevance (higher is better; only the order means something). */
  readonly score: number;
}

/**
 * In a catalog of at least {@linkcode COMMON_MIN_SKILLS} skills, a word in
 * more than this share of them is left out of a query with other words: it
 * tells the skills apart no better than a stop word (BM25 gives it almost no
 * weight), and matching it against most skills is what makes a search slow.
 */
const COMMON_SHARE = 0.5;
const COMMON_MIN_SKILLS = 1_000;

interface IndexedDocument {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly headings: string;
}

const tokenize = MiniSearch.getDefault("tokenize") as (
  text: string,
) => string[];

/** The headings of a skill's instructions, one a line, without their `#`. */
function headingsOf(instructions: string): string {
  const headings: string[] = [];
  for (const line of instructions.split("\n")) {
    const match = /^#{1,6}\s+(.*)$/.exec(line);
    if (match) headings.push(match[1]!.trim());
  }
  return headings.join("\n");
}

/**
 * A full-text index of skills: built once for a list of skills (see
 * {@linkcode skillIndexOf}), then searched by words.
 *
 * @example Searching skills
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { SkillIndex } from "./skill_index.ts";
 * import type { Skill } from "./types.ts";
 * const skill = (name: string, description: string): Skill => ({
 *   name, description, basePath: `/s/${name}`, location: `/s/${name}/SKILL.md`,
 *   instructions: "", frontMatter: {}, warnings: [],
 * });
 * const index = new SkillIndex([
 *   skill("pdf-forms", "Fills PDF forms and extracts their fields."),
 *   skill("xlsx", "Builds spreadsheets with formulas and charts."),
 * ]);
 * assertEquals(index.search("fill a form in a pdf")[0]?.skill.name, "pdf-forms");
 * assertEquals(index.closestNames("pdf-form"), ["pdf-forms"]);
 * ```
 */
export class SkillIndex {
  readonly #skills: readonly Skill[];
  readonly #search: MiniSearch<IndexedDocument>;
  readonly #documentFrequency = new Map<string, number>();

  /**
   * Indexes the skills (name, description, headings).
   *
   * @param skills The skills.
   */
  constructor(skills: readonly Skill[]) {
    this.#skills = [...skills];
    this.#search = new MiniSearch<IndexedDocument>({
      fields: ["name", "description", "headings"],
      searchOptions: {
        boost: { name: 2, headings: 0.5 },
        combineWith: "OR",
        // Prefixes from 3 letters ("invoic" finds "invoices"), typos from 5
        // ("spreadshet"): matching short words loosely is slow and noisy.
        prefix: (term) => term.length >= 3,
        fuzzy: (term) => term.length >= 5 ? 0.2 : false,
      },
    });
    const documents = this.#skills.map((skill, id) => ({
      id,
      name: skill.name,
      description: skill.description,
      headings: headingsOf(skill.instructions),
    }));
    for (const document of documents) {
      const words = new Set(
        tokenize(
          `${document.name} ${document.description} ${document.headings}`,
        ).map((word) => word.toLowerCase()),
      );
      for (const word of words) {
        this.#documentFrequency.set(
          word,
          (this.#documentFrequency.get(word) ?? 0) + 1,
        );
      }
    }
    this.#search.addAll(documents);
  }

  /** How many skills are indexed. */
  get size(): number {
    return this.#skills.length;
  }

  /**
   * The skills that match a query, best first. Words that most skills share
   * are left out when the query has others (see the module's doc).
   *
   * @param query Words describing the task.
   * @param limit The most answers (default 10).
   * @returns The matching skills, best first.
   */
  search(query: string, limit = 10): SkillMatch[] {
    const words = tokenize(query).map((word) => word.toLowerCase()).filter(
      Boolean,
    );
    if (words.length === 0) return [];
    const common = this.#skills.length >= COMMON_MIN_SKILLS
      ? this.#skills.length * COMMON_SHARE
      : Infinity;
    const telling = words.filter((word) =>
      (this.#documentFrequency.get(word) ?? 0) <= common
    );
    const results = this.#search.search(
      (telling.length > 0 ? telling : words).join(" "),
    );
    return results.slice(0, limit).map((result) => ({
      skill: this.#skills[result.id as number]!,
      score: result.score,
    }));
  }

  /**
   * The names closest to one that is no skill's: names sharing its words,
   * with typos and prefixes allowed, best first.
   *
   * @param name The unknown name.
   * @param limit The most names (default 5).
   * @returns The closest names.
   */
  closestNames(name: string, limit = 5): string[] {
    return this.#search.search(name, {
      fields: ["name"],
      prefix: true,
      fuzzy: 0.34,
      combineWith: "OR",
    }).slice(0, limit).map((result) => this.#skills[result.id as number]!.name);
  }
}

const byList = new WeakMap<readonly Skill[], SkillIndex>();
/** Lists of the same skill objects (each build copies its list), by first skill. */
const byFirst = new WeakMap<
  Skill,
  { readonly skills: readonly Skill[]; readonly index: SkillIndex }[]
>();
/** The lists kept per first skill (older ones are dropped). */
const KEPT_PER_FIRST = 4;

/**
 * The index of a list of skills, built on first use and kept while its skills
 * live: tool sets over the same skill objects (the MCP HTTP handler's
 * sessions, each build with its own copy of the list) share one, and skills
 * loaded again (a hot reload makes new objects) get a new one.
 *
 * @param skills The skills.
 * @returns Their index.
 */
export function skillIndexOf(skills: readonly Skill[]): SkillIndex {
  let index = byList.get(skills);
  if (index !== undefined) return index;
  const first = skills[0];
  const lists = first === undefined ? [] : byFirst.get(first) ?? [];
  index = lists.find((entry) =>
    entry.skills.length === skills.length &&
    entry.skills.every((skill, at) => skill === skills[at])
  )?.index;
  if (index === undefined) {
    index = new SkillIndex(skills);
    if (first !== undefined) {
      lists.push({ skills: [...skills], index });
      if (lists.length > KEPT_PER_FIRST) lists.shift();
      byFirst.set(first, lists);
    }
  }
  byList.set(skills, index);
  return index;
}
