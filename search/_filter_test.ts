import { assert, assertFalse } from "../_internal/assert.ts";
import { makeFilters } from "./_filter.ts";

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
