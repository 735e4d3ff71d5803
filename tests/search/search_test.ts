import {
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../helpers/assert.ts";
import { detectRipgrep } from "../../search/ripgrep.ts";
import { createSearch } from "../../search/search.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";

Deno.test("createSearch() uses ripgrep when local and installed", async () => {
  const search = createSearch({
    fs: new LocalFileSystem({ cwd: Deno.cwd() }),
    local: true,
  });
  const rg = await detectRipgrep();
  if (!rg) {
    console.error(
      "search_test.ts: ripgrep (rg) is not installed: checking the fallback choice instead",
    );
  }
  assertEquals(
    (await search.glob({ pattern: "*.md", path: "skill" })).engine,
    rg ? "ripgrep" : "fallback",
  );
});

Deno.test("createSearch() falls back silently when ripgrep is missing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "needle\n");
    const search = createSearch({
      fs: new LocalFileSystem({ cwd: dir }),
      local: true,
      ripgrepPath: "/nonexistent/rg-skillrun",
    });
    assertEquals(
      (await search.glob({ pattern: "*.txt" })).engine,
      "fallback",
    );
    const result = await search.grep({ pattern: "needle" });
    assertEquals(result.engine, "fallback");
    assertEquals(result.mode === "files_with_matches" ? result.files : [], [
      `${dir}/a.txt`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createSearch() with useRipgrep true fails clearly when ripgrep is missing", async () => {
  const search = createSearch({
    fs: new LocalFileSystem({ cwd: Deno.cwd() }),
    local: true,
    useRipgrep: true,
    ripgrepPath: "/nonexistent/rg-skillrun",
  });
  const error = await assertRejects(() => search.grep({ pattern: "x" }));
  assertStringIncludes(
    (error as Error).message,
    'Cannot use ripgrep "/nonexistent/rg-skillrun"',
  );
});

Deno.test("createSearch() uses the fallback for a file system that is not local", async () => {
  const search = createSearch({
    fs: new LocalFileSystem({ cwd: Deno.cwd() }),
  });
  assertEquals(
    (await search.glob({ pattern: "*.md", path: "skill" })).engine,
    "fallback",
  );
  assertThrows(
    () =>
      createSearch({
        fs: new LocalFileSystem({ cwd: Deno.cwd() }),
        useRipgrep: true,
      }),
    TypeError,
    "ripgrep needs a local file system",
  );
});
