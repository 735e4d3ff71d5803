import { assertEquals } from "../../tests/helpers/assert.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";

Deno.test("./opensandbox imports, builds a runtime and the tools and closes it without any permission", async () => {
  const script = new URL(
    "../../tests/testdata/opensandbox_import_without_permissions.ts",
    import.meta.url,
  ).pathname;
  const result = await runDenoScript(script, []);
  assertEquals(result.code, 0, result.stderr);
  assertEquals(result.stdout, "ok /workspace/conversations/edge-1\n");
});
