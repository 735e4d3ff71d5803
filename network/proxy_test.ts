import { assertEquals } from "../tests/helpers/assert.ts";
import { runDenoScript } from "../tests/helpers/testing.ts";

Deno.test("proxy: a program that forgets its proxy after an intercepted request still ends", async () => {
  const script = new URL("./testdata/forgotten_proxy.ts", import.meta.url)
    .pathname;
  const started = Date.now();
  const child = runDenoScript(script, ["--allow-all"]);
  const timeout = new Promise<"timeout">((resolve) => {
    const timer = setTimeout(() => resolve("timeout"), 30_000);
    child.finally(() => clearTimeout(timer));
  });
  const result = await Promise.race([child, timeout]);
  if (result === "timeout") {
    throw new Error(`The program did not end within 30 s`);
  }
  assertEquals(result.stdout.trim(), "saw real", result.stderr);
  assertEquals(result.code, 0);
  console.log(`ended after ${Date.now() - started} ms`);
});
