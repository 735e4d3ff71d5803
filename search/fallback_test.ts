import { PROJECT_CONFIG, runDenoScript } from "../_internal/testing.ts";
import {
  assertEquals,
  assertGreater,
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
      fs: new LocalFileSystem({ root: root }),
      local: true,
    }),
  { backtracks: true },
);

engineSuite(
  "FallbackSearch (file system interface)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ root: root }),
      local: false,
    }),
  { backtracks: true },
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
const search = new FallbackSearch({ fs: new LocalFileSystem({ root: ${
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

/** CPU ticks of each thread of a process. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const s = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/stat`);
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      out.set(t.name, Number(f[11]) + Number(f[12]));
    } catch {
      // ended
    }
  }
  return out;
}

/**
 * Runs a catastrophic regex through the fallback in a process of its own
 * (under the given flags) and returns the error and the most CPU ticks any of
 * that process's threads gained in the 2 s after the search answered.
 */
async function burnAfterTimeout(
  local: boolean,
  flags: readonly string[],
): Promise<{ message: string; busiest: number }> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.writeTextFile(`${dir}/evil.txt`, `${"a".repeat(40)}b\n`);
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
const search = new FallbackSearch({ fs: new LocalFileSystem({ root: ${
        JSON.stringify(dir)
      } }), local: ${local} });
let message = "";
try {
  await search.grep({ pattern: "(a+)+$", timeoutMs: 1000 });
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
    await new Promise((r) => setTimeout(r, 200));
    const before = threadTicks(child.pid);
    await new Promise((r) => setTimeout(r, 2000));
    let busiest = 0;
    for (const [tid, t] of threadTicks(child.pid)) {
      busiest = Math.max(busiest, t - (before.get(tid) ?? t));
    }
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

for (const local of [true, false]) {
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

Deno.test({
  name:
    "FallbackSearch without the permission to start a process falls back to Workers (documented: a busy Worker keeps burning)",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const { message, busiest } = await burnAfterTimeout(true, [
      "--allow-read",
    ]);
    assertStringIncludes(message, "timed out after 1000 ms");
    // Measured, not hoped for: this is why processes are used when allowed.
    assertGreater(busiest, 3, "the Worker was stopped after all");
  },
});
