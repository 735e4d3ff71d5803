import { assert, assertEquals } from "../_internal/assert.ts";
import { detectRipgrep, RipgrepSearch } from "./ripgrep.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

const rg = await detectRipgrep();
if (!rg) {
  console.error(
    "ripgrep_test.ts: ripgrep (rg) is not installed: the RipgrepSearch tests are ignored; install ripgrep to run them",
  );
}

engineSuite(
  "RipgrepSearch",
  (root) => new RipgrepSearch({ fs: new LocalFileSystem({ root: root }) }),
  { backtracks: false, ignore: !rg },
);

Deno.test("detectRipgrep() reports null for a command that does not exist", async () => {
  assertEquals(await detectRipgrep("/nonexistent/rg-skillrun"), null);
});

Deno.test({
  name: "RipgrepSearch: grep past its time limit kills rg and says so",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const line = "abcdefghij".repeat(10) + "\n";
      await Deno.writeTextFile(`${dir}/big.txt`, line.repeat(600_000));
      const search = new RipgrepSearch({
        fs: new LocalFileSystem({ root: dir }),
      });
      let message = "";
      try {
        await search.grep({
          pattern: "\\w+j$",
          outputMode: "count",
          timeoutMs: 5,
        });
      } catch (error) {
        message = `${(error as Error).name}: ${(error as Error).message}`;
      }
      assert(
        message.startsWith("SearchTimeoutError: ") &&
          message.includes("timed out after 5 ms"),
        message,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
