/**
 * Behaviour tests every search engine passes (ripgrep, fallback over local
 * paths, fallback over a file system), on a fixture tree in a temporary folder.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertLess,
  assertRejects,
  assertStringIncludes,
} from "../helpers/assert.ts";
import type { SearchEngine } from "../../search/types.ts";

const encoder = new TextEncoder();

/** Files of the fixture tree (relative path → content). */
export const FIXTURE: Readonly<Record<string, string | Uint8Array>> = {
  "README.md": "# Title\nhello world\n",
  ".hidden.txt": "hello hidden\n",
  ".config/settings.json": '{"hello": 1}\n',
  "dir with space/file name.txt": "hello space\n",
  "ünïcode/naïve café.md": "hello unicode Ωmega\n",
  "src/app.ts": "export function hello() {\n  return 42;\n}\n// hello again\n",
  "src/util.js": "const x = 1;\nHELLO upper\n",
  "src/deep/nested/thing.py": "def hello():\n    pass\n",
  "src/build": "hello file named build\n",
  "bin/data.bin": new Uint8Array([0, 1, 2, ...encoder.encode("hello\n")]),
  "bin/late-nul.txt": `hello late\n${"x".repeat(9000)}\n\u0000\n`,
  "node_modules/pkg/index.js": "hello from node_modules\n",
  ".git/config": "hello git\n",
  "build/out.txt": "hello build\n",
  "lines.txt": Array.from(
    { length: 20 },
    (_, i) => `line ${i + 1}${[5, 6, 12].includes(i + 1) ? " match" : ""}`,
  ).join("\n") + "\n",
  "crlf.txt": "alpha\r\nbeta hello\r\n",
};

/**
 * Writes the fixture tree into a new temporary folder.
 *
 * @returns The folder (remove it after the test).
 */
