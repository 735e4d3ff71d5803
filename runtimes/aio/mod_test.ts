import { assertEquals } from "../../tests/helpers/assert.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";

Deno.test("./aio imports, builds runtimes and the tools and closes them without any permission", async () => {
  const script = new URL(
    "../../tests/testdata/aio_import_without_permissions.ts",
    import.meta.url,
  ).pathname;
  const result = await runDenoScript(script, []);
  assertEquals(result.code, 0, result.stderr);
  assertEquals(
    result.stdout,
    "ok /home/gem /home/gem/conversations/edge-1\n",
  );
});
