/**
 * What the `skill` tool lists within its budget: every skill with an enum of
 * names when the whole catalog fits, else as many skills as fit (priority,
 * then the most recently used, then the rest in catalog order), a line saying
 * how many more exist, and a plain string `name` checked at call time.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import { formatCatalog, type FormatCatalogOptions } from "../skill/catalog.ts";
import {
  CATALOG_DESCRIPTION_CAP,
  CATALOG_WRAPPER_CHARS,
  catalogEntrySize,
  DEFAULT_SKILL_CATALOG_BUDGET,
  fitCatalog,
} from "../skill/catalog_budget.ts";
import type { Skill } from "../skill/types.ts";
import type { JsonSchema } from "./types.ts";

/** Options of {@linkcode SkillListing}. */
export interface SkillListingOptions {
  /** Writes the tool's description around a catalog text. */
  readonly render: (catalog: string) => string;
  /** How entries are formatted (locations, secrets, description cap). */
  readonly format: FormatCatalogOptions;
  /** The most characters of the description and input schema together. */
  readonly budget?: number;
  /** Skill names listed first, in this order, when not all fit. */
  readonly priority?: readonly string[];
  /**
   * Whether `skill_search` is offered beside the tool: `true` always,
   * `false` never, default only when the catalog is over the budget.
   */
  readonly search?: boolean;
}

/** How a skill tool's listing stands against its budget (for `list` and `doctor`). */
export interface CatalogUsage {
  /** The budget, in characters. */
  readonly budget: number;
  /** What the description and input schema take with every skill listed. */
  readonly wholeChars: number;
  /** Whether every skill is listed (the whole catalog fits). */
  readonly whole: boolean;
  /** What the description and input schema take as offered. */
  readonly chars: number;
  /** The names listed, in the order they were kept. */
  readonly listed: readonly string[];
  /** The names outside the listing (found by `skill_search`, callable by name). */
  readonly outside: readonly string[];
}

const NAME_DESCRIPTION = "The name of the skill to load, from the catalog.";
const NAME_DESCRIPTION_OPEN =
  "The exact name of the skill to load: one listed in this tool's description, or one that skill_search found.";

/**
 * The listing of a `skill` tool: its input schema, and its description,
 * which changes (when not every skill is listed) as skills outside the
 * listing are called.
 */
export class SkillListing {
  /** Whether every skill is listed and `name` is an enum. */
  readonly whole: boolean;
  /** Whether `skill_search` is offered beside the tool. */
  readonly searchOffered: boolean;
  /** The input schema. */
  readonly inputSchema: JsonSchema;
  /** The budget, in characters. */
  readonly budget: number;
  #wholeChars: number | undefined;
  readonly #enumSchema: JsonSchema;
  readonly #skills: readonly Skill[];
  readonly #options: SkillListingOptions;
  readonly #priority: readonly Skill[];
  readonly #recent: Skill[] = [];
  readonly #byName: ReadonlyMap<string, Skill>;
  readonly #sizes = new Map<Skill, number>();
  #description: string | undefined;
  #listed: readonly Skill[] = [];

