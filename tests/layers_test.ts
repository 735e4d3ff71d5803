/**
 * The layering rule of `layers.json`, checked on every relative import of
 * every `.ts` file (tests, test helpers and doc examples included).
 *
 * @module
 */
import { assert, assertEquals } from "../_internal/assert.ts";
import { hostPath } from "../_internal/std.ts";

const ROOT = hostPath.fromFileUrl(new URL("../", import.meta.url));

interface Layers {
  readonly parts: Record<string, { paths: string[]; imports: string[] }>;
  readonly exceptions: Record<string, string>;
}

const layers = JSON.parse(
  await Deno.readTextFile(hostPath.join(ROOT, "layers.json")),
) as Layers;

/** The part a file (relative to the root, `/`-separated) belongs to. */
function partOf(file: string): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, part] of Object.entries(layers.parts)) {
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
  const orphans: string[] = [];
  for await (const path of sources(ROOT)) {
    const file = hostPath.relative(ROOT, path).replaceAll("\\", "/");
    if (partOf(file) === undefined) orphans.push(file);
  }
  assertEquals(orphans, [], "files in no part of layers.json");
});

Deno.test("layers: every import goes in an allowed direction (tests included)", async () => {
  const broken: string[] = [];
  const seen = new Set<string>();
  let checked = 0;
  for (const { file, edge } of await crossings()) {
    checked++;
    const target = edge.slice(edge.indexOf(" -> ") + 4);
    const from = partOf(file)!;
    const to = partOf(target);
    if (to === undefined || from === to) continue;
    const allowed = layers.parts[from]!.imports;
    if (allowed.includes("*") || allowed.includes(to)) continue;
    if (edge in layers.exceptions) {
      seen.add(edge);
      continue;
    }
    broken.push(`${edge} (${from} may not import ${to})`);
  }
  assert(checked > 500, `only ${checked} imports found`);
  assertEquals(broken, [], "imports against layers.json");
  const stale = Object.keys(layers.exceptions).filter((e) => !seen.has(e));
  assertEquals(stale, [], "exceptions in layers.json that no longer exist");
});
