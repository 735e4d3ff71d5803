import { assertEquals, assertStringIncludes } from "../tests/helpers/assert.ts";
import { createWriteTool } from "./write.ts";
import {
  conversationContext,
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

testEachRuntime(
  "write creates missing parents and reports the bytes written",
  async () => {
    await using dir = await tempDir();
    const write = createWriteTool(plainContext(dir.path).context);
    assertEquals(
      await write.execute({ file_path: "a/b c/new.txt", content: "hello\n" }),
      {
        text: `Created ${dir.path}/a/b c/new.txt (6 bytes)`,
        isError: false,
      },
    );
    assertEquals(
      await Deno.readTextFile(onHost(`${dir.path}/a/b c/new.txt`)),
      "hello\n",
    );
  },
);

testEachRuntime("write counts UTF-8 bytes of unicode content", async () => {
  await using dir = await tempDir();
  const write = createWriteTool(plainContext(dir.path).context);
  const content = "技能 🎉\n";
  assertEquals(
    await write.execute({ file_path: `${dir.path}/u.txt`, content }),
    {
      text: `Created ${dir.path}/u.txt (12 bytes)`,
      isError: false,
    },
  );
  assertEquals(await Deno.readTextFile(onHost(`${dir.path}/u.txt`)), content);
});

testEachRuntime(
  "write says it overwrote a file and how big it was",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/f.txt`), "x".repeat(2048));
    const write = createWriteTool(plainContext(dir.path).context);
    assertEquals(await write.execute({ file_path: "f.txt", content: "" }), {
      text: `Overwrote ${dir.path}/f.txt (0 bytes; it had 2 KiB)`,
      isError: false,
    });
    assertEquals(await Deno.readTextFile(onHost(`${dir.path}/f.txt`)), "");
    assertEquals(await write.execute({ file_path: "f.txt", content: "a" }), {
      text: `Overwrote ${dir.path}/f.txt (1 byte; it had 0 bytes)`,
      isError: false,
    });
  },
);

testEachRuntime("write refuses a folder and a missing content", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(onHost(`${dir.path}/d`));
  const write = createWriteTool(plainContext(dir.path).context);
  assertEquals(await write.execute({ file_path: "d", content: "x" }), {
    text: 'Cannot write "d": it is a folder',
    isError: true,
  });
  assertEquals(await write.execute({ file_path: "x.txt" }), {
    text: 'Invalid input: Missing required parameter "content"',
    isError: true,
  });
});

testEachRuntime("write in a conversation stays in the workspace", async () => {
  await using dir = await tempDir();
  const { context, workspace } = await conversationContext(dir.path);
  const write = createWriteTool(context);
  assertEquals(
    (await write.execute({ file_path: "out/r.md", content: "# R" })).text,
    `Created ${workspace}/out/r.md (3 bytes)`,
  );
  const result = await write.execute({
    file_path: "../../escaped.txt",
    content: "x",
  });
  assertEquals(result.isError, true);
  assertStringIncludes(result.text, "outside the workspace");
  assertEquals(
    await Deno.stat(onHost(`${dir.path}/escaped.txt`)).catch(() => null),
    null,
  );
});
