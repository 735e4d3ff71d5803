import { assertEquals } from "../tests/helpers/assert.ts";
import * as skill from "./mod.ts";

Deno.test("skill/mod.ts exports the public skills API", () => {
  for (
    const name of [
      "parseSkillMd",
      "loadSkills",
      "findSkillFolders",
      "selectSkills",
      "validateSkill",
      "formatCatalog",
    ] as const
  ) {
    assertEquals(typeof skill[name], "function", name);
  }
  assertEquals(skill.DEFAULT_CATALOG_BUDGET, 16_000);
  assertEquals(skill.DEFAULT_MAX_DEPTH, 5);
});
