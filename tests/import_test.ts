import { assertEquals, assertGreater } from "../_internal/assert.ts";
import { runDenoScript } from "../_internal/testing.ts";

const ROOT = new URL("../", import.meta.url);

/** Imports an entry point in a `deno run` with no permission flag at all. */
async function importWithoutPermissions(entry: string): Promise<number> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/import.ts`;
    await Deno.writeTextFile(
      script,
      `const m = await import(${
        JSON.stringify(new URL(entry, ROOT).href)
      });\n` +
        "console.log(Object.keys(m).length);\n",
    );
    const { code, stdout, stderr } = await runDenoScript(script, []);
    assertEquals(code, 0, `importing ${entry} failed:\n${stderr}`);
    return Number(stdout.trim());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("importing the main entry point needs no permission", async () => {
  assertGreater(await importWithoutPermissions("mod.ts"), 50);
});

Deno.test("importing the MCP entry point needs no permission", async () => {
  assertGreater(await importWithoutPermissions("tools/mcp/mod.ts"), 0);
});

Deno.test("a permission check in this harness does fail without flags", async () => {
  // Guards the harness itself: the same run must refuse what needs a permission.
  const error = await importWithoutPermissions("tests/testdata/needs_read.ts")
    .catch((e) => e);
  assertEquals(error instanceof Error, true);
});
