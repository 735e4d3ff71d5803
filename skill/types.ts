/**
 * The shape of a loaded skill.
 *
 * @module
 */

/** A skill loaded from a folder with a `SKILL.md`. Immutable. */
export interface Skill {
  /** The skill's name from its front matter, NFKC-normalised and trimmed. */
  readonly name: string;
  /** What the skill does and when to use it. */
  readonly description: string;
  /** Absolute path of the skill's folder (where its `SKILL.md` is). */
  readonly basePath: string;
  /** Absolute path of its `SKILL.md`. */
  readonly location: string;
  /** The Markdown body after the front matter: the instructions for the model. */
  readonly instructions: string;
  /** The front matter as parsed (every scalar a string). */
  readonly frontMatter: Readonly<Record<string, unknown>>;
  /** The `license` field, when present. */
  readonly license?: string;
  /** The `compatibility` field, when present. */
  readonly compatibility?: string;
  /** The `metadata` map, every value a string. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** The `allowed-tools` field, split into tool names. */
  readonly allowedTools?: readonly string[];
  /** What lenient loading noticed but accepted. Never printed by the library. */
  readonly warnings: readonly string[];
}
