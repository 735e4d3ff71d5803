// A stdio MCP server for the tests: the skill tools over the skills in the
// folder given as first argument, with the skills as prompts and resources.
import { buildSkillTools } from "../../builder.ts";
import { serveMcp } from "../mod.ts";
import { SMALL_LIMIT } from "./skill_files.ts";

await using built = await buildSkillTools({ skills: Deno.args[0]! });
await serveMcp(built.tools, {
  skills: built.skills,
  maxResourceBytes: SMALL_LIMIT,
});
