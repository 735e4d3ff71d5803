/**
 * Another process of an E2B conversation (for the conversation tests): opens
 * the Deno KV store, prepares a skill in the conversation and prints the
 * sandbox id and the skill's folder, then exits (closing pauses the sandbox).
 *
 * Usage: deno run -A --unstable-kv conversation_process.ts <url> <apiKey>
 * <kvPath> <conversationsRoot> <conversationId> <skillFolder> <skillName>
 *
 * @module
 */
import { E2BSkillRuntime } from "../runtime.ts";
import { KvConversationStore } from "../../stores/conversation_store.ts";
import { SkillRuntimeConfig } from "../../config.ts";

const [url, apiKey, kvPath, conversationsRoot, conversationId, basePath, name] =
  Deno.args as [string, string, string, string, string, string, string];
const store = await KvConversationStore.open(kvPath);
try {
  await using runtime = new E2BSkillRuntime({
    apiKey,
    baseUrl: url,
    sandboxUrl: url,
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
