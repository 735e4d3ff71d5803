import { assertEquals } from "@std/assert";
import { commandSucceeds } from "./command.ts";

Deno.test("commandSucceeds answers for a program that runs, fails, or is missing, without throwing", async () => {
  assertEquals(await commandSucceeds("bash", ["-c", "exit 0"]), true);
  assertEquals(await commandSucceeds("bash", ["-c", "exit 3"]), false);
  assertEquals(await commandSucceeds("skillrun-no-such-program"), false);
  assertEquals(await commandSucceeds("/no/such/dir/program"), false);
});
