import { assertEquals } from "../tests/helpers/assert.ts";
import { createEditTool } from "./edit.ts";
import {
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

async function setup(content: string | Uint8Array) {
  const dir = await tempDir();
  const path = `${dir.path}/f.txt`;
  if (typeof content === "string") {
    await Deno.writeTextFile(onHost(path), content);
  } else await Deno.writeFile(onHost(path), content);
  const edit = createEditTool(plainContext(dir.path).context);
  return { dir, path, edit };
}

testEachRuntime(
  "edit replaces one exact occurrence and shows a numbered snippet",
  async () => {
    const { dir, path, edit } = await setup("a\nb\nc\nd\ne\nf\ng\nh\ni\n");
    await using _ = dir;
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "e",
        new_string: "E1\nE2",
      }),
      {
        text:
          `Edited ${path}: replaced 1 occurrence\nSnippet (lines 2-9):\n     2\tb\n     3\tc\n     4\td\n     5\tE1\n     6\tE2\n     7\tf\n     8\tg\n     9\th`,
        isError: false,
      },
    );
    assertEquals(
      await Deno.readTextFile(onHost(path)),
      "a\nb\nc\nd\nE1\nE2\nf\ng\nh\ni\n",
    );
  },
);

testEachRuntime(
  "edit refuses an empty old_string and identical strings",
  async () => {
    const { dir, edit } = await setup("abc\n");
    await using _ = dir;
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "",
        new_string: "x",
      }),
      {
        text:
          'Cannot edit "f.txt": old_string is empty; use write to create or replace a whole file',
        isError: true,
      },
    );
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "abc",
        new_string: "abc",
      }),
      {
        text:
          'Cannot edit "f.txt": old_string and new_string are identical; nothing would change',
        isError: true,
      },
    );
  },
);

testEachRuntime("edit reports no match and leaves the file alone", async () => {
  const { dir, path, edit } = await setup("hello\n");
  await using _ = dir;
  assertEquals(
    await edit.execute({
      file_path: "f.txt",
      old_string: "Hello",
      new_string: "x",
    }),
    {
      text:
        'Cannot edit "f.txt": old_string was not found; read the file and copy the text exactly, including whitespace',
      isError: true,
    },
  );
  assertEquals(await Deno.readTextFile(onHost(path)), "hello\n");
});

testEachRuntime(
  "edit refuses several matches without replace_all, saying how many",
  async () => {
    const { dir, path, edit } = await setup("x = 1\nx = 1\nx = 1\n");
    await using _ = dir;
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "x = 1",
        new_string: "x = 2",
      }),
      {
        text:
          'Cannot edit "f.txt": old_string occurs 3 times; add surrounding text to make it unique, or set replace_all to true',
        isError: true,
      },
    );
    assertEquals(
      await Deno.readTextFile(onHost(path)),
      "x = 1\nx = 1\nx = 1\n",
    );
  },
);

testEachRuntime("edit with replace_all replaces every occurrence", async () => {
  const { dir, path, edit } = await setup("x = 1\ny\nx = 1\n");
  await using _ = dir;
  const result = await edit.execute({
    file_path: "f.txt",
    old_string: "x = 1",
    new_string: "x = 2",
    replace_all: true,
  });
  assertEquals(result, {
    text:
      `Edited ${path}: replaced 2 occurrences (the first is shown)\nSnippet (lines 1-3):\n     1\tx = 2\n     2\ty\n     3\tx = 2`,
    isError: false,
  });
  assertEquals(await Deno.readTextFile(onHost(path)), "x = 2\ny\nx = 2\n");
});

testEachRuntime(
  "edit keeps CRLF line ends when the strings use LF",
  async () => {
    const { dir, path, edit } = await setup("one\r\ntwo\r\nthree\r\n");
    await using _ = dir;
    const result = await edit.execute({
      file_path: "f.txt",
      old_string: "one\ntwo",
      new_string: "uno\ndos\nextra",
    });
    assertEquals(result.isError, false);
    assertEquals(
      await Deno.readTextFile(onHost(path)),
      "uno\r\ndos\r\nextra\r\nthree\r\n",
    );
  },
);