export async function makeFixture(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-search-" });
  for (const [path, content] of Object.entries(FIXTURE)) {
    const full = `${dir}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(full, content);
    else await Deno.writeFile(full, content);
  }
  return dir;
}

/** A test body taking an engine made for the fixture folder. */
type EngineFactory = (root: string) => SearchEngine;

/**
 * Registers the behaviour tests for one engine.
 *
 * @param label The engine's name in test names.
 * @param make Makes the engine for a fixture folder.
 * @param options What the engine is expected to do with a pathological regex.
 */
export function engineSuite(
  label: string,
  make: EngineFactory,
  options: { ignore?: boolean; backtracks: boolean },
): void {
  const test = (
    name: string,
    fn: (root: string, engine: SearchEngine) => Promise<void>,
  ): void => {
    Deno.test({
      name: `${label}: ${name}`,
      ignore: options.ignore ?? false,
      async fn() {
        const root = await makeFixture();
        try {
          await fn(root, make(root));
        } finally {
          await Deno.remove(root, { recursive: true });
        }
      },
    });
  };

  test(
    "grep lists matching files by path, hidden included, heavy folders and binaries skipped",
    async (root, engine) => {
      const result = await engine.grep({ pattern: "hello" });
      assert(result.mode === "files_with_matches");
      assertEquals(result.files.map((f) => f.slice(root.length + 1)), [
        ".config/settings.json",
        ".hidden.txt",
        "README.md",
        "bin/late-nul.txt",
        "crlf.txt",
        "dir with space/file name.txt",
        "src/app.ts",
        "src/build",
        "src/deep/nested/thing.py",
        "ünïcode/naïve café.md",
      ]);
      assertEquals(result.totalEntries, 10);
      assertEquals(result.path, root);
    },
  );

  test("grep searches a root inside a heavy folder", async (root, engine) => {
    const result = await engine.grep({
      pattern: "hello",
      path: `${root}/node_modules/pkg`,
    });
    assert(result.mode === "files_with_matches");
    assertEquals(result.files, [`${root}/node_modules/pkg/index.js`]);
  });

  test(
    "grep searches one file given as the path, ignoring glob and type",
    async (root, engine) => {
      const result = await engine.grep({
        pattern: "match",
        path: `${root}/lines.txt`,
        outputMode: "count",
        glob: "*.md",
      });
      assert(result.mode === "count");
      assertEquals(result.counts, [{ path: `${root}/lines.txt`, count: 3 }]);
    },
  );

  test(
    "grep content gives context lines, merged, with match flags",
    async (_root, engine) => {
      const result = await engine.grep({
        pattern: "match",
        path: "lines.txt",
        outputMode: "content",
        context: 1,
      });
      assert(result.mode === "content");
      assertEquals(
        result.lines.map((l) =>
          `${l.lineNumber}${l.match ? ":" : "-"}${l.text}`
        ),
        [
          "4-line 4",
          "5:line 5 match",
          "6:line 6 match",
          "7-line 7",
          "11-line 11",
          "12:line 12 match",
          "13-line 13",
        ],
      );
    },
  );

  test(
    "grep content with before and after context apart",
    async (root, engine) => {
      const result = await engine.grep({
        pattern: "line 12",
        path: `${root}/lines.txt`,
        outputMode: "content",
        before: 2,
        after: 0,
      });
      assert(result.mode === "content");
      assertEquals(result.lines.map((l) => l.lineNumber), [10, 11, 12]);
    },
  );

  test("grep drops the \\r of CRLF lines", async (root, engine) => {
    const result = await engine.grep({
      pattern: "hello$",
      path: `${root}/crlf.txt`,
      outputMode: "content",
    });
    assert(result.mode === "content");
    assertEquals(result.lines.map((l) => l.text), []);
    const plain = await engine.grep({
      pattern: "beta",
      path: `${root}/crlf.txt`,
      outputMode: "content",
    });
    assert(plain.mode === "content");
    assertEquals(plain.lines.map((l) => l.text), ["beta hello"]);
  });

  test("grep counts matching lines per file", async (root, engine) => {
    const result = await engine.grep({
      pattern: "hello",
      outputMode: "count",
      glob: "src/**",
    });
    assert(result.mode === "count");
    assertEquals(
      result.counts.map((c) => [c.path.slice(root.length + 1), c.count]),
      [["src/app.ts", 2], ["src/build", 1], ["src/deep/nested/thing.py", 1]],
    );
  });

  test("grep is case-insensitive on request", async (root, engine) => {
    const sensitive = await engine.grep({
      pattern: "HELLO",
      path: `${root}/src`,
    });
    const insensitive = await engine.grep({
      pattern: "HELLO",
      path: `${root}/src`,
      caseInsensitive: true,
    });
    assert(sensitive.mode === "files_with_matches");
    assert(insensitive.mode === "files_with_matches");
    assertEquals(sensitive.files, [`${root}/src/util.js`]);
    assertEquals(insensitive.files.length, 4);
  });

  test(
    "grep multiline matches across lines and counts a match once",
    async (root, engine) => {
      const result = await engine.grep({
        pattern: "hello\\(\\) \\{\\n.*return",
        multiline: true,
        outputMode: "content",
      });
      assert(result.mode === "content");
      assertEquals(
        result.lines.map((l) => [l.path.slice(root.length + 1), l.lineNumber]),
        [["src/app.ts", 1], ["src/app.ts", 2]],
      );
      const count = await engine.grep({
        pattern: "line 5.*\\n.*line 6",
        multiline: true,
        outputMode: "count",
      });
      assert(count.mode === "count");
      assertEquals(count.counts.map((c) => c.count), [1]);
    },
  );

  test(
    "grep filters by type and by glob (name, anchored, negated, braces)",
    async (root, engine) => {
      const rel = async (request: Parameters<SearchEngine["grep"]>[0]) => {
        const result = await engine.grep(request);
        assert(result.mode === "files_with_matches");
        return result.files.map((f) => f.slice(root.length + 1));
      };
      assertEquals(await rel({ pattern: "hello", type: "py" }), [
        "src/deep/nested/thing.py",
      ]);
      assertEquals(await rel({ pattern: "hello", type: "markdown" }), [
        "README.md",
        "ünïcode/naïve café.md",
      ]);
      assertEquals(await rel({ pattern: "hello", glob: "*.{ts,json}" }), [
        ".config/settings.json",
        "src/app.ts",
      ]);
      assertEquals(await rel({ pattern: "hello", glob: "src/*" }), [
        "src/app.ts",
        "src/build",
      ]);
      assertEquals(await rel({ pattern: "hello", glob: "!*.{md,txt}" }), [
        ".config/settings.json",
        "src/app.ts",
        "src/build",
        "src/deep/nested/thing.py",
      ]);
      assertEquals(await rel({ pattern: "hello", glob: "*name*" }), [
        "dir with space/file name.txt",
      ]);
    },
  );

  test(
    "grep applies offset and head limit to files, counts and lines",
    async (root, engine) => {
      const files = await engine.grep({
        pattern: "hello",
        offset: 2,
        headLimit: 3,
      });
      assert(files.mode === "files_with_matches");
      assertEquals(files.files.map((f) => f.slice(root.length + 1)), [
        "README.md",
        "bin/late-nul.txt",
        "crlf.txt",
      ]);
      assertEquals(files.totalEntries, 10);
      assert(files.headLimitReached);
      assertEquals(files.offset, 2);
      const counts = await engine.grep({
        pattern: "hello",
        outputMode: "count",
        offset: 8,
        headLimit: 5,
      });
      assert(counts.mode === "count");
      assertEquals(counts.counts.length, 2);
      assert(!counts.headLimitReached);
      const lines = await engine.grep({
        pattern: "line",
        path: `${root}/lines.txt`,
        outputMode: "content",
        offset: 15,
        headLimit: 2,
      });
      assert(lines.mode === "content");
      assertEquals(lines.lines.map((l) => l.lineNumber), [16, 17]);
      assert(lines.headLimitReached);
      assertEquals(lines.totalEntries, null);
    },
  );

  test("grep stops at the output cap and says so", async (root, engine) => {
    const result = await engine.grep({
      pattern: "line",
      path: `${root}/lines.txt`,
      outputMode: "content",
      maxOutputChars: 200,
    });
    assert(result.mode === "content");
    assert(result.outputLimitReached);
    assert(result.lines.length > 0 && result.lines.length < 20);
    assertEquals(result.totalEntries, null);
  });

  test("grep cuts very long lines", async (root, engine) => {
    await Deno.writeTextFile(
      `${root}/long.txt`,
      `${"é".repeat(5000)} needle\n`,
    );
    const result = await engine.grep({
      pattern: "needle",
      path: `${root}/long.txt`,
      outputMode: "content",
      maxLineChars: 100,
    });
    assert(result.mode === "content");
    assertEquals(result.lines[0]?.text, "é".repeat(100));
    assertEquals(result.lines[0]?.cut, true);
  });

  test(
    "grep refuses a bad regex with a clear message",
    async (_root, engine) => {
      const error = await assertRejects(() => engine.grep({ pattern: "a(" }));
      assertInstanceOf(error, TypeError);
      assertStringIncludes((error as Error).message, 'Invalid regex "a(": ');
      const lookahead = await assertRejects(() =>
        engine.grep({ pattern: "a(?=b)" })
      );
      assertStringIncludes((lookahead as Error).message, "look-around");
    },
  );

  test(
    "grep refuses an unknown type, a bad glob and a missing path",
    async (root, engine) => {
      const type = await assertRejects(() =>
        engine.grep({ pattern: "a", type: "cobol" })
      );
      assertStringIncludes(
        (type as Error).message,
        'Unknown file type "cobol"',
      );
      const glob = await assertRejects(() =>
        engine.grep({ pattern: "a", glob: "*.{ts" })
      );
      assertStringIncludes((glob as Error).message, 'Invalid glob "*.{ts"');
      const missing = await assertRejects(() =>
        engine.grep({ pattern: "a", path: `${root}/nope` })
      );
      assertInstanceOf(missing, Deno.errors.NotFound);
    },
  );

  test(
    "grep with a pathological regex returns within the time limit",
    async (root, engine) => {
      await Deno.writeTextFile(`${root}/evil.txt`, `${"a".repeat(40)}b\n`);
      const start = performance.now();
      if (options.backtracks) {
        const error = await assertRejects(() =>
          engine.grep({
            pattern: "(a+)+$",
            path: `${root}/evil.txt`,
            timeoutMs: 1000,
          })
        );
        assertEquals((error as Error).name, "SearchTimeoutError");
        assertStringIncludes(
          (error as Error).message,
          "timed out after 1000 ms",
        );
      } else {
        const result = await engine.grep({
          pattern: "(a+)+$",
          path: `${root}/evil.txt`,
          timeoutMs: 1000,
        });
        assertEquals(result.totalEntries, 0);
      }
      assertLess(performance.now() - start, 10_000);
    },
  );

  test(
    "grep skips a file over the size limit, a pipe and a socket-like special file, and says so",
    async (root, engine) => {
      await Deno.mkdir(`${root}/skip`);
      await Deno.writeTextFile(`${root}/skip/small.txt`, "needle\n");
      await Deno.writeTextFile(
        `${root}/skip/big.txt`,
        `needle\n${"x".repeat(5000)}\n`,
      );
      const fifo = await new Deno.Command("mkfifo", {
        args: [`${root}/skip/pipe.txt`],
      }).output();
      assert(fifo.success);
      // A symlink to a device is not followed: neither read nor listed.
      await Deno.symlink("/dev/zero", `${root}/skip/zero.txt`);
      const start = performance.now();
      const result = await engine.grep({
        pattern: "needle",
        path: `${root}/skip`,
        maxFileBytes: 1000,
        timeoutMs: 20_000,
      });
      assertLess(performance.now() - start, 20_000);
      assert(result.mode === "files_with_matches");
      assertEquals(result.files, [`${root}/skip/small.txt`]);
      assertEquals(result.skipped, [
        { path: `${root}/skip/big.txt`, reason: "too-large", size: 5008 },
        { path: `${root}/skip/pipe.txt`, reason: "not-regular" },
      ]);
      // The control: with the default limit the big file is searched.
      const all = await engine.grep({
        pattern: "needle",
        path: `${root}/skip`,
        glob: "*.txt",
        outputMode: "count",
      });
      assert(all.mode === "count");
      assertEquals(all.counts.map((c) => c.path), [
        `${root}/skip/big.txt`,
        `${root}/skip/small.txt`,
      ]);
      assertEquals(all.skipped, [
        { path: `${root}/skip/pipe.txt`, reason: "not-regular" },
      ]);
    },
  );

  test(
    "grep skips a sparse file of 8 GiB whole (as the root, or inside a folder) in bounded time",
    async (root, engine) => {
      await Deno.mkdir(`${root}/sparse`);
      const path = `${root}/sparse/huge.log`;
      const file = await Deno.open(path, { write: true, create: true });
      await file.write(encoder.encode("needle\n"));
      await file.truncate(8 * 1024 ** 3);
      file.close();
      const start = performance.now();
      for (const target of [path, `${root}/sparse`]) {
        const result = await engine.grep({
          pattern: "needle",
          path: target,
          outputMode: "content",
        });
        assert(result.mode === "content");
        assertEquals(result.lines, []);
        assertEquals(result.skipped, [
          { path, reason: "too-large", size: 8 * 1024 ** 3 },
        ]);
      }
      assertLess(performance.now() - start, 30_000);
    },
  );

  test("grep stops when the caller aborts", async (_root, engine) => {
    const controller = new AbortController();
    controller.abort(new DOMException("stop", "AbortError"));
    const error = await assertRejects(() =>
      engine.grep({ pattern: "hello", signal: controller.signal })
    );
    assertEquals((error as DOMException).name, "AbortError");
  });

  test(
    "grep content over many files keeps the first lines in path order at the cap",
    async (root, engine) => {
      await Deno.mkdir(`${root}/many`);
      const body = Array.from({ length: 400 }, (_, i) => `hit ${i}`).join("\n");
      for (let i = 0; i < 40; i++) {
        await Deno.writeTextFile(
          `${root}/many/f${String(39 - i).padStart(2, "0")}.txt`,
          body,
        );
      }
      const result = await engine.grep({
        pattern: "hit",
        path: `${root}/many`,
        outputMode: "content",
        offset: 395,
        maxOutputChars: 2000,
      });
      assert(result.mode === "content");
      assert(result.outputLimitReached);
      assertEquals(result.totalEntries, null);
      assertEquals(
        result.lines.slice(0, 6).map((l) =>
          `${l.path.slice(-7)}:${l.lineNumber}`
        ),
        [
          "f00.txt:396",
          "f00.txt:397",
          "f00.txt:398",
          "f00.txt:399",
          "f00.txt:400",
          "f01.txt:1",
        ],
      );
    },
  );

  if (options.backtracks) {
    test(
      "grep stops a running search when the caller aborts",
      async (root, engine) => {
        await Deno.writeTextFile(`${root}/evil.txt`, `${"a".repeat(40)}b\n`);
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), 200);
        const start = performance.now();
        try {
          const error = await assertRejects(() =>
            engine.grep({
              pattern: "(a+)+$",
              path: `${root}/evil.txt`,
              signal: controller.signal,
            })
          );
          assertEquals((error as DOMException).name, "AbortError");
        } finally {
          clearTimeout(timer);
        }
        assertLess(performance.now() - start, 10_000);
      },
    );
  }

  test(
    "glob finds files newest first, heavy folders skipped",
    async (root, engine) => {
      await Deno.utime(`${root}/src/app.ts`, 1000, 1000);
      await Deno.utime(`${root}/src/util.js`, 3000, 3000);
      await Deno.utime(`${root}/src/deep/nested/thing.py`, 2000, 2000);
      const result = await engine.glob({ pattern: "src/**/*.{ts,js,py}" });
      assertEquals(result.files.map((f) => f.path.slice(root.length + 1)), [
        "src/util.js",
        "src/deep/nested/thing.py",
        "src/app.ts",
      ]);
      assertEquals(result.files[0]?.modifiedMs, 3_000_000);
      const js = await engine.glob({ pattern: "*.js" });
      assertEquals(js.files.map((f) => f.path.slice(root.length + 1)), [
        "src/util.js",
      ]);
    },
  );

  test(
    "glob supports ? and [] and caps with truncated",
    async (root, engine) => {
      const q = await engine.glob({ pattern: "???.ts" });
      assertEquals(q.files.map((f) => f.path.slice(root.length + 1)), [
        "src/app.ts",
      ]);
      const cls = await engine.glob({ pattern: "[a-c]*.txt" });
      assertEquals(
        cls.files.map((f) => f.path.slice(root.length + 1)).sort(),
        ["crlf.txt"],
      );
      const capped = await engine.glob({ pattern: "*", limit: 3 });
      assertEquals(capped.files.length, 3);
      assert(capped.truncated);
      assertEquals(capped.totalFiles, 13);
    },
  );

  test(
    "ls lists folders first, relative, heavy folders not descended",
    async (root, engine) => {
      const one = await engine.ls({ path: root });
      assertEquals(one.entries.map((e) => e.path), [
        ".config",
        ".git",
        "bin",
        "build",
        "dir with space",
        "node_modules",
        "src",
        "ünïcode",
        ".hidden.txt",
        "README.md",
        "crlf.txt",
        "lines.txt",
      ]);
      assert(!one.truncated);
      const two = await engine.ls({ path: root, depth: 2, limit: 100 });
      const paths = two.entries.map((e) => e.path);
      assert(paths.includes("src/deep"));
      assert(!paths.includes("node_modules/pkg"));
      assert(two.entries.find((e) => e.path === "node_modules")?.skipped);
      const limited = await engine.ls({ path: root, depth: 3, limit: 5 });
      assertEquals(limited.entries.length, 5);
      assert(limited.truncated);
    },
  );
}
