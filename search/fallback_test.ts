import { runDenoScript } from "../_internal/testing.ts";
import { assertEquals } from "../_internal/assert.ts";
import { FallbackSearch } from "./fallback.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

engineSuite(
  "FallbackSearch (local paths)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ root: root }),
      local: true,
    }),
  { backtracks: true },
);

engineSuite(
  "FallbackSearch (file system interface)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ root: root }),
      local: false,
    }),
  { backtracks: true },
);

Deno.test("FallbackSearch runs under --allow-read narrowed to the searched folder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeTextFile(`${dir}/data/a.txt`, "one\nneedle two\n");
    const script = `${dir}/script.ts`;
    await Deno.writeTextFile(
      script,
      `import { FallbackSearch } from ${
        JSON.stringify(new URL("./fallback.ts", import.meta.url).href)
      };
import { LocalFileSystem } from ${
        JSON.stringify(
          new URL("../runtimes/local/fs.ts", import.meta.url).href,
        )
      };
const search = new FallbackSearch({ fs: new LocalFileSystem({ root: ${
        JSON.stringify(`${dir}/data`)
      } }), local: true });
const result = await search.grep({ pattern: "needle", outputMode: "count" });
console.log(JSON.stringify(result.mode === "count" ? result.counts : null));
`,
    );
    const { code, stdout, stderr } = await runDenoScript(script, [
      `--allow-read=${dir}/data`,
    ]);
    assertEquals(code, 0, stderr);
    assertEquals(
      stdout.trim(),
      JSON.stringify([{ path: `${dir}/data/a.txt`, count: 1 }]),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