  /**
   * Measures the whole catalog against the budget.
   *
   * @param skills The skills (at least one).
   * @param options How to write the description, the budget, the priority.
   * @throws {RangeError} The budget is not a positive integer or too small
   * for the tool's own text, or a priority name is no skill's.
   */
  constructor(skills: readonly Skill[], options: SkillListingOptions) {
    this.budget = checkNumber(
      options.budget ?? DEFAULT_SKILL_CATALOG_BUDGET,
      "catalogBudget",
      "positive integer",
      "build the skill tool with",
    );
    this.#skills = skills;
    this.#options = options;
    this.#byName = new Map(skills.map((skill) => [skill.name, skill]));
    this.#priority = (options.priority ?? []).map((name) => {
      const skill = typeof name === "string"
        ? this.#byName.get(name.trim())
        : undefined;
      if (skill === undefined) {
        throw new RangeError(
          `Cannot give priority to skill ${
            JSON.stringify(name)
          }: no such skill`,
        );
      }
      return skill;
    });
    const enumSchema = schemaOf([...this.#byName.keys()].sort());
    this.#enumSchema = enumSchema;
    const schemaChars = JSON.stringify(enumSchema).length;
    // Measured entry by entry while it may fit (9,000 skills need not all be
    // formatted to know they do not); with a catalog maxChars, as formatted.
    let wholeDescription: string | undefined;
    let wholeChars = options.render("").length + schemaChars +
      CATALOG_WRAPPER_CHARS + 2;
    if (options.format.maxChars === undefined) {
      for (const skill of skills) {
        if (wholeChars > this.budget) break;
        wholeChars += this.#sizeOf(skill);
      }
    }
    if (wholeChars <= this.budget || options.format.maxChars !== undefined) {
      wholeDescription = options.render(formatCatalog(skills, this.#format()));
      wholeChars = wholeDescription.length + schemaChars;
      this.#wholeChars = wholeChars;
    }
    this.whole = wholeDescription !== undefined && wholeChars <= this.budget;
    this.searchOffered = options.search ?? !this.whole;
    if (this.whole) {
      this.inputSchema = enumSchema;
      this.#description = wholeDescription!;
      this.#listed = skills;
    } else {
      this.inputSchema = schemaOf(undefined);
      this.#fixedRoom(); // throws now when the budget cannot hold the tool
    }
  }

  /**
   * What the description and input schema would take with every skill listed
   * (formatted on first use when over the budget).
   */
  get wholeChars(): number {
    return this.#wholeChars ??= this.#options.render(
      formatCatalog(this.#skills, this.#format()),
    ).length + JSON.stringify(this.#enumSchema).length;
  }

  /** The description: the tool's text and the listing. */
  get description(): string {
    return this.#description ??= this.#render();
  }

  /** The skills listed now. */
  get listed(): readonly Skill[] {
    this.description;
    return this.#listed;
  }

  /** The characters the description and input schema take now. */
  get chars(): number {
    return this.description.length + JSON.stringify(this.inputSchema).length;
  }

  /**
   * Records a call of a skill: the most recently used skills come right after
   * the priority ones. The description changes only when this brings a skill
   * outside the listing into it.
   *
   * @param skill The skill called.
   */
  used(skill: Skill): void {
    if (this.whole) return;
    const at = this.#recent.indexOf(skill);
    if (at === 0) return;
    if (at > 0) this.#recent.splice(at, 1);
    this.#recent.unshift(skill);
    if (!this.#listed.includes(skill)) this.#description = undefined;
  }

  /** How the listing stands against the budget. */
  usage(): CatalogUsage {
    const listed = this.listed;
    const kept = new Set(listed);
    return {
      budget: this.budget,
      wholeChars: this.wholeChars,
      whole: this.whole,
      chars: this.chars,
      listed: listed.map((skill) => skill.name),
      outside: this.#skills.filter((skill) => !kept.has(skill)).map((skill) =>
        skill.name
      ),
    };
  }

  #sizeOf(skill: Skill): number {
    let size = this.#sizes.get(skill);
    if (size === undefined) {
      size = catalogEntrySize(skill, this.#format());
      this.#sizes.set(skill, size);
    }
    return size;
  }

  #format(): FormatCatalogOptions {
    const format = this.#options.format;
    return {
      ...format,
      maxChars: format.maxChars ?? Number.MAX_SAFE_INTEGER,
      maxDescriptionChars: format.maxDescriptionChars ??
        CATALOG_DESCRIPTION_CAP,
    };
  }

  /** The room left for the catalog once the tool's own text is counted. */
  #fixedRoom(): number {
    const fixed = this.#options.render(this.#note(this.#skills.length)).length +
      JSON.stringify(this.inputSchema).length;
    // Less the blank line between the entries and the note.
    const room = this.budget - fixed - 2;
    if (room < 0) {
      throw new RangeError(
        `Cannot build the skill tool with catalogBudget "${this.budget}": the tool's own text takes ${fixed} characters without any skill listed; give at least that`,
      );
    }
    return room;
  }

  #note(unlisted: number): string {
    const more = `${unlisted} more skill${unlisted === 1 ? " is" : "s are"}`;
    return this.searchOffered
      ? `${more} not listed here: find them with the skill_search tool (by what the task needs), then call this tool with the exact name.`
      : `${more} not listed here; this tool loads any of them by its exact name.`;
  }

  #render(): string {
    const format = this.#format();
    const order = [...this.#priority, ...this.#recent, ...this.#skills];
    let room = this.#fixedRoom();
    for (;;) {
      const fitted = fitCatalog(this.#skills, {
        ...format,
        room,
        order,
        sizeOf: (skill) => this.#sizeOf(skill),
      });
      const note = this.#note(fitted.unlisted.length);
      const text = this.#options.render(
        fitted.text ? `${fitted.text}\n\n${note}` : note,
      );
      const over = text.length + JSON.stringify(this.inputSchema).length -
        this.budget;
      // A description function may not grow with its catalog as a template
      // does: shrink the room until the whole fits.
      if (over <= 0 || fitted.listed.length === 0) {
        this.#listed = fitted.listed;
        return text;
      }
      room = Math.max(0, room - Math.ceil(over / 2));
    }
  }
}

function schemaOf(names: readonly string[] | undefined): JsonSchema {
  return {
    type: "object",
    properties: {
      name: names
        ? { type: "string", enum: names, description: NAME_DESCRIPTION }
        : { type: "string", minLength: 1, description: NAME_DESCRIPTION_OPEN },
    },
    required: ["name"],
    additionalProperties: false,
  };
}
