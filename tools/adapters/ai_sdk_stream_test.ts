import {
  assert,
  assertEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { buildSkillTools } from "../builder.ts";
import { AISDKToolError, toAISDKStreamingTools } from "./ai_sdk.ts";

Deno.test("AI SDK streaming tools: preliminary results carry the output so far, redacted; a failure throws after them", async () => {
  const secret = "stream-s3cr3t-value-1";
  await using runtime = new LocalSkillRuntime({ env: { TOKEN: secret } });
  await using set = await buildSkillTools({ runtime, tools: ["bash"] });
  const tools = toAISDKStreamingTools(set.tools);
  const seen: string[] = [];
  const started = performance.now();
  const times: number[] = [];
  for await (
    const value of tools.bash!.execute({
      command: 'echo "one $TOKEN"; sleep 0.5; echo two',
    }, { toolCallId: "c1" })
  ) {
    seen.push(value);
    times.push(performance.now() - started);
  }
  assertEquals(seen[0], "one [redacted]\n");
  assert(times[0]! < 450, `first preview after ${times[0]} ms`);
  assertEquals(seen.at(-1), "one [redacted]\ntwo\n");
  assert(!seen.join("").includes(secret));

  const previews: string[] = [];
  await assertRejects(
    async () => {
      for await (
        const value of tools.bash!.execute({ command: "echo partial; exit 2" })
      ) previews.push(value);
    },
    AISDKToolError,
    "Exit code: 2",
  );
  assertEquals(previews, ["partial\n"]);
});
