import { PROJECT_CONFIG, runDenoScript } from "../helpers/testing.ts";
import {
  assertEquals,
  assertLess,
  assertStringIncludes,
} from "../helpers/assert.ts";
import { FallbackSearch } from "../../search/fallback.ts";
import type { SearchFileSystem } from "../../search/types.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

engineSuite(
  "FallbackSearch (local paths)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ cwd: root }),
      local: true,
    }),
  { backtracks: false },
);

engineSuite(
  "FallbackSearch (file system interface)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ cwd: root }),
      local: false,
    }),
  { backtracks: false },
);

Deno.test("FallbackSearch runs under --allow-read narrowed to the searched folder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeTextFile(`${dir}/data/a.txt`, "one\nneedle two\n");
    const script = `${dir}/script.ts`;
    await Deno.writeTextFile(
      script,
      `import { FallbackSearch } from ${
        JSON.stringify(
          new URL("../../search/fallback.ts", import.meta.url).href,
        )
      };
import { LocalFileSystem } from ${
        JSON.stringify(
          new URL("../../runtimes/local/fs.ts", import.meta.url).href,
        )
      };
const search = new FallbackSearch({ fs: new LocalFileSystem({ cwd: ${
        JSON.stringify(`${dir}/data`)
      } }), local: true });
const result = await search.grep({ pattern: "needle", outputMode: "count" });
console.log(JSON.stringify(result.mode === "count" ? result.counts : null));
`,
    );
    const { code, stdout, stderr } = await runDenoScript(script, [
      `--allow-read=${dir}/data`,
    ]);
    assertEquals(code, 0, stderr);
    assertEquals(
      stdout.trim(),
      JSON.stringify([{ path: `${dir}/data/a.txt`, count: 1 }]),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The threads of a process that are running or waiting for a CPU (`R`). */
function runnableThreads(pid: number): string[] {
  const found: string[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const s = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/stat`);
      if (s.slice(s.lastIndexOf(")") + 2).startsWith("R")) found.push(t.name);
    } catch {
      // ended
    }
  }
  return found;
}

/**
 * Runs searches through the fallback in a process of its own, each with a
 * 1 s time limit, and returns each one's error ("" when it answered) and
 * time, and how many of 20 samples, over the 2 s after the last answer,
 * found one of that process's threads running or waiting for a CPU.
 */
async function searchInProcess(
  patterns: readonly string[],
  content: string,
): Promise<
  { answers: { message: string; ms: number }[]; busiest: number }
> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.writeTextFile(`${dir}/evil.txt`, content);
    const script = `${dir}/script.ts`;
    await Deno.writeTextFile(
      script,
      `import { FallbackSearch } from ${
        JSON.stringify(
          new URL("../../search/fallback.ts", import.meta.url).href,
        )
      };
import { LocalFileSystem } from ${
        JSON.stringify(
          new URL("../../runtimes/local/fs.ts", import.meta.url).href,
        )
      };
const search = new FallbackSearch({ fs: new LocalFileSystem({ cwd: ${
        JSON.stringify(dir)
      } }) });
const answers = [];
for (const pattern of ${JSON.stringify(patterns)}) {
  const start = performance.now();
  let message = "";
  try {
    await search.grep({ pattern, timeoutMs: 1000 });
  } catch (error) {
    message = String(error);
  }
  answers.push({ message, ms: performance.now() - start });
}
console.log(JSON.stringify(answers));
await new Promise((r) => setTimeout(r, 3000));
Deno.exit(0);
`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--config=${PROJECT_CONFIG}`,
        "--allow-read",
        script,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    // A thread busy matching is runnable (R) at every sample, however loaded
    // the machine; an idle one sleeps. 20 samples over 2 s: the most samples
    // in which one thread was runnable.
    const runnable = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      for (const tid of runnableThreads(child.pid)) {
        runnable.set(tid, (runnable.get(tid) ?? 0) + 1);
      }
    }
    const busiest = Math.max(0, ...runnable.values());
    try {
      child.kill("SIGKILL");
    } catch {
      // ended
    }
    await reader.cancel().catch(() => {});
    await child.stderr.cancel().catch(() => {});
    await child.status;
    return { answers: JSON.parse(text.trim() || "[]"), busiest };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name:
    "FallbackSearch answers catastrophic patterns over a 50,000-character line in under 1 s (re2js: linear time), no core left busy",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const { answers, busiest } = await searchInProcess(
      ["(a+)+$", "(a|aa)+$", "(\\w+\\s?)+$"],
      `${"a".repeat(50_000)}\n`,
    );
    assertEquals(answers.map((a) => a.message), ["", "", ""]);
    for (const answer of answers) assertLess(answer.ms, 1000);
    assertLess(busiest, 10, "a thread still burns a core");
  },
});

