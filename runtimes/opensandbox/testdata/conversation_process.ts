/**
 * Another process of a conversation (for the conversation tests): opens the
 * Deno KV store, prepares a skill in the conversation on the given server and
 * prints the sandbox id, then exits without destroying anything.
 *
 * Usage: deno run -A --unstable-kv conversation_process.ts <baseUrl> <apiKey>
 * <kvPath> <conversationsRoot> <conversationId> <skillFolder> <skillName>
 *
 * @module
 */
import { OpenSandboxSkillRuntime } from "../runtime.ts";
import { KvConversationStore } from "../../stores/conversation_store.ts";
import { SkillRuntimeConfig } from "../../config.ts";

const [
  baseUrl,
  apiKey,
  kvPath,
  conversationsRoot,
  conversationId,
  basePath,
  name,
] = Deno.args as [string, string, string, string, string, string, string];
const store = await KvConversationStore.open(kvPath);
try {
  await using runtime = new OpenSandboxSkillRuntime({
    baseUrl,
    apiKey,
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
  console.log(JSON.stringify({
    sandboxId: runtime.sandboxId,
    basePath: prepared!.basePath,
  }));
} finally {
  store.close();
}
