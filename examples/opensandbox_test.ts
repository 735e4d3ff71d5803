import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../_internal/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { runOpenSandboxExample } from "./opensandbox.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));

Deno.test("the OpenSandbox example runs a skill in a conversation and resumes it without uploading again", async () => {
  const lines: string[] = [];
  const result = await runOpenSandboxExample({
    print: (line) => lines.push(line),
  });
  const transcript = lines.join("\n");
  assertEquals(result.errors, 0, transcript);
  assert(result.testServer);
  assertEquals(result.resumedSandboxId, result.sandboxId);
  assertEquals(result.uploadsOnResume, 0);
  assertEquals(result.reportTitle, "# Q3 sales by product");
  assertStringIncludes(transcript, "→ skill ");
  // Configured values are secrets: the tools' outputs show them redacted.
  assertStringIncludes(transcript, "[redacted]");
});

Deno.test("the OpenSandbox example runs as a script and exits 0", async () => {
  // No OPEN_SANDBOX_URL: the example starts its test server.
  const env: Record<string, string> = {
    NO_COLOR: "1",
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  };
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/opensandbox.ts"],
    cwd: repo,
    env,
    clearEnv: true,
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  assertEquals(
    output.code,
    0,
    `${stdout}\n${new TextDecoder().decode(output.stderr)}`,
  );
  assertStringIncludes(stdout, "uploads on resume: 0");
});
