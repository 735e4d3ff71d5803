/**
 * The key of a skill in a runtime's tables.
 *
 * @module
 */
import type { Skill } from "../skill/types.ts";

/**
 * The key of a skill in a runtime's tables: its name and folder (two skills
 * of one name from different folders are different skills).
 *
 * @param skill The skill.
 * @returns The key.
 */
export function skillKey(skill: Pick<Skill, "name" | "basePath">): string {
  return `${skill.name}\u0000${skill.basePath}`;
}
