import { PROJECT_CONFIG, runDenoScript } from "../_internal/testing.ts";
import {
  assertEquals,
  assertLess,
  assertStringIncludes,
} from "../_internal/assert.ts";
import { FallbackSearch } from "./fallback.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

engineSuite(
  "FallbackSearch (local paths)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ cwd: root }),
      local: true,
    }),
  { backtracks: true },
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
        JSON.stringify(new URL("./fallback.ts", import.meta.url).href)
      };
import { LocalFileSystem } from ${
        JSON.stringify(
          new URL("../runtimes/local/fs.ts", import.meta.url).href,
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

/** A catastrophic regex for a backtracking engine, and its text. */
const EVIL = { pattern: "(a+)+$", content: `${"a".repeat(40)}b\n` };
/**
 * Work that takes the linear matcher many seconds (20 MB of lines that
 * `(.*a){12}x` keeps a dozen threads busy on, with no match).
 */
const SLOW = {
  pattern: "(.*a){12}x",
  content: `${"ab".repeat(500)}\n`.repeat(20_000),
};

/**
 * Runs a search through the fallback in a process of its own (under the
 * given flags) with a 1 s time limit and returns the error (or "" when it
 * answered) and how many of 20 samples, over the 2 s after the search
 * answered, found one of that process's threads running or waiting for a
 * CPU.
 */
async function burnAfterTimeout(
  local: boolean,
  flags: readonly string[],
  work: { pattern: string; content: string } = EVIL,
): Promise<{ message: string; busiest: number }> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.writeTextFile(`${dir}/evil.txt`, work.content);
    const script = `${dir}/script.ts`;
    await Deno.writeTextFile(
      script,
      `import { FallbackSearch } from ${
        JSON.stringify(new URL("./fallback.ts", import.meta.url).href)
      };
import { LocalFileSystem } from ${
        JSON.stringify(
          new URL("../runtimes/local/fs.ts", import.meta.url).href,
        )
      };
const search = new FallbackSearch({ fs: new LocalFileSystem({ cwd: ${
        JSON.stringify(dir)
      } }), local: ${local} });
let message = "";
try {
  await search.grep({ pattern: ${
        JSON.stringify(work.pattern)
      }, timeoutMs: 1000 });
} catch (error) {
  message = String(error);
}
console.log(JSON.stringify(message));
await new Promise((r) => setTimeout(r, 3000));
Deno.exit(0);
`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--config=${PROJECT_CONFIG}`,
        ...flags,
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
    // A thread busy in a regular expression is runnable (R) at every
    // sample, however loaded the machine; an idle one sleeps. 20 samples
    // over 2 s: the most samples in which one thread was runnable.
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
    return { message: JSON.parse(text.trim() || '""'), busiest };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const local of [true]) {
  Deno.test({
    name: `FallbackSearch (${
      local ? "local paths" : "file system interface"
    }) really stops a catastrophic regex at the time limit: no core keeps burning`,
    ignore: Deno.build.os !== "linux",
    async fn() {
      const { message, busiest } = await burnAfterTimeout(local, [
        "--allow-read",
        "--allow-run",
      ]);
      assertStringIncludes(message, "timed out after 1000 ms");
      assertLess(busiest, 10, "a thread still burns a core");
    },
  });
}

for (const local of [true, false]) {
  const how = local
    ? "without the permission to start a process"
    : "over a file system interface";
  Deno.test({
    name:
      `FallbackSearch ${how} matches in Workers in linear time: a catastrophic regex answers at once`,
    ignore: Deno.build.os !== "linux",
    async fn() {
      const start = performance.now();
      const { message, busiest } = await burnAfterTimeout(local, [
        "--allow-read",
      ]);
      assertEquals(message, "");
      assertLess(performance.now() - start, 15_000);
      assertLess(busiest, 10, "a thread still burns a core");
    },
  });
  Deno.test({
    name:
      `FallbackSearch ${how} really stops its Workers at the time limit: no core keeps burning`,
    ignore: Deno.build.os !== "linux",
    async fn() {
      const { message, busiest } = await burnAfterTimeout(
        local,
        ["--allow-read"],
        SLOW,
      );
      assertStringIncludes(message, "timed out after 1000 ms");
      // Before the linear matcher, a Worker busy in V8's native regular
      // expression code kept burning after terminate() (20 of 20 samples).
      assertLess(busiest, 10, "a Worker still burns a core");
    },
  });
}

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
