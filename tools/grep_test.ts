import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { createToolContext } from "./context.ts";
import { createGrepTool } from "./grep.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { makeTree } from "./_tree.ts";
import {
  contextWithEngine,
  conversationContext,
  onHost,
  tempDir,
  testEachEngine,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

testEachEngine(
  "grep lists matching files by default, hidden and unicode included, binary and heavy skipped",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    assertEquals(await grep.execute({ pattern: "TODO" }), {
      text: [
        "Found 6 files",
        `${dir.path}/.hidden.txt`,
        `${dir.path}/my file.md`,
        `${dir.path}/src/a.ts`,
        `${dir.path}/src/deep/b22.ts`,
        `${dir.path}/with space/c.md`,
        `${dir.path}/技能.txt`,
      ].join("\n"),
      isError: false,
    });
  },
);

testEachEngine(
  "grep shows content with line numbers and context, -- between groups",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    const file = `${dir.path}/my file.md`;
    assertEquals(
      (await grep.execute({
        pattern: "TODO",
        path: "my file.md",
        output_mode: "content",
        context_before: 1,
      })).text,
      [
        `${file}-1-# Title`,
        `${file}:2:TODO one`,
        `${file}-3-middle`,
        `${file}:4:TODO two`,
        `${file}-5-`,
        `${file}:6:last TODO`,
      ].join("\n"),
    );
    assertEquals(
      (await grep.execute({
        pattern: "TODO",
        path: "my file.md",
        output_mode: "content",
        context_after: 1,
        line_numbers: false,
      })).text,
      [
        `${file}:TODO one`,
        `${file}-middle`,
        `${file}:TODO two`,
        `${file}-`,
        `${file}:last TODO`,
      ].join("\n"),
    );
    assertEquals(
      (await grep.execute({
        pattern: "^middle$",
        path: "my file.md",
        output_mode: "content",
        context: 1,
      })).text,
      [`${file}-2-TODO one`, `${file}:3:middle`, `${file}-4-TODO two`].join(
        "\n",
      ),
    );
  },
);

testEachEngine(
  "grep puts -- between separate groups of lines",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    const file = `${dir.path}/my file.md`;
    assertEquals(
      (await grep.execute({
        pattern: "Title|last",
        path: file,
        output_mode: "content",
        context: 1,
      })).text,
      [
        `${file}:1:# Title`,
        `${file}-2-TODO one`,
        "--",
        `${file}-5-`,
        `${file}:6:last TODO`,
      ].join("\n"),
    );
  },
);

testEachEngine("grep counts matching lines per file", async (engine) => {
  await using dir = await tempDir();
  await makeTree(onHost(dir.path));
  const grep = createGrepTool(contextWithEngine(dir.path, engine));
  assertEquals(
    (await grep.execute({
      pattern: "TODO",
      output_mode: "count",
      glob: "*.md",
    })).text,
    [
      `${dir.path}/my file.md:3`,
      `${dir.path}/with space/c.md:1`,
      "",
      "Found 4 matching lines in 2 files",
    ].join("\n"),
  );
});

testEachEngine("grep pages with head_limit and offset", async (engine) => {
  await using dir = await tempDir();
  await makeTree(onHost(dir.path));
  const grep = createGrepTool(contextWithEngine(dir.path, engine));
  assertEquals(
    (await grep.execute({ pattern: "TODO", head_limit: 2 })).text,
    [
      "Found 6 files",
      `${dir.path}/.hidden.txt`,
      `${dir.path}/my file.md`,
      "",
      "[Showing entries 1-2 of 6; use offset 2 to see more]",
    ].join("\n"),
  );
  assertEquals(
    (await grep.execute({ pattern: "TODO", head_limit: 2, offset: 5 })).text,
    [
      "Found 6 files",
      `${dir.path}/技能.txt`,
      "",
      "[Showing entries 6-6 of 6]",
    ].join("\n"),
  );
});

testEachEngine(
  "grep filters by type, ignores case, and spans lines in multiline mode",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    assertEquals(
      (await grep.execute({
        pattern: "todo",
        case_insensitive: true,
        type: "ts",
      })).text,
      ["Found 2 files", `${dir.path}/src/a.ts`, `${dir.path}/src/deep/b22.ts`]
        .join("\n"),
    );
    assertEquals(
      (await grep.execute({
        pattern: "one.middle",
        multiline: true,
        output_mode: "content",
      })).text,
      [`${dir.path}/my file.md:2:TODO one`, `${dir.path}/my file.md:3:middle`]
        .join("\n"),
    );
  },
);

testEachEngine(
  "grep searches a heavy folder given as the root, and says when nothing matches",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    assertEquals(
      (await grep.execute({ pattern: "TODO", path: "node_modules" })).text,
      ["Found 1 file", `${dir.path}/node_modules/pkg/index.js`].join("\n"),
    );
    assertEquals(await grep.execute({ pattern: "no such words" }), {
      text: "No files found",
      isError: false,
    });
  },
);

