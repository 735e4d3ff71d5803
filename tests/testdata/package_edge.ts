/**
 * An edge-like process for tests/package_sandbox_test.ts: run with network
 * only (no read, write or env permission), it loads a skill from a package
 * URL and prepares it in an OpenSandbox server straight from the package.
 * Arguments: package URL, digest, server URL, API key, skills root.
 * Prints the prepared folder.
 */
import { loadPackageSkill } from "../../package/mod.ts";
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/mod.ts";

const [url, digest, baseUrl, apiKey, skillsRoot] = Deno.args as [
  string,
  string,
  string,
  string,
  string,
];
const skill = await loadPackageSkill({ url, digest });
await using runtime = new OpenSandboxSkillRuntime({
  baseUrl,
  apiKey,
  cwd: skillsRoot,
  skillsRoot,
});
const [prepared] = await runtime.prepare({ skills: [{ skill }] });
console.log(prepared!.basePath);
