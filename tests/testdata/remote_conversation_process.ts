/**
 * Another process of a remote conversation (for the conversation tests of
 * the OpenSandbox, E2B and Vercel kinds): opens the Deno KV store, prepares a
 * skill in the conversation on the given test server and prints the sandbox
 * id and the skill's folder (E2B and Vercel: and the output of a command),
 * then exits without destroying anything (closing pauses an E2B sandbox and
 * stops a Vercel session).
 *
 * Usage: deno run -A --unstable-kv remote_conversation_process.ts
 * <opensandbox|e2b|vercel> <url> <apiKey> <kvPath> <conversationsRoot>
 * <conversationId> <skillFolder> <skillName>
 *
 * @module
 */
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/runtime.ts";
import { E2BSkillRuntime } from "../../runtimes/e2b/runtime.ts";
import { VercelSandboxSkillRuntime } from "../../runtimes/vercel/runtime.ts";
import { KvConversationStore } from "../../runtimes/stores/conversation_store.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";

const [
  kind,
  url,
  apiKey,
  kvPath,
  conversationsRoot,
  conversationId,
  basePath,
  name,
] = Deno.args as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await KvConversationStore.open(kvPath);
try {
  const common = { apiKey, conversationId, conversationsRoot, store };
  await using runtime = kind === "opensandbox"
    ? new OpenSandboxSkillRuntime({ ...common, baseUrl: url })
    : kind === "e2b"
    ? new E2BSkillRuntime({ ...common, baseUrl: url, sandboxUrl: url })
    : kind === "vercel"
    ? new VercelSandboxSkillRuntime({
      ...common,
      teamId: "team_test",
      projectId: "prj_test",
      baseUrl: url,
    })
    : (() => {
      throw new TypeError(`Cannot run the kind "${kind}": not a kind here`);
    })();
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
  const ran = kind === "opensandbox" ? undefined : await runtime.execute({
    command: "cat /proc/self/status >/dev/null; echo ok",
  });
  console.log(JSON.stringify({
    sandboxId: runtime.sandboxId,
    basePath: prepared!.basePath,
    ...(ran ? { ran: ran.stdout.trim() } : {}),
  }));
} finally {
  store.close();
}
