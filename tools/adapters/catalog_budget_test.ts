import {
  assert,
  assertEquals,
  assertLessOrEqual,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { buildSkillTools } from "../builder.ts";
import { manySkillQuery, manySkills } from "../testdata/many_skills.ts";
import { toAISDKTools } from "./ai_sdk.ts";
import { toAnthropicTools } from "./anthropic.ts";
import { dispatchToolCall } from "./dispatch.ts";
import { toOpenAIChatTools, toOpenAIResponsesTools } from "./openai.ts";

Deno.test("with 9,000 skills every adapter sends a bounded skill tool and skill_search, and both answer through them", async () => {
  await using runtime = new LocalSkillRuntime();
  await using set = await buildSkillTools({
    skills: manySkills(9_000),
    runtime,
  });
  const shapes: Record<string, unknown> = {
    openaiChat: toOpenAIChatTools(set.tools),
    openaiChatStrict: toOpenAIChatTools(set.tools, { strict: true }),
    openaiResponses: toOpenAIResponsesTools(set.tools),
    anthropic: toAnthropicTools(set.tools),
    aiSdk: Object.fromEntries(
      Object.entries(toAISDKTools(set.tools)).map(([name, tool]) => [
        name,
        { description: tool.description, inputSchema: tool.inputSchema },
      ]),
    ),
  };
  for (const [shape, definitions] of Object.entries(shapes)) {
    const json = JSON.stringify(definitions);
    // Was 1.4 million characters for the tools of 9,000 skills.
    assertLessOrEqual(json.length, 25_000, shape);
    assertStringIncludes(json, '"skill_search"', shape);
    // The skill tool's name is a plain string, not an enum of 9,000 names.
    assertStringIncludes(json, "The exact name of the skill to load", shape);
    assert(!/"enum":\["[a-z]+-[a-z]+"/.test(json), shape);
  }
  // OpenAI strict mode: skill_search's optional limit becomes nullable, and
  // null means "not given".
  const strict = toOpenAIChatTools(set.tools, { strict: true })
    .find((t) => t.function.name === "skill_search")!;
  assertEquals(strict.function.parameters.required, ["query", "limit"]);
  const found = await dispatchToolCall(set.tools, {
    name: "skill_search",
    arguments: JSON.stringify({ query: manySkillQuery(4_321), limit: null }),
  });
  assertEquals(found.isError, false, found.text);
  assertStringIncludes(found.text, "1. ");
  const typo = await dispatchToolCall(set.tools, {
    name: "skill",
    arguments: JSON.stringify({ name: "invoice-chrt" }),
  });
  assertEquals(typo.isError, true);
  assertStringIncludes(typo.text, "invoice-chart");
});