testEachEngine(
  "grep reports a bad regex, a missing path and misplaced context clearly",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const grep = createGrepTool(contextWithEngine(dir.path, engine));
    assertEquals(await grep.execute({ pattern: "(unclosed" }), {
      text: 'Invalid regex "(unclosed": missing closing ): `(unclosed`',
      isError: true,
    });
    assertEquals(await grep.execute({ pattern: "x", path: "nope" }), {
      text: 'Cannot search "nope": no such file or folder',
      isError: true,
    });
    assertEquals(await grep.execute({ pattern: "x", context: 2 }), {
      text: 'Invalid input: "context" only applies to output_mode "content"',
      isError: true,
    });
    assertEquals(await grep.execute({ pattern: "x", output_mode: "lines" }), {
      text:
        'Invalid input: Parameter "output_mode" must be one of "files_with_matches", "content", "count", got "lines"',
      isError: true,
    });
  },
);

Deno.test("grep caps its output at the limit with a notice", async () => {
  await using dir = await tempDir();
  const line = "match " + "z".repeat(94);
  await Deno.writeTextFile(
    onHost(`${dir.path}/big.txt`),
    `${line}\n`.repeat(3000),
  );
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const grep = createGrepTool(
    createToolContext(runtime, { limits: { grepOutputChars: 10_000 } }),
  );
  const { text, isError } = await grep.execute({
    pattern: "match",
    output_mode: "content",
  });
  assertEquals(isError, false);
  assert(text.length <= 10_300, `${text.length}`);
  assertStringIncludes(text, "narrow the search");
  const full = createGrepTool(createToolContext(runtime));
  const all = await full.execute({ pattern: "match", output_mode: "content" });
  assert(all.text.length <= 100_300, `${all.text.length}`);
  assertStringIncludes(all.text, "narrow the search");
});

Deno.test("grep keeps configured secrets out of matched lines", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    onHost(`${dir.path}/env.txt`),
    "TOKEN=tok-abcdef-123\n",
  );
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const grep = createGrepTool(createToolContext(runtime, {
    configs: new Map([[
      "x",
      new SkillRuntimeConfig({ env: { TOKEN: "tok-abcdef-123" } }),
    ]]),
  }));
  assertEquals(
    (await grep.execute({ pattern: "TOKEN", output_mode: "content" })).text,
    `${dir.path}/env.txt:1:TOKEN=[redacted]`,
  );
});

testEachEngine(
  "grep redacts a secret before cutting a long line, leaving no fragment of it",
  async (engine) => {
    await using dir = await tempDir();
    const secret = "tok-abcdef-123456";
    // The secret straddles the 2000-character cut.
    await Deno.writeTextFile(
      onHost(`${dir.path}/env.txt`),
      `${"a".repeat(1995)}${secret}\n`,
    );
    const grep = createGrepTool(contextWithEngine(dir.path, engine, {
      configs: new Map([[
        "x",
        new SkillRuntimeConfig({ env: { TOKEN: secret } }),
      ]]),
    }));
    const { text } = await grep.execute({
      pattern: "a+",
      output_mode: "content",
    });
    assertEquals(
      text,
      `${dir.path}/env.txt:1:${"a".repeat(1995)}[reda [… line cut]`,
    );
  },
);

testEachEngine(
  "grep leaves no fragment of a secret when earlier secrets on its line shift the cut",
  async (engine) => {
    await using dir = await tempDir();
    const secret = "tok-0123456789-abcdefghij-0123456789-xyz"; // 40 characters
    // The engine cuts the line 40 characters (the longest secret) past the
    // usual 2000, in the middle of the last secret; the ten before it shrink
    // by 30 characters each when redacted, which pulls the piece left of that
    // cut well inside the 2000 kept.
    const line = `${secret.repeat(10)}${"a".repeat(2020 - 400)}${secret}`;
    await Deno.writeTextFile(onHost(`${dir.path}/env.txt`), `${line}\n`);
    const grep = createGrepTool(contextWithEngine(dir.path, engine, {
      configs: new Map([[
        "x",
        new SkillRuntimeConfig({ env: { TOKEN: secret } }),
      ]]),
    }));
    const { text } = await grep.execute({
      pattern: "a+",
      output_mode: "content",
    });
    assert(!text.includes(secret.slice(0, 8)), text);
    assertStringIncludes(text, `${"[redacted]".repeat(10)}aaaa`);
    assert(text.endsWith(" [… line cut]"), text.slice(-80));
  },
);

testEachRuntime(
  "grep in a conversation refuses a path outside the workspace",
  async () => {
    await using dir = await tempDir();
    const { context } = await conversationContext(dir.path);
    const result = await createGrepTool(context).execute({
      pattern: "x",
      path: "../..",
    });
    assertEquals(result.isError, true);
    assertStringIncludes(result.text, "outside the workspace");
  },
);
