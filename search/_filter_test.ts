import { assert, assertEquals, assertFalse } from "../tests/helpers/assert.ts";
import { findNames, makeFilters } from "./_filter.ts";

Deno.test("makeFilters() skips heavy folders and applies glob and type", () => {
  const filters = makeFilters({ glob: "*.ts", extensions: ["ts"] });
  assertFalse(filters.descend("a/node_modules", "node_modules"));
  assert(filters.descend("src", "src"));
  assert(filters.include("src/a.ts", "a.ts"));
  assertFalse(filters.include("src/a.js", "a.js"));
  const negated = makeFilters({ glob: "!docs/", extensions: null });
  assertFalse(negated.descend("docs", "docs"));
  assert(negated.include("docs", "docs"));
});

Deno.test("findNames() narrows to a superset of what the glob keeps", () => {
  assertEquals(findNames({ glob: "**/*.ts", extensions: null }), ["*.ts"]);
  assertEquals(findNames({ glob: "*.{ts,tsx}", extensions: null }), [
    "*.ts",
    "*.tsx",
  ]);
  assertEquals(findNames({ glob: "src/a?[0-9]b.md", extensions: null }), [
    "a*b.md",
  ]);
  assertEquals(findNames({ glob: "Makefile", extensions: null }), [
    "Makefile",
  ]);
  assertEquals(findNames({ glob: null, extensions: ["py", "pyi"] }), [
    "*.py",
    "*.pyi",
  ]);
  // No safe narrowing: every file stays.
  for (
    const glob of ["!*.ts", "docs/", "src/**", "*", "\\*.ts", "{a/b,c}.ts"]
  ) {
    assertEquals(findNames({ glob, extensions: null }), null, glob);
  }
  // Every name the glob keeps passes one of the patterns.
  const glob = "**/x{a,b?}*.{md,txt}";
  const filters = makeFilters({ glob, extensions: null });
  const names = findNames({ glob, extensions: null })!;
  const fnmatch = (pattern: string, name: string): boolean =>
    new RegExp(
      `^${
        pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
          .join(".*")
      }$`,
      "s",
    ).test(name);
  for (const name of ["xa1.md", "xbé2.txt", "xb_9.md"]) {
    assert(filters.include(`d/${name}`, name), name);
    assert(names.some((p) => fnmatch(p, name)), name);
  }
});
