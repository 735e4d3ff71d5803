import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { compileGlob } from "./glob.ts";
import { detectRipgrep } from "./ripgrep.ts";

Deno.test("compileGlob() matches names at any depth when the glob has no slash", () => {
  const glob = compileGlob("*.ts");
  assert(glob.matches("a.ts", false));
  assert(glob.matches("src/deep/a.ts", false));
  assertFalse(glob.matches("a.tsx", false));
});

Deno.test("compileGlob() anchors a glob with a slash to the searched folder", () => {
  const glob = compileGlob("src/*.ts");
  assert(glob.matches("src/a.ts", false));
  assertFalse(glob.matches("src/sub/a.ts", false));
  assertFalse(glob.matches("x/src/a.ts", false));
  assert(compileGlob("/src/*.ts").matches("src/a.ts", false));
});

Deno.test("compileGlob() handles **, ?, classes and braces", () => {
  assert(compileGlob("**/*.py").matches("a.py", false));
  assert(compileGlob("**/*.py").matches("a/b/c.py", false));
  assert(compileGlob("a/**/b.txt").matches("a/b.txt", false));
  assert(compileGlob("a/**/b.txt").matches("a/x/y/b.txt", false));
  assert(compileGlob("a/**").matches("a/x/y", false));
  assertFalse(compileGlob("a/**").matches("a", true));
  assert(compileGlob("?.md").matches("x/a.md", false));
  assertFalse(compileGlob("?.md").matches("ab.md", false));
  assert(compileGlob("[a-c]*.txt").matches("b1.txt", false));
  assertFalse(compileGlob("[!a-c]*.txt").matches("b1.txt", false));
  assert(compileGlob("*.{ts,tsx}").matches("x.tsx", false));
  assert(compileGlob("a-b[-]c.txt").matches("a-b-c.txt", false));
});

Deno.test("compileGlob() knows negation and folder-only globs", () => {
  const glob = compileGlob("!node_modules/");
  assert(glob.negated && glob.dirOnly);
  assert(glob.matches("x/node_modules", true));
  assertFalse(glob.matches("x/node_modules", false));
});

Deno.test("compileGlob() refuses bad globs with the glob quoted", () => {
  for (
    const [glob, reason] of [
      ["*.{ts", "unclosed alternate group"],
      ["[abc", "unclosed character class"],
      ["{a,{b}}", "nested"],
      ["", "empty"],
      ["#x", "comment"],
    ] as const
  ) {
    const error = assertThrows(() => compileGlob(glob), TypeError);
    assertStringIncludes(error.message, `Invalid glob "${glob}": `);
    assertStringIncludes(error.message, reason);
  }
});

const rg = await detectRipgrep();
if (!rg) {
  console.error(
    "glob_test.ts: ripgrep (rg) is not installed: the comparison with ripgrep is ignored; install ripgrep to run it",
  );
}

Deno.test({
  name: "compileGlob() selects the same files as rg --files -g",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    const files = [
      "a.ts",
      "b.tsx",
      "c.js",
      "README.md",
      ".hidden.md",
      "src/x.ts",
      "src/y.py",
      "src/sub/z.ts",
      "src/sub/deep/w.ts",
      "docs/a b.md",
      "docs/ü.md",
      "lib/a-b.txt",
      "lib/[x].txt",
      "x/src/q.ts",
      "A.TS",
    ];
    try {
      for (const file of files) {
        const full = `${dir}/${file}`;
        await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), {
          recursive: true,
        });
        await Deno.writeTextFile(full, "x\n");
      }
      const globs = [
        "*.ts",
        "**/*.ts",
        "src/*.ts",
        "src/**",
        "src/**/*.ts",
        "/src/*.py",
        "?.ts",
        "[ab].*",
        "[!ab].ts",
        "*.{ts,tsx}",
        "*.{md,py}",
        "docs/*",
        "**/sub/**",
        "*",
        ".*",
        "src",
        "src/",
        "*-*",
        "\\[x\\].txt",
        "**/deep/*.ts",
        "a*",
        "!*.ts",
        "!src/",
        "sub/*.ts",
        "*.TS",
      ];
      const mismatches: string[] = [];
      for (const glob of globs) {
        const out = await new Deno.Command("rg", {
          args: [
            "--files",
            "--hidden",
            "--no-ignore",
            "--no-config",
            "-g",
            glob,
            ".",
          ],
          cwd: dir,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const expected = new TextDecoder().decode(out.stdout).split("\n")
          .filter((l) => l !== "").map((l) => l.replace(/^\.\//, "")).sort();
        const compiled = compileGlob(glob);
        const actual = files.filter((file) => {
          // Folders excluded by a negated glob prune what is below them.
          const parts = file.split("/");
          for (let i = 1; i < parts.length; i++) {
            const folder = parts.slice(0, i).join("/");
            if (compiled.negated && compiled.matches(folder, true)) {
              return false;
            }
          }
          const matched = compiled.matches(file, false);
          return compiled.negated ? !matched : matched;
        }).sort();
        if (JSON.stringify(actual) !== JSON.stringify(expected)) {
          mismatches.push(
            `${glob}: rg ${JSON.stringify(expected)} ours ${
              JSON.stringify(actual)
            }`,
          );
        }
      }
      assertEquals(mismatches, []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
