/**
 * The layering rule of `layers.json`, checked on every relative import of
 * every `.ts` file (tests, test helpers and doc examples included).
 *
 * @module
 */
import { assert, assertEquals } from "./helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const ROOT = hostPath.fromFileUrl(new URL("../", import.meta.url));

interface Layers {
  readonly parts: Record<string, { paths: string[]; imports: string[] }>;
  /** Parts a test file (`*_test.ts`) may import besides its own part's. */
  readonly testImports: string[];
  readonly exceptions: Record<string, string>;
}

const layers = JSON.parse(
  await Deno.readTextFile(hostPath.join(ROOT, "layers.json")),
) as Layers;

/** The part a file (relative to the root, `/`-separated) belongs to. */
function partOf(file: string, rules: Layers = layers): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, part] of Object.entries(rules.parts)) {
    for (const prefix of part.paths) {
      const matches = prefix.endsWith("/")
        ? file.startsWith(prefix)
        : file === prefix;
      if (matches && (!best || prefix.length > best[1])) {
        best = [name, prefix.length];
      }
    }
  }
  return best?.[0];
}

// `import ... from "x"`, `export ... from "x"`, `import "x"`, `import("x")`,
// also inside doc comments (their examples run as tests).
const IMPORT =
  /\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const path = hostPath.join(dir, entry.name);
    if (entry.isDirectory) yield* sources(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/** Every import that crosses parts, as `from -> to`. */
async function crossings(): Promise<{ file: string; edge: string }[]> {
  const found: { file: string; edge: string }[] = [];
  for await (const path of sources(ROOT)) {
    const file = hostPath.relative(ROOT, path).replaceAll("\\", "/");
    const text = await Deno.readTextFile(path);
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!;
      if (!specifier.startsWith(".")) continue;
      const target = hostPath.relative(
        ROOT,
        hostPath.resolve(hostPath.dirname(path), specifier),
      ).replaceAll("\\", "/");
      if (!target.endsWith(".ts")) continue; // deno.json and other data
      found.push({ file, edge: `${file} -> ${target}` });
    }
  }
  return found;
}

Deno.test("layers: every file belongs to a part, and every part named in layers.json exists", async () => {
  const names = new Set(Object.keys(layers.parts));
  for (const [name, part] of Object.entries(layers.parts)) {
    for (const imported of part.imports) {
      assert(imported === "*" || names.has(imported), `${name}: ${imported}`);
    }
  }
  for (const imported of layers.testImports) {
    assert(names.has(imported), `testImports: ${imported}`);
  }
  const orphans: string[] = [];
  for await (const path of sources(ROOT)) {
    const file = hostPath.relative(ROOT, path).replaceAll("\\", "/");
    if (partOf(file) === undefined) orphans.push(file);
  }
  assertEquals(orphans, [], "files in no part of layers.json");
});

/**
 * The imports among `edges` (`from -> to`, root-relative) that `rules`
 * forbids, and the exceptions of `rules` they used.
 */
function check(
  rules: Layers,
  edges: readonly string[],
): { broken: string[]; seen: Set<string> } {
  const broken: string[] = [];
  const seen = new Set<string>();
  for (const edge of edges) {
    const [file, target] = edge.split(" -> ") as [string, string];
    const from = partOf(file, rules)!;
    const to = partOf(target, rules);
    if (to === undefined || from === to) continue;
    const allowed = rules.parts[from]!.imports;
    if (allowed.includes("*") || allowed.includes(to)) continue;
    if (file.endsWith("_test.ts") && rules.testImports.includes(to)) continue;
    if (edge in rules.exceptions) {
      seen.add(edge);
      continue;
    }
    broken.push(`${edge} (${from} may not import ${to})`);
  }
  return { broken, seen };
}

Deno.test("layers: every import goes in an allowed direction (tests included)", async () => {
  const edges = (await crossings()).map(({ edge }) => edge);
  assert(edges.length > 500, `only ${edges.length} imports found`);
  const { broken, seen } = check(layers, edges);
  assertEquals(broken, [], "imports against layers.json");
  const stale = Object.keys(layers.exceptions).filter((e) => !seen.has(e));
  assertEquals(stale, [], "exceptions in layers.json that no longer exist");
});

Deno.test("layers: test helpers and test servers are for test files only", () => {
  const edges = [
    "tools/read_test.ts -> tests/helpers/tools.ts",
    "runtimes/e2b/runtime_test.ts -> tests/servers/e2b.ts",
    "tools/read.ts -> tests/helpers/tools.ts",
    "runtimes/e2b/runtime.ts -> tests/servers/e2b.ts",
    "tools/_fixture.ts -> tests/helpers/tools.ts",
    "tests/helpers/tools.ts -> runtimes/e2b/mod.ts",
  ];
  assertEquals(check(layers, edges).broken, [
    "tools/read.ts -> tests/helpers/tools.ts (tools may not import test-helpers)",
    "runtimes/e2b/runtime.ts -> tests/servers/e2b.ts (runtimes/e2b may not import test-servers)",
    "tools/_fixture.ts -> tests/helpers/tools.ts (tools may not import test-helpers)",
  ]);
  // The same product import, once listed as an exception, passes and counts.
  const excused = "tools/read.ts -> tests/helpers/tools.ts";
  const { broken, seen } = check(
    { ...layers, exceptions: { [excused]: "why" } },
    [excused],
  );
  assertEquals([broken, [...seen]], [[], [excused]]);
});