testEachRuntime(
  "edit keeps LF line ends when the strings use CRLF",
  async () => {
    const { dir, path, edit } = await setup("one\ntwo\n");
    await using _ = dir;
    await edit.execute({
      file_path: "f.txt",
      old_string: "one\r\ntwo",
      new_string: "1\r\n2",
    });
    assertEquals(await Deno.readTextFile(onHost(path)), "1\n2\n");
  },
);

testEachRuntime(
  "edit takes regular-expression characters and $ patterns literally",
  async () => {
    const { dir, path, edit } = await setup("price: $1.00 (a+b)*[c]\n");
    await using _ = dir;
    const result = await edit.execute({
      file_path: "f.txt",
      old_string: "$1.00 (a+b)*[c]",
      new_string: "$& $$ $1",
    });
    assertEquals(result.isError, false);
    assertEquals(await Deno.readTextFile(onHost(path)), "price: $& $$ $1\n");
  },
);

testEachRuntime(
  "edit deletes old_string when new_string is empty",
  async () => {
    const { dir, path, edit } = await setup("keep\ndrop me\nkeep\n");
    await using _ = dir;
    assertEquals(
      (await edit.execute({
        file_path: "f.txt",
        old_string: "drop me\n",
        new_string: "",
      })).isError,
      false,
    );
    assertEquals(await Deno.readTextFile(onHost(path)), "keep\nkeep\n");
  },
);

testEachRuntime("edit keeps a byte order mark", async () => {
  const { dir, path, edit } = await setup("\uFEFFname = a\n");
  await using _ = dir;
  const result = await edit.execute({
    file_path: "f.txt",
    old_string: "= a",
    new_string: "= b",
  });
  // The snippet shows the line as read does: without the mark.
  assertEquals(result, {
    text:
      `Edited ${path}: replaced 1 occurrence\nSnippet (lines 1-1):\n     1\tname = b`,
    isError: false,
  });
  const bytes = await Deno.readFile(onHost(path));
  assertEquals([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assertEquals(new TextDecoder().decode(bytes), "name = b\n");
});

testEachRuntime(
  "edit refuses missing files, folders, binary files and files over the cap",
  async () => {
    const { dir, edit } = await setup(new Uint8Array([0x61, 0, 0x62]));
    await using _ = dir;
    await Deno.mkdir(onHost(`${dir.path}/d`));
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "a",
        new_string: "b",
      }),
      {
        text: 'Cannot edit "f.txt": it is a binary file',
        isError: true,
      },
    );
    assertEquals(
      await edit.execute({
        file_path: "nope.txt",
        old_string: "a",
        new_string: "b",
      }),
      {
        text: 'Cannot edit "nope.txt": no such file; use write to create it',
        isError: true,
      },
    );
    assertEquals(
      await edit.execute({ file_path: "d", old_string: "a", new_string: "b" }),
      {
        text: 'Cannot edit "d": it is a folder',
        isError: true,
      },
    );
    const big = await Deno.open(onHost(`${dir.path}/big.txt`), {
      write: true,
      create: true,
    });
    await big.truncate(8 * 1024 * 1024 + 1);
    big.close();
    assertEquals(
      await edit.execute({
        file_path: "big.txt",
        old_string: "a",
        new_string: "b",
      }),
      {
        text: 'Cannot edit "big.txt": file is larger than the 8 MiB limit',
        isError: true,
      },
    );
  },
);

testEachRuntime(
  "edit refuses invalid UTF-8 rather than corrupt it",
  async () => {
    const { dir, path, edit } = await setup(
      new Uint8Array([0x61, 0xff, 0x62, 0x0a]),
    );
    await using _ = dir;
    assertEquals(
      await edit.execute({
        file_path: "f.txt",
        old_string: "a",
        new_string: "b",
      }),
      {
        text: 'Cannot edit "f.txt": it is not valid UTF-8 text',
        isError: true,
      },
    );
    assertEquals([...await Deno.readFile(onHost(path))], [
      0x61,
      0xff,
      0x62,
      0x0a,
    ]);
  },
);
