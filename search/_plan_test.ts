import {
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../_internal/assert.ts";
import { GrepCollector, planGrep } from "./_plan.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";

Deno.test("planGrep() checks numbers and the output mode", async () => {
  const fs = new LocalFileSystem({ root: Deno.cwd() });
  const range = await assertRejects(() =>
    planGrep(fs, { pattern: "a", context: -1 }, true)
  );
  assertInstanceOf(range, RangeError);
  assertStringIncludes((range as Error).message, 'Invalid context "-1"');
  const mode = await assertRejects(() =>
    planGrep(fs, { pattern: "a", outputMode: "lines" as "content" }, true)
  );
  assertStringIncludes((mode as Error).message, 'Invalid output mode "lines"');
});

Deno.test("GrepCollector applies offset, head limit and counts the rest", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const plan = await planGrep(
      new LocalFileSystem({ root: dir }),
      { pattern: "a", offset: 1, headLimit: 2 },
      true,
    );
    const collector = new GrepCollector(plan);
    for (const path of ["a", "b", "c", "d"]) {
      collector.add({ path, count: 1, lines: [] });
    }
    const result = collector.result("fallback");
    assertEquals(result.mode === "files_with_matches" ? result.files : [], [
      `${dir}/b`,
      `${dir}/c`,
    ]);
    assertEquals(result.totalEntries, 4);
    assertEquals(result.headLimitReached, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