Deno.test({
  name:
    "FallbackSearch stops a long match at the time limit, inside one big file: no core keeps burning",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // 20 MB of lines that `(.*a){12}[xy]` costs re2js about 1 s per MB on.
    const { answers, busiest } = await searchInProcess(
      ["(.*a){12}[xy]"],
      `${"ab".repeat(500)}\n`.repeat(20_000),
    );
    assertStringIncludes(answers[0]!.message, "timed out after 1000 ms");
    assertLess(answers[0]!.ms, 3000);
    assertLess(busiest, 10, "a thread still burns a core");
  },
});

Deno.test("FallbackSearch over local paths finds the same through a symlinked root as through the real one", async () => {
  // Deno checks `FsFile.stat` against the real path and --allow-read against
  // the path as written: the search processes must be allowed both.
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${dir}/real/sub`, { recursive: true });
    await Deno.writeTextFile(`${dir}/real/a.txt`, "needle one\n");
    await Deno.writeTextFile(`${dir}/real/sub/b.txt`, "two\nneedle\n");
    await Deno.symlink(`${dir}/real`, `${dir}/link`);
    const search = (root: string) =>
      new FallbackSearch({
        fs: new LocalFileSystem({ cwd: root }),
        local: true,
      })
        .grep({ pattern: "needle", outputMode: "count" });
    const real = await search(`${dir}/real`);
    const linked = await search(`${dir}/link`);
    assertEquals(
      real.mode === "count" && real.counts.map((c) => c.count),
      [1, 1],
    );
    assertEquals(
      linked.mode === "count" &&
        linked.counts.map((c) => [c.path.replace(`${dir}/link`, ""), c.count]),
      [["/a.txt", 1], ["/sub/b.txt", 1]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FallbackSearch stops reading files once a content search's head limit is reached", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (let i = 0; i < 300; i++) {
      await Deno.writeTextFile(
        `${dir}/f${String(i).padStart(3, "0")}.txt`,
        "needle\n",
      );
    }
    const local = new LocalFileSystem({ cwd: dir });
    let reads = 0;
    const fs: SearchFileSystem = {
      resolve: (path) => local.resolve(path),
      stat: (path, options) => local.stat(path, options),
      list: (path, options) => local.list(path, options),
      readBytes: (path, options) => {
        reads++;
        return local.readBytes(path, options);
      },
    };
    const search = new FallbackSearch({ fs });
    const first = await search.grep({
      pattern: "needle",
      outputMode: "content",
      headLimit: 2,
    });
    assertEquals(
      first.mode === "content" && first.lines.map((l) => l.path.slice(-8)),
      ["f000.txt", "f001.txt"],
    );
    assertEquals(first.totalEntries, null);
    // One batch of 64 files and the one read ahead, not the 300.
    assertLess(reads, 300 / 2);
    reads = 0;
    const all = await search.grep({ pattern: "needle", outputMode: "count" });
    assertEquals(all.mode === "count" && all.counts.length, 300);
    assertEquals(reads, 300);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
