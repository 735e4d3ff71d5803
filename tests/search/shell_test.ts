import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../helpers/assert.ts";
import { detectRipgrep, RipgrepSearch } from "../../search/ripgrep.ts";
import {
  type SearchShellExecOptions,
  ShellSearch,
} from "../../search/shell.ts";
import { bashShell, pathWithout } from "./_shell_testing.ts";
import { engineSuite, makeFixture } from "./_test_suite.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";

const rg = await detectRipgrep();
if (!rg) {
  console.error(
    "shell_test.ts: ripgrep (rg) is not installed: the ShellSearch (rg) tests are ignored; install ripgrep to run them",
  );
}
const noRgPath = await pathWithout(["rg"]);
const noBase64Path = await pathWithout(["rg", "base64"]);
globalThis.addEventListener("unload", () => {
  Deno.removeSync(noRgPath, { recursive: true });
  Deno.removeSync(noBase64Path, { recursive: true });
});

engineSuite(
  "ShellSearch (rg in the sandbox)",
  (root) =>
    new ShellSearch({
      shell: bashShell(),
      fs: new LocalFileSystem({ cwd: root }),
      useRipgrep: true,
    }),
  { backtracks: false, ignore: !rg },
);

engineSuite(
  "ShellSearch (find and grep, no rg)",
  (root) =>
    new ShellSearch({
      shell: bashShell({ path: noRgPath }),
      fs: new LocalFileSystem({ cwd: root }),
    }),
  { backtracks: false },
);

engineSuite(
  "ShellSearch (no base64: the file-system fallback)",
  (root) =>
    new ShellSearch({
      shell: bashShell({ path: noBase64Path }),
      fs: new LocalFileSystem({ cwd: root }),
    }),
  { backtracks: false },
);

