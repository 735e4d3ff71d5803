import { concatBytes } from "../../_internal/std.ts";
import {
  assert,
  assertEquals,
  assertFalse,
  assertLess,
} from "../helpers/assert.ts";
import {
  parseDebugSkip,
  parseLine,
  parseRipgrepOutput,
  ripgrepGrepArgs,
} from "../../search/_ripgrep_protocol.ts";
import { type GrepPlan, planGrep } from "../../search/_plan.ts";
import { detectRipgrep, RipgrepSearch } from "../../search/ripgrep.ts";
import { FallbackSearch } from "../../search/fallback.ts";
import { ShellSearch } from "../../search/shell.ts";
import { bashShell } from "./_shell_testing.ts";
import { comparePaths } from "../../search/rules.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

const rg = await detectRipgrep();
if (!rg) {
  console.error(
    "ripgrep_test.ts: ripgrep (rg) is not installed: the RipgrepSearch tests are ignored; install ripgrep to run them",
  );
}

engineSuite(
  "RipgrepSearch",
  (root) => new RipgrepSearch({ fs: new LocalFileSystem({ cwd: root }) }),
  { backtracks: false, ignore: !rg },
);

Deno.test({
  name:
    "RipgrepSearch: content in path order over many files, the same as rg's sandbox path",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      // Names whose path order differs from plain string order.
      const names: string[] = [];
      for (let i = 0; i < 600; i++) {
        const name = i % 3 === 0
          ? `a/${i}.txt`
          : i % 3 === 1
          ? `a-${i}.txt`
          : `-dash${i}.txt`;
        names.push(name);
        await Deno.mkdir(`${dir}/a`, { recursive: true });
        await Deno.writeTextFile(
          `${dir}/${name}`,
          `x\nneedle ${i}\n${i % 7 === 0 ? "\u0000" : ""}\nneedle again\n`,
        );
      }
      const fs = new LocalFileSystem({ cwd: dir });
      // In a sandbox: binary files sniffed by rg, nothing read on the host.
      const sorted = new ShellSearch({ shell: bashShell(), fs });
      const parallel = new RipgrepSearch({ fs });
      for (
        const request of [
          { pattern: "needle", outputMode: "content" },
          {
            pattern: "needle",
            outputMode: "content",
            offset: 333,
            headLimit: 7,
          },
          { pattern: "needle", outputMode: "content", maxOutputChars: 900 },
          {
            pattern: "needle \\d+\\n\\n?needle",
            outputMode: "content",
            multiline: true,
          },
        ] as const
      ) {
        const a = await sorted.grep(request);
        const b = await parallel.grep(request);
        assertEquals(b, a, JSON.stringify(request));
        assert(a.mode === "content" && a.lines.length > 0);
      }
      const all = await parallel.grep({
        pattern: "needle",
        outputMode: "content",
      });
      assert(all.mode === "content");
      const paths = [
        ...new Set(all.lines.map((l) => l.path.slice(dir.length + 1))),
      ];
      // Binary files (a NUL in the first 8 KiB) are left out; order is path order.
      assertEquals(paths.length, names.filter((_, i) => i % 7 !== 0).length);
      assertEquals(paths, [...paths].sort(comparePaths));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch: a parallel content pass whose lines outgrow the budget gives way to the sorted search, same answer",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      // About 1.5 MB of matching lines: over the 1 MiB the pass may hold.
      const line = `needle ${"x".repeat(90)}\n`;
      for (let i = 0; i < 60; i++) {
        await Deno.writeTextFile(
          `${dir}/f${String(i).padStart(2, "0")}.txt`,
          line.repeat(250),
        );
      }
      const fs = new LocalFileSystem({ cwd: dir });
      const other = new FallbackSearch({ fs, local: true });
      const parallel = new RipgrepSearch({ fs });
      for (
        const request of [
          { pattern: "needle", outputMode: "content" },
          { pattern: "needle", outputMode: "content", offset: 14_000 },
        ] as const
      ) {
        const a = { ...await other.grep(request), engine: "ripgrep" };
        const b = await parallel.grep(request);
        assertEquals(b, a, JSON.stringify(request));
        assert(
          a.mode === "content" && a.lines.length > 0 && a.outputLimitReached,
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("detectRipgrep() reports null for a command that does not exist", async () => {
  assertEquals(await detectRipgrep("/nonexistent/rg-skillrun"), null);
});

Deno.test({
  name: "RipgrepSearch: grep past its time limit kills rg and says so",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const line = "abcdefghij".repeat(10) + "\n";
      await Deno.writeTextFile(`${dir}/big.txt`, line.repeat(600_000));
      const search = new RipgrepSearch({
        fs: new LocalFileSystem({ cwd: dir }),
      });
      let message = "";
      try {
        await search.grep({
          pattern: "\\w+j$",
          outputMode: "count",
          timeoutMs: 5,
        });
      } catch (error) {
        message = `${(error as Error).name}: ${(error as Error).message}`;
      }
      assert(
        message.startsWith("SearchTimeoutError: ") &&
          message.includes("timed out after 5 ms"),
        message,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch: names with newlines and colons, binary files, a name that is not UTF-8, a match line over the bound",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/new\nline.txt`, "a\nneedle one\n");
      await Deno.writeTextFile(`${dir}/c:3:d.txt`, "needle: two\nx\nneedle\n");
      // A NUL in the first 8 KiB: binary, left out; after them: text.
      await Deno.writeTextFile(`${dir}/bin.dat`, "needle\n\u0000\n");
      await Deno.writeTextFile(
        `${dir}/late.txt`,
        `${"t\n".repeat(5000)}\u0000\nneedle late\n`,
      );
      // A line of 200,000 characters holding the needle near its end.
      await Deno.writeTextFile(
        `${dir}/long.txt`,
        `${"w".repeat(199_990)}needle\nneedle short\n`,
      );
      // A name that is not UTF-8 (Deno cannot make one: bash can).
      const made = await new Deno.Command("bash", {
        args: ["-c", `printf 'needle\\n' > $'\\xff\\xfe.txt'`],
        cwd: dir,
      }).output();
      assert(made.success);
      const search = new RipgrepSearch({
        fs: new LocalFileSystem({ cwd: dir }),
      });
      const files = await search.grep({ pattern: "needle", path: dir });
      assert(files.mode === "files_with_matches");
      // The name that is not UTF-8 cannot be opened by its decoded name (nor
      // by the fallback): it is left out, the others are not.
      assertEquals(files.files, [
        `${dir}/c:3:d.txt`,
        `${dir}/late.txt`,
        `${dir}/long.txt`,
        `${dir}/new\nline.txt`,
      ]);
      const content = await search.grep({
        pattern: "needle",
        path: dir,
        outputMode: "content",
        maxLineChars: 100,
      });
      assert(content.mode === "content");
      assertEquals(
        content.lines.map((l) => [l.path.slice(dir.length + 1), l.lineNumber]),
        [
          ["c:3:d.txt", 1],
          ["c:3:d.txt", 3],
          ["late.txt", 5002],
          ["long.txt", 1],
          ["long.txt", 2],
          ["new\nline.txt", 2],
        ],
      );
      assertEquals(content.lines[0]!.text, "needle: two");
      const long = content.lines[3]!;
      assert(long.cut && long.text.length < 400, long.text);
      assertEquals(content.lines[4]!.text, "needle short");
      const counts = await search.grep({
        pattern: "needle",
        path: dir,
        outputMode: "count",
      });
      assert(counts.mode === "count");
      assertEquals(
        counts.counts.map((c) => [c.path.slice(dir.length + 1), c.count]),
        [["c:3:d.txt", 2], ["late.txt", 1], ["long.txt", 2], [
          "new\nline.txt",
          1,
        ]],
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch: a matching file over the size limit is listed as skipped in every mode, its lines never shown",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/big.txt`, "needle\n".repeat(400));
      await Deno.writeTextFile(`${dir}/small.txt`, "needle\n");
      const search = new RipgrepSearch({
        fs: new LocalFileSystem({ cwd: dir }),
      });
      for (
        const outputMode of ["files_with_matches", "count", "content"] as const
      ) {
        const result = await search.grep({
          pattern: "needle",
          path: dir,
          outputMode,
          maxFileBytes: 1000,
        });
        assertEquals(result.skipped, [
          { path: `${dir}/big.txt`, reason: "too-large", size: 2800 },
        ], outputMode);
        const shown = result.mode === "files_with_matches"
          ? result.files
          : result.mode === "count"
          ? result.counts.map((c) => c.path)
          : [...new Set(result.lines.map((l) => l.path))];
        assertEquals(shown, [`${dir}/small.txt`], outputMode);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch: a line of 1 GiB in a sparse file over the size limit is skipped and reported, not read (rg's memory stays bounded)",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const file = await Deno.open(`${dir}/huge.log`, {
        write: true,
        create: true,
      });
      await file.truncate(1024 ** 3);
      file.close();
      await Deno.writeTextFile(`${dir}/small.log`, "needle\n");
      const start = performance.now();
      const result = await new RipgrepSearch({
        fs: new LocalFileSystem({ cwd: dir }),
      }).grep({ pattern: "needle", path: dir, outputMode: "count" });
      assertLess(performance.now() - start, 20_000);
      assert(result.mode === "count");
      assertEquals(result.counts, [{ path: `${dir}/small.log`, count: 1 }]);
      assertEquals(result.skipped, [
        { path: `${dir}/huge.log`, reason: "too-large", size: 1024 ** 3 },
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch: content line numbers deep in a large file agree with the sorted search of that file",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const lines = Array.from(
        { length: 120_000 },
        (_, i) => i % 29_999 === 0 ? `needle ${i}` : "y".repeat(i % 13),
      );
      await Deno.writeTextFile(`${dir}/big.txt`, lines.join("\n") + "\n");
      await Deno.writeTextFile(`${dir}/small.txt`, "a\r\nneedle\r\n");
      const fs = new LocalFileSystem({ cwd: dir });
      const request = {
        pattern: "needle",
        outputMode: "content",
        context: 1,
      } as const;
      const search = new RipgrepSearch({ fs });
      const parallel = await search.grep(request);
      assert(parallel.mode === "content");
      assertEquals(
        parallel.lines.filter((l) => l.match).map((l) => [
          l.path.slice(dir.length + 1),
          l.lineNumber,
          l.text,
        ]),
        [
          ["big.txt", 1, "needle 0"],
          ["big.txt", 30_000, "needle 29999"],
          ["big.txt", 59_999, "needle 59998"],
          ["big.txt", 89_998, "needle 89997"],
          ["big.txt", 119_997, "needle 119996"],
          ["small.txt", 2, "needle"],
        ],
      );
      // The sorted search of the file alone gives the same lines.
      const sorted = await search.grep({ ...request, path: `${dir}/big.txt` });
      assert(sorted.mode === "content");
      assertEquals(
        parallel.lines.filter((l) => l.path === `${dir}/big.txt`),
        sorted.lines,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

// ripgrep's protocol where it needs a plan (a real local file system).

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes of text and raw bytes, joined. */
function bytes(...parts: (string | number[])[]): Uint8Array {
  return concatBytes(
    parts.map((p) =>
      typeof p === "string" ? encoder.encode(p) : new Uint8Array(p)
    ),
  );
}

async function plan(
  request: Record<string, unknown>,
  root: string,
): Promise<GrepPlan> {
  return await planGrep(
    new LocalFileSystem({ cwd: root }),
    { pattern: "needle", path: root, ...request },
    true,
  );
}

Deno.test("parseLine reads a match and a context line, colons in the text kept, a long line cut", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ outputMode: "content", maxLineChars: 10 }, dir);
    assertEquals(parseLine(encoder.encode("12:a:b"), decoder, p), {
      lineNumber: 12,
      text: "a:b",
      match: true,
      cut: false,
    });
    assertEquals(parseLine(encoder.encode("3-x-1:2"), decoder, p), {
      lineNumber: 3,
      text: "x-1:2",
      match: false,
      cut: false,
    });
    const long = parseLine(encoder.encode(`9:${"z".repeat(40)}`), decoder, p);
    assertEquals(long.lineNumber, 9);
    assert(long.cut);
    assert(long.text.length <= 10 + 20, long.text);
    assert(long.text.startsWith("zzzzzzzzzz"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseRipgrepOutput groups content lines per file in output order, ./ dropped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ outputMode: "content" }, dir);
    const files = parseRipgrepOutput(
      bytes(
        "./b:c",
        [0],
        "1:needle\n",
        "./b:c",
        [0],
        "4:needle 2\n",
        "./a\nz",
        [0],
        "2:needle\n",
      ),
      p,
    );
    assertEquals(files.map((f) => [f.path, f.count]), [["b:c", 2], [
      "a\nz",
      1,
    ]]);
    assertEquals(files[0]!.lines.map((l) => l.lineNumber), [1, 4]);
    const counted = parseRipgrepOutput(
      bytes("./x", [0], "3\n"),
      await plan({ outputMode: "count" }, dir),
    );
    assertEquals(counted, [{ path: "x", count: 3, lines: [] }]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseDebugSkip reads a file over the size limit and one that is not regular; a symlink and other lines are not skips", () => {
  assertEquals(
    parseDebugSkip(
      "DEBUG|ignore::walk|crates/ignore/src/walk.rs:1730: ignoring ./a: b.txt: 5008 bytes",
    ),
    { path: "./a: b.txt", reason: "too-large", size: 5008 },
  );
  assertEquals(
    parseDebugSkip(
      "DEBUG|rg::subject|crates/core/subject.rs:85: ignoring ./p: failed to pass subject filter: file type: Some(FileType(FileType { mode: 4480 }))",
    ),
    { path: "./p", reason: "not-regular" },
  );
  // 0o120777: a symlink (not followed), not reported.
  assertEquals(
    parseDebugSkip(
      "DEBUG|rg::subject|crates/core/subject.rs:85: ignoring ./l: failed to pass subject filter: file type: Some(FileType(FileType { mode: 41471 }))",
    ),
    null,
  );
  assertEquals(parseDebugSkip("DEBUG|globset|x: built glob set"), null);
  assertEquals(parseDebugSkip("rg: regex parse error"), null);
});

Deno.test("ripgrepGrepArgs passes --max-filesize, content sorted by path unless unsorted", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ maxFileBytes: 1234 }, dir);
    const bounded = ripgrepGrepArgs(p);
    assertEquals(bounded[bounded.indexOf("--max-filesize") + 1], "1234");
    const content = await plan({ outputMode: "content" }, dir);
    assert(ripgrepGrepArgs(content).includes("--sort"));
    assertFalse(
      ripgrepGrepArgs(content, { unsorted: true }).includes("--sort"),
    );
    // Files mode is rg -l; the pattern comes after --regexp, the root last.
    assert(bounded.includes("--files-with-matches"));
    assertEquals(bounded.slice(-3), ["needle", "--", "."]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ripgrepGrepArgs passes a context length only when it is not 0 (rg's default)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const none = ripgrepGrepArgs(await plan({ outputMode: "content" }, dir));
    assertFalse(none.includes("--before-context"));
    assertFalse(none.includes("--after-context"));
    const before = ripgrepGrepArgs(
      await plan({ outputMode: "content", before: 2 }, dir),
    );
    assertEquals(before[before.indexOf("--before-context") + 1], "2");
    assertFalse(before.includes("--after-context"));
    const both = ripgrepGrepArgs(
      await plan({ outputMode: "content", context: 3 }, dir),
    );
    assertEquals(both[both.indexOf("--before-context") + 1], "3");
    assertEquals(both[both.indexOf("--after-context") + 1], "3");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "RipgrepSearch content mode numbers lines before and after the 8 KiB the binary sniff reads, and drops a file with a NUL there",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const filler = Array.from({ length: 2000 }, (_, i) => `line ${i}`);
      // Matches at lines 3, 1500 (past 8 KiB) and 2005.
      const text = ["a", "b", "needle 1", ...filler, "needle 2"];
      text.splice(1499, 0, "needle mid");
      await Deno.writeTextFile(`${dir}/big.txt`, text.join("\n") + "\n");
      await Deno.writeTextFile(`${dir}/small.txt`, "x\nneedle\n");
      await Deno.writeTextFile(`${dir}/bin.txt`, "needle\n\u0000\n");
      await Deno.writeTextFile(`${dir}/empty-line.txt`, "\n\n\nneedle");
      const search = new RipgrepSearch({
        fs: new LocalFileSystem({ cwd: dir }),
      });
      const result = await search.grep({
        pattern: "needle",
        path: dir,
        outputMode: "content",
      });
      assert(result.mode === "content");
      assertEquals(
        result.lines.map((l) => [l.path.slice(dir.length + 1), l.lineNumber]),
        [
          ["big.txt", 3],
          ["big.txt", 1500],
          ["big.txt", 2005],
          ["empty-line.txt", 4],
          ["small.txt", 2],
        ],
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "RipgrepSearch content mode: the fallback's answers over 300 files (binary, too large, matches past 8 KiB, a head limit)",
  ignore: !rg,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const filler = Array.from({ length: 1500 }, (_, i) => `filler ${i}`)
        .join("\n");
      for (let i = 0; i < 300; i++) {
        const folder = `${dir}/d${i % 7}`;
        await Deno.mkdir(folder, { recursive: true });
        const kind = i % 5;
        const text = kind === 0
          ? `a\nneedle ${i}\n\u0000\n` // binary
          : kind === 1
          ? `needle ${i}\n${filler}\nneedle again ${i}\n` // past 8 KiB
          : kind === 2
          ? `${"needle big\n".repeat(3000)}` // over the limit below
          : kind === 3
          ? `x\ny\nneedle ${i}\nz\nneedle ${i}\n`
          : `no match ${i}\n`;
        await Deno.writeTextFile(`${folder}/f${i}.txt`, text);
      }
      const fs = new LocalFileSystem({ cwd: dir });
      const engines = [
        new RipgrepSearch({ fs }),
        new FallbackSearch({ fs, local: true }),
      ];
      for (
        const request of [
          { maxFileBytes: 20_000 },
          { maxFileBytes: 20_000, headLimit: 30 },
          { maxFileBytes: 20_000, context: 1, offset: 5 },
        ]
      ) {
        const [ours, fallback] = await Promise.all(
          engines.map((engine) =>
            engine.grep({
              pattern: "needle",
              path: dir,
              outputMode: "content",
              ...request,
            })
          ),
        );
        assert(ours!.mode === "content" && ours!.lines.length > 0);
        // Past a head limit, rg's engine lists only the too-large files it
        // reached (it sees the size of matching files only); the fallback
        // lists every one.
        const stopped = "headLimit" in request;
        assertEquals(
          { ...ours!, engine: "fallback", ...stopped ? { skipped: [] } : {} },
          { ...fallback!, ...stopped ? { skipped: [] } : {} },
          JSON.stringify(request),
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
