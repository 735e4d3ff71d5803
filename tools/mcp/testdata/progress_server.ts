// A stdio MCP server for the progress and cancellation tests: the skill tools
// over the skills in the folder given as first argument; the skill "alpha"
// has a secret and a bootstrap command.
import { buildSkillTools } from "../../builder.ts";
import { serveMcp } from "../mod.ts";

await using built = await buildSkillTools({
  skills: Deno.args[0]!,
  configs: {
    alpha: { env: { ALPHA_TOKEN: Deno.args[1]! }, bootstrap: ["echo booting"] },
  },
});
await serveMcp(built.tools, { skills: built.skills });
