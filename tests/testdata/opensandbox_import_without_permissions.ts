/**
 * Imports `./opensandbox`, builds a runtime and the tools, closes it, all
 * without any permission (run with no flag): nothing touches the network,
 * the disk or the environment before real use.
 *
 * @module
 */
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/mod.ts";
import { buildSkillTools } from "../../mod.ts";

const runtime = new OpenSandboxSkillRuntime({
  baseUrl: "https://sandbox.example.com",
  apiKey: "key-never-used",
  conversationId: "edge-1",
});
const built = await buildSkillTools({ skills: [], runtime });
await built.close();
await runtime.close();
console.log(`ok ${runtime.cwd}`);
