/**
 * The documented differences between the engines' regex dialects
 * (`README.md`): ripgrep reads Rust's syntax, the shell engine and the engine
 * over the file-system interface RE2's (`re2js`; `grep -E` only prefilters).
 */
import { assertEquals, assertRejects } from "../helpers/assert.ts";
import { FallbackSearch } from "../../search/fallback.ts";
import { RipgrepSearch } from "../../search/ripgrep.ts";
import { ShellSearch } from "../../search/shell.ts";
import { bashShell } from "./_shell_testing.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import type { SearchEngine } from "../../search/types.ts";

const HAS_RG = await new Deno.Command("rg", { args: ["--version"] }).output()
  .then((o) => o.success, () => false);

async function withTree(
  fn: (engines: Record<string, SearchEngine>, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.writeTextFile(`${dir}/unicode.txt`, "é\n");
    await Deno.writeTextFile(`${dir}/path.txt`, "see scripts/run.py\n");
    await Deno.writeTextFile(`${dir}/anchors.txt`, "one\nfoo two\n");
    await Deno.writeTextFile(`${dir}/span.txt`, "foo\nbar\n");
    const fs = new LocalFileSystem({ cwd: dir });
    const engines: Record<string, SearchEngine> = {
      fallback: new FallbackSearch({ fs }),
      shell: new ShellSearch({ fs, shell: bashShell(), useRipgrep: false }),
    };
    if (HAS_RG) engines.ripgrep = new RipgrepSearch({ fs });
    await fn(engines, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function files(engine: SearchEngine, pattern: string, dir: string) {
  const result = await engine.grep({ pattern });
  return result.mode === "files_with_matches"
    ? result.files.map((f) => f.slice(dir.length + 1))
    : [];
}

Deno.test("every engine reads what the dialects share alike; \\w is Unicode with ripgrep only", async () => {
  await withTree(async (engines, dir) => {
    for (const [name, engine] of Object.entries(engines)) {
      // Escaped punctuation, \A as a line anchor, no match across lines.
      assertEquals(
        await files(engine, "scripts\\/\\w+\\.py", dir),
        ["path.txt"],
        name,
      );
      assertEquals(await files(engine, "\\Afoo", dir), [
        "anchors.txt",
        "span.txt",
      ], name);
      assertEquals(await files(engine, "foo\\s+bar", dir), [], name);
      assertEquals(await files(engine, "foo[^x]bar", dir), [], name);
      // The documented difference: \w is ASCII in RE2.
      assertEquals(
        await files(engine, "^\\w$", dir),
        name === "ripgrep" ? ["unicode.txt"] : [],
        name,
      );
      assertEquals(await files(engine, "^.$", dir), ["unicode.txt"], name);
    }
  });
});

Deno.test("every engine refuses look-around and backreferences with the same message", async () => {
  await withTree(async (engines) => {
    for (const engine of Object.values(engines)) {
      await assertRejects(
        () => engine.grep({ pattern: "a(?<=b)" }),
        TypeError,
        'Invalid regex "a(?<=b)": look-around is not supported',
      );
      await assertRejects(
        () => engine.grep({ pattern: "(a)\\1" }),
        TypeError,
        "backreferences are not supported",
      );
    }
  });
});
