/**
 * Another process of a Vercel conversation (for the conversation tests): opens
 * the Deno KV store, prepares a skill in the conversation and prints the
 * sandbox id and the skill's folder, then exits (closing stops its session).
 *
 * Usage: deno run -A --unstable-kv conversation_process.ts <url> <token>
 * <kvPath> <conversationsRoot> <conversationId> <skillFolder> <skillName>
 *
 * @module
 */
import { VercelSandboxSkillRuntime } from "../runtime.ts";
import { KvConversationStore } from "../../stores/conversation_store.ts";
import { SkillRuntimeConfig } from "../../config.ts";

const [url, token, kvPath, conversationsRoot, conversationId, basePath, name] =
  Deno.args as [string, string, string, string, string, string, string];
const store = await KvConversationStore.open(kvPath);
try {
  await using runtime = new VercelSandboxSkillRuntime({
    apiKey: token,
    teamId: "team_test",
    projectId: "prj_test",
    baseUrl: url,
    conversationId,
    conversationsRoot,
    store,
  });
  const [prepared] = await runtime.prepare({
    skills: [{
      skill: {
        name,
        description: "A skill",
        basePath,
        location: `${basePath}/SKILL.md`,
        instructions: "",
        frontMatter: {},
        warnings: [],
      },
      config: new SkillRuntimeConfig({
        bootstrap: ["echo bootstrapped >> bootstrap.log"],
      }),
    }],
  });
  const memory = await runtime.execute({
    command: "cat /proc/self/status >/dev/null; echo ok",
  });
  console.log(JSON.stringify({
    sandboxId: runtime.sandboxId,
    basePath: prepared!.basePath,
    ran: memory.stdout.trim(),
  }));
} finally {
  store.close();
}
