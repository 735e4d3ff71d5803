import { assertEquals, assertGreater } from "../_internal/assert.ts";

const ROOT = new URL("../", import.meta.url);

async function importWithoutPermissions(entry: string): Promise<number> {
  const code =
    `const m = await import(${JSON.stringify(new URL(entry, ROOT).href)});` +
    "console.log(Object.keys(m).length);";
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-prompt", code],
    cwd: new URL(".", ROOT).pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assertEquals(output.code, 0, `importing ${entry} failed:\n${stderr}`);
  return Number(new TextDecoder().decode(output.stdout).trim());
}

Deno.test("importing the main entry point needs no permission", async () => {
  assertGreater(await importWithoutPermissions("mod.ts"), 50);
});

Deno.test("importing the MCP entry point needs no permission", async () => {
  assertGreater(await importWithoutPermissions("tools/mcp/mod.ts"), 0);
});
