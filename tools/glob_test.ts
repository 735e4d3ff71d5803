import { assertEquals, assertStringIncludes } from "../tests/helpers/assert.ts";
import { createToolContext } from "./context.ts";
import { createGlobTool } from "./glob.ts";
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
  "glob finds files at any depth with **, newest first",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const glob = createGlobTool(contextWithEngine(dir.path, engine));
    assertEquals(await glob.execute({ pattern: "**/*.ts" }), {
      text: [
        `${dir.path}/src/deep/b22.ts`,
        `${dir.path}/src/deep/b1.ts`,
        `${dir.path}/src/a.ts`,
      ].join("\n"),
      isError: false,
    });
  },
);

testEachEngine(
  "glob handles ?, [] and names with spaces, hidden files and unicode",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const glob = createGlobTool(contextWithEngine(dir.path, engine));
    assertEquals(
      (await glob.execute({ pattern: "src/deep/b?.ts" })).text,
      `${dir.path}/src/deep/b1.ts`,
    );
    assertEquals(
      (await glob.execute({ pattern: "*.[mt][dx]*" })).text,
      [
        `${dir.path}/技能.txt`,
        `${dir.path}/my file.md`,
        `${dir.path}/with space/c.md`,
        `${dir.path}/.hidden.txt`,
      ].join("\n"),
    );
    assertEquals(
      (await glob.execute({ pattern: "*.md", path: "with space" })).text,
      `${dir.path}/with space/c.md`,
    );
  },
);

testEachEngine(
  "glob skips heavy folders below the root but searches one given as the root",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const glob = createGlobTool(contextWithEngine(dir.path, engine));
    assertEquals(
      (await glob.execute({ pattern: "*.js" })).text,
      "No files found",
    );
    assertEquals(
      (await glob.execute({ pattern: "*.js", path: "node_modules" })).text,
      `${dir.path}/node_modules/pkg/index.js`,
    );
  },
);

testEachEngine(
  "glob reports a missing folder and a file given as the folder",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const glob = createGlobTool(contextWithEngine(dir.path, engine));
    assertEquals(await glob.execute({ pattern: "*", path: "nope" }), {
      text: 'Cannot search "nope": no such folder',
      isError: true,
    });
    assertEquals(await glob.execute({ pattern: "*", path: "my file.md" }), {
      text: 'Cannot search "my file.md": it is a file, not a folder',
      isError: true,
    });
    assertEquals(await glob.execute({}), {
      text: 'Invalid input: Missing required parameter "pattern"',
      isError: true,
    });
  },
);

Deno.test("glob caps its results with a notice", async () => {
  await using dir = await tempDir();
  await makeTree(onHost(dir.path));
  const runtime = new LocalSkillRuntime({ cwd: dir.path });
  const glob = createGlobTool(
    createToolContext(runtime, { limits: { globResults: 2 } }),
  );
  assertEquals(
    (await glob.execute({ pattern: "**/*" })).text,
    [
      `${dir.path}/技能.txt`,
      `${dir.path}/my file.md`,
      "",
      "[Showing the 2 most recently modified of 8 files: use a more specific pattern or path]",
    ].join("\n"),
  );
});

testEachRuntime(
  "glob in a conversation refuses a folder outside the workspace",
  async () => {
    await using dir = await tempDir();
    const { context } = await conversationContext(dir.path);
    const result = await createGlobTool(context).execute({
      pattern: "*",
      path: dir.path,
    });
    assertEquals(result.isError, true);
    assertStringIncludes(result.text, "outside the workspace");
  },
);
