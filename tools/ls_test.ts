import { assertEquals, assertStringIncludes } from "../tests/helpers/assert.ts";
import { createLsTool } from "./ls.ts";
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
  "ls lists folders first, hidden and unicode names included",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const ls = createLsTool(contextWithEngine(dir.path, engine));
    assertEquals(await ls.execute({}), {
      text: [
        `${dir.path}:`,
        ".git/",
        "node_modules/",
        "src/",
        "with space/",
        ".hidden.txt",
        "my file.md",
        "技能.txt",
      ].join("\n"),
      isError: false,
    });
  },
);

testEachEngine(
  "ls descends with depth but not into heavy folders below the root",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const ls = createLsTool(contextWithEngine(dir.path, engine));
    assertEquals(
      (await ls.execute({ depth: 3 })).text,
      [
        `${dir.path}:`,
        ".git/ (not listed: heavy folder)",
        "node_modules/ (not listed: heavy folder)",
        "src/",
        "src/deep/",
        "with space/",
        ".hidden.txt",
        "my file.md",
        "src/a.ts",
        "src/blob.bin",
        "src/deep/b1.ts",
        "src/deep/b22.ts",
        "with space/c.md",
        "技能.txt",
      ].join("\n"),
    );
    // A heavy folder given as the root is listed.
    assertEquals(
      (await ls.execute({ path: "node_modules", depth: 2 })).text,
      [
        `${dir.path}/node_modules:`,
        "pkg/",
        "pkg/index.js",
      ].join("\n"),
    );
  },
);

testEachEngine("ls stops at the limit with a notice", async (engine) => {
  await using dir = await tempDir();
  await makeTree(onHost(dir.path));
  const ls = createLsTool(contextWithEngine(dir.path, engine));
  assertEquals(
    (await ls.execute({ limit: 2 })).text,
    [
      `${dir.path}:`,
      ".git/",
      ".hidden.txt",
      "",
      "[Listing stopped at 2 entries: list a sub-folder, lower the depth or raise the limit]",
    ].join("\n"),
  );
});

testEachEngine(
  "ls reports a missing path, a file and bad input",
  async (engine) => {
    await using dir = await tempDir();
    await makeTree(onHost(dir.path));
    const ls = createLsTool(contextWithEngine(dir.path, engine));
    assertEquals(await ls.execute({ path: "nope" }), {
      text: 'Cannot list "nope": no such folder',
      isError: true,
    });
    assertEquals(await ls.execute({ path: "my file.md" }), {
      text: 'Cannot list "my file.md": it is a file; read it with read',
      isError: true,
    });
    assertEquals(await ls.execute({ depth: 0 }), {
      text: 'Invalid input: Parameter "depth" must be at least 1, got 0',
      isError: true,
    });
  },
);

testEachRuntime(
  "ls in a conversation lists the workspace and refuses outside paths",
  async () => {
    await using dir = await tempDir();
    const { context, workspace } = await conversationContext(dir.path);
    await Deno.writeTextFile(onHost(`${workspace}/notes.md`), "n");
    const ls = createLsTool(context);
    assertEquals(
      (await ls.execute({})).text,
      `${workspace}:\nskills/\nnotes.md`,
    );
    const outside = await ls.execute({ path: "/" });
    assertEquals(outside.isError, true);
    assertStringIncludes(outside.text, "outside the workspace");
  },
);
