import { assert, assertEquals } from "../_internal/assert.ts";
import { detectRipgrep, RipgrepSearch } from "./ripgrep.ts";
import { comparePaths } from "./rules.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

const rg = await detectRipgrep();
if (!rg) {
  console.error(
    "ripgrep_test.ts: ripgrep (rg) is not installed: the RipgrepSearch tests are ignored; install ripgrep to run them",
  );
}

engineSuite(
  "RipgrepSearch",
  (root) => new RipgrepSearch({ fs: new LocalFileSystem({ root: root }) }),
  { backtracks: false, ignore: !rg },
);

// Content mode without the sorted attempt: always the parallel, unsorted pass
// (unless its lines outgrow the budget).
engineSuite(
  "RipgrepSearch (parallel content only)",
  (root) =>
    new RipgrepSearch({
      fs: new LocalFileSystem({ root: root }),
      sortedAttemptMs: 0,
    }),
  { backtracks: false, ignore: !rg },
);

Deno.test({
  name:
    "RipgrepSearch: content in path order over many files, parallel or sorted",
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
      const fs = new LocalFileSystem({ root: dir });
      const sorted = new RipgrepSearch({ fs, sortedAttemptMs: 60_000 });
      const parallel = new RipgrepSearch({ fs, sortedAttemptMs: 0 });
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
      const fs = new LocalFileSystem({ root: dir });
      const sorted = new RipgrepSearch({ fs, sortedAttemptMs: 60_000 });
      const parallel = new RipgrepSearch({ fs, sortedAttemptMs: 0 });
      for (
        const request of [
          { pattern: "needle", outputMode: "content" },
          { pattern: "needle", outputMode: "content", offset: 14_000 },
        ] as const
      ) {
        const a = await sorted.grep(request);
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
        fs: new LocalFileSystem({ root: dir }),
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