Deno.test({
  name:
    "ShellSearch: a sandbox with rg but no GNU find greps with rg, its glob and ls walk the file-system interface",
  ignore: !rg,
  async fn() {
    const noFindPath = await pathWithout(["find"]);
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/a.md`, "x\nneedle\n");
      await Deno.writeTextFile(`${dir}/b.txt`, "needle\n");
      const shell = bashShell({ path: noFindPath });
      const search = new ShellSearch({
        shell,
        fs: new LocalFileSystem({ cwd: dir }),
      });
      const grep = await search.grep({ pattern: "needle", path: dir });
      assertEquals(grep.engine, "ripgrep");
      assert(grep.mode === "files_with_matches");
      assertEquals(grep.files, [`${dir}/a.md`, `${dir}/b.txt`]);
      const glob = await search.glob({ pattern: "*.md", path: dir });
      assertEquals(glob.files.map((f) => f.path), [`${dir}/a.md`]);
      const ls = await search.ls({ path: dir });
      assertEquals(ls.entries.map((e) => e.path), ["a.md", "b.txt"]);
      assert(shell.commands.some((c) => c.includes(" rg ")));
      assert(!shell.commands.some((c) => /\bfind \. -mindepth/.test(c)));
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(noFindPath, { recursive: true });
    }
  },
});

Deno.test("ShellSearch: tools are detected once; a missing rg is reported when required", async () => {
  const root = await makeFixture();
  try {
    const shell = bashShell({ path: noRgPath });
    const search = new ShellSearch({
      shell,
      fs: new LocalFileSystem({ cwd: root }),
    });
    const result = await search.grep({ pattern: "hello" });
    assertEquals(result.engine, "fallback");
    await search.glob({ pattern: "*.md" });
    await search.ls({});
    const detections = shell.commands.filter((c) => c.includes("command -v"));
    assertEquals(detections.length, 1);
    const required = new ShellSearch({
      shell: bashShell({ path: noRgPath }),
      fs: new LocalFileSystem({ cwd: root }),
      useRipgrep: true,
    });
    await assertRejects(
      () => required.grep({ pattern: "x" }),
      Error,
      "Cannot use ripgrep in the sandbox: rg is not installed",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name: "ShellSearch: hostile file names and patterns are quoted, never run",
  ignore: !rg,
  async fn() {
    const root = await makeFixture();
    try {
      const names = [
        "it's $(touch pwned1).txt",
        "`touch pwned2`.txt",
        "semi;colon & amp.txt",
        "new\nline.txt",
        "-n.txt",
      ];
      for (const name of names) {
        await Deno.writeTextFile(`${root}/${name}`, "needle 'quoted' $(x)\n");
      }
      const fs = new LocalFileSystem({ cwd: root });
      const local = new RipgrepSearch({ fs });
      for (const [label, path] of [["rg", undefined], ["no rg", noRgPath]]) {
        const shell = bashShell(path === undefined ? {} : { path });
        const search = new ShellSearch({ shell, fs });
        for (
          const request of [
            { pattern: "needle 'quoted' \\$\\(x\\)", outputMode: "content" },
            { pattern: "needle 'quoted'", outputMode: "count" },
            { pattern: "$(touch pwned3)" },
          ] as const
        ) {
          assertEquals(
            { ...await search.grep(request), engine: "" },
            { ...await local.grep(request), engine: "" },
            `${label} ${request.pattern}`,
          );
        }
        const glob = await search.glob({ pattern: "*'*", limit: 10 });
        assertEquals(glob.files.length, 1, label);
        const files = await search.grep({
          pattern: "needle",
          path: `${root}/${names[0]}`,
        });
        assert(files.mode === "files_with_matches");
        assertEquals(files.files, [`${root}/${names[0]}`]);
      }
      for (const entry of Deno.readDirSync(root)) {
        assert(!entry.name.startsWith("pwned"), entry.name);
      }
      for (const entry of Deno.readDirSync(Deno.cwd())) {
        assert(!entry.name.startsWith("pwned"), entry.name);
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "ShellSearch: a search moves far fewer bytes than the tree holds",
  ignore: !rg,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "skillrun-shell-bytes-" });
    try {
      let treeBytes = 0;
      for (let d = 0; d < 10; d++) {
        await Deno.mkdir(`${root}/d${d}`);
        for (let f = 0; f < 50; f++) {
          const text = `line ${d}-${f}\n${"filler text ".repeat(200)}\n${
            f === 7 ? "the needle is here\n" : ""
          }`;
          await Deno.writeTextFile(`${root}/d${d}/f${f}.txt`, text);
          treeBytes += text.length;
        }
      }
      const fs = new LocalFileSystem({ cwd: root });
      // No rg: a find listing plus the files holding the literal (grep -F).
      for (
        const [label, path, factor] of [
          ["rg", undefined, 50],
          ["no rg", noRgPath, 10],
        ] as const
      ) {
        const shell = bashShell(path === undefined ? {} : { path });
        const search = new ShellSearch({ shell, fs });
        const result = await search.grep({
          pattern: "needle",
          outputMode: "content",
        });
        assert(result.mode === "content");
        assertEquals(result.lines.length, 10);
        const moved = shell.stdoutBytes;
        assert(
          moved * factor < treeBytes,
          `${label}: ${moved} bytes moved for a ${treeBytes}-byte tree`,
        );
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "ShellSearch: an answer past the output cap is a clear error",
  ignore: !rg,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "skillrun-shell-cap-" });
    try {
      for (let i = 0; i < 200; i++) {
        await Deno.writeTextFile(`${root}/file-${i}.txt`, "x\n");
      }
      const search = new ShellSearch({
        shell: bashShell(),
        fs: new LocalFileSystem({ cwd: root }),
        maxOutputBytes: 1024,
      });
      const error = await assertRejects(() => search.grep({ pattern: "x" }));
      assertStringIncludes(
        (error as Error).message,
        "the answer in the sandbox passed the 1 KiB output cap",
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "ShellSearch: content past the first output cap is fetched again, whole",
  ignore: !rg,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "skillrun-shell-more-" });
    try {
      const line = `hit ${"x".repeat(60)}\n`;
      await Deno.writeTextFile(`${root}/a.txt`, line.repeat(20_000));
      await Deno.writeTextFile(`${root}/b.txt`, line.repeat(20_000));
      const fs = new LocalFileSystem({ cwd: root });
      const request = {
        pattern: "hit",
        outputMode: "content",
        offset: 30_000,
        headLimit: 5,
      } as const;
      const search = new ShellSearch({ shell: bashShell(), fs });
      const result = await search.grep(request);
      assert(result.mode === "content");
      assertEquals(
        result.lines.map((l) => `${l.path.slice(-5)}:${l.lineNumber}`),
        [
          "b.txt:10001",
          "b.txt:10002",
          "b.txt:10003",
          "b.txt:10004",
          "b.txt:10005",
        ],
      );
      assertEquals(
        { ...result, engine: "" },
        { ...await new RipgrepSearch({ fs }).grep(request), engine: "" },
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test("ShellSearch: a sandbox command past the time limit is stopped and reported", async () => {
  const root = await makeFixture();
  try {
    for (const path of [undefined, noRgPath]) {
      const inner = bashShell(path === undefined ? {} : { path });
      let stopped = 0;
      const slow = {
        async exec(
          command: string,
          options: Parameters<typeof inner.exec>[1],
        ) {
          // Every command but the detection hangs.
          const result = await inner.exec(
            command.includes("command -v") ? command : `sleep 20; ${command}`,
            options,
          );
          if (result.aborted) stopped++;
          return result;
        },
      };
      const search = new ShellSearch({
        shell: slow,
        fs: new LocalFileSystem({ cwd: root }),
      });
      const start = performance.now();
      const error = await assertRejects(() =>
        search.grep({ pattern: "hello", timeoutMs: 300 })
      );
      assertEquals((error as Error).name, "SearchTimeoutError");
      assertStringIncludes((error as Error).message, "timed out after 300 ms");
      assert(performance.now() - start < 10_000);
      // Every command in flight was stopped: rg's, or grep's and find's
      // (the prefilter and the listing run at once). The error may come
      // back before the second stopped command's result does: wait for it,
      // far less than the 20 s it would sleep.
      const expected = path === undefined ? 1 : 2;
      const waitUntil = performance.now() + 5_000;
      while (stopped < expected && performance.now() < waitUntil) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assertEquals(stopped, expected);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ShellSearch: an abort during the tool detection is the caller's abort", async () => {
  const root = await makeFixture();
  try {
    const inner = bashShell();
    const controller = new AbortController();
    const slow = {
      exec(command: string, options: Parameters<typeof inner.exec>[1]) {
        setTimeout(
          () => controller.abort(new DOMException("stop", "AbortError")),
          50,
        );
        return inner.exec(`sleep 20; ${command}`, options);
      },
    };
    const search = new ShellSearch({
      shell: slow,
      fs: new LocalFileSystem({ cwd: root }),
    });
    const error = await assertRejects(() =>
      search.grep({ pattern: "hello", signal: controller.signal })
    );
    assertEquals((error as DOMException).name, "AbortError");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ShellSearch without rg: the find listing keeps only the names a glob or type can match, and every match", async () => {
  const root = await Deno.makeTempDir({ prefix: "skillrun-shell-names-" });
  try {
    const names = ["a.md", "é.md", "ab.md", "b.txt", "c.ts", "d/ä1.ts"];
    for (let i = 0; i < 200; i++) names.push(`other/f${i}.json`);
    for (const name of names) {
      await Deno.mkdir(`${root}/${name}`.replace(/\/[^/]*$/, ""), {
        recursive: true,
      });
      await Deno.writeTextFile(`${root}/${name}`, "needle\n");
    }
    const fs = new LocalFileSystem({ cwd: root });
    const globOf = async (
      search: ShellSearch | RipgrepSearch,
      pattern: string,
    ): Promise<string[]> =>
      (await search.glob({ pattern })).files.map((f) =>
        f.path.slice(root.length + 1)
      ).sort();
    const shell = bashShell({ path: noRgPath });
    const search = new ShellSearch({ shell, fs });
    const expected: Record<string, string[]> = {
      "?.md": ["a.md", "é.md"],
      "**/?[0-9].ts": ["d/ä1.ts"],
      "*.{md,txt}": ["a.md", "ab.md", "b.txt", "é.md"],
      "d/*": ["d/ä1.ts"],
    };
    for (const [pattern, files] of Object.entries(expected)) {
      const before = shell.stdoutBytes;
      assertEquals(await globOf(search, pattern), files, pattern);
      // The 200 JSON files were never listed (about 6 KiB of base64).
      if (pattern !== "d/*") assert(shell.stdoutBytes - before < 2048, pattern);
      if (rg) {
        // ripgrep 13's `?` is one byte (documented in search/README.md).
        assertEquals(
          await globOf(new RipgrepSearch({ fs }), pattern),
          files.filter((f) => !pattern.includes("?") || !/[^ -~]/.test(f)),
          pattern,
        );
      }
    }
    const typed = await search.grep({ pattern: "needle", type: "ts" });
    assert(typed.mode === "files_with_matches");
    assertEquals(typed.files.map((f) => f.slice(root.length + 1)).sort(), [
      "c.ts",
      "d/ä1.ts",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ShellSearch without rg: files are read with one cat, and through the file system when a file changes during the read", async () => {
  const root = await Deno.makeTempDir({ prefix: "skillrun-shell-read-" });
  try {
    await Deno.writeTextFile(`${root}/a.txt`, "needle one\n");
    await Deno.writeTextFile(`${root}/b\nc.txt`, "x\nneedle two\n");
    await Deno.writeTextFile(`${root}/d.txt`, "needle four\n");
    const fs = new LocalFileSystem({ cwd: root });
    const lines = async (search: ShellSearch): Promise<string[]> => {
      const result = await search.grep({
        pattern: "needle",
        outputMode: "content",
      });
      assert(result.mode === "content");
      return result.lines.map((l) =>
        `${l.path.slice(root.length + 1)}:${l.lineNumber}:${l.text}`
      );
    };
    const oneCat = "-exec cat -- {} +";

    const plain = bashShell({ path: noRgPath });
    assertEquals(await lines(new ShellSearch({ shell: plain, fs })), [
      "a.txt:1:needle one",
      "b\nc.txt:2:needle two",
      "d.txt:1:needle four",
    ]);
    assertEquals(plain.commands.filter((c) => c.includes(oneCat)).length, 1);

    // d.txt grows while it is read: the sizes no longer agree, and the files
    // are read again through the file system (d.txt with its new line), with
    // no command more in the sandbox.
    const inner = bashShell({ path: noRgPath });
    const growing = {
      ...inner,
      exec: (command: string, options: SearchShellExecOptions) =>
        inner.exec(
          command.replace(
            oneCat,
            `${oneCat}; printf 'needle five\\n' >> ${root}/d.txt`,
          ),
          options,
        ),
    };
    assertEquals(await lines(new ShellSearch({ shell: growing, fs })), [
      "a.txt:1:needle one",
      "b\nc.txt:2:needle two",
      "d.txt:1:needle four",
      "d.txt:2:needle five",
    ]);
    assertEquals(inner.commands.filter((c) => c.includes(oneCat)).length, 1);
    assertEquals(inner.commands.length, plain.commands.length);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
