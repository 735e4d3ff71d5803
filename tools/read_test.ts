import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import { PathFence } from "../workspace/fence.ts";
import { startTestServer } from "../tests/helpers/opensandbox.ts";
import { startAioTestServer } from "../tests/helpers/aio.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { createToolContext } from "./context.ts";
import { createReadTool } from "./read.ts";
import {
  conversationContext,
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

const TESTDATA = new URL("./testdata/", import.meta.url).pathname;

testEachRuntime(
  "read numbers lines like cat -n under a header with the range",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(
      onHost(`${dir.path}/a.txt`),
      "alpha\nbeta\n\tgamma\n",
    );
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(await read.execute({ file_path: "a.txt" }), {
      text:
        `File: ${dir.path}/a.txt (lines 1-3 of 3)\n     1\talpha\n     2\tbeta\n     3\t\tgamma`,
      isError: false,
    });
  },
);

testEachRuntime("read matches the golden output of the fixture", async () => {
  const read = createReadTool(plainContext(TESTDATA).context);
  const result = await read.execute({
    file_path: "poem.txt",
    offset: 2,
    limit: 3,
  });
  const golden =
    (await Deno.readTextFile(onHost(`${TESTDATA}poem.read.golden`)))
      .replace("{path}", `${TESTDATA}poem.txt`);
  assertEquals(result.text, golden.trimEnd());
});

testEachRuntime(
  "read counts a last line without a line end and strips CR of CRLF",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(
      onHost(`${dir.path}/crlf.txt`),
      "one\r\ntwo\r\nthree",
    );
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(
      (await read.execute({ file_path: `${dir.path}/crlf.txt` })).text,
      `File: ${dir.path}/crlf.txt (lines 1-3 of 3)\n     1\tone\n     2\ttwo\n     3\tthree`,
    );
  },
);

testEachRuntime(
  "read shows a window with offset and limit and says how to go on",
  async () => {
    await using dir = await tempDir();
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);
    await Deno.writeTextFile(
      onHost(`${dir.path}/ten.txt`),
      lines.join("\n") + "\n",
    );
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(
      (await read.execute({ file_path: "ten.txt", offset: 3, limit: 2 })).text,
      `File: ${dir.path}/ten.txt (lines 3-4; more follow)\n     3\tline 3\n     4\tline 4\n[More lines follow; continue with offset=5]`,
    );
    assertEquals(
      (await read.execute({ file_path: "ten.txt", offset: 9, limit: 5 })).text,
      `File: ${dir.path}/ten.txt (lines 9-10 of 10)\n     9\tline 9\n    10\tline 10`,
    );
    assertEquals(
      (await read.execute({ file_path: "ten.txt", offset: 10, limit: 1 })).text,
      `File: ${dir.path}/ten.txt (lines 10-10 of 10)\n    10\tline 10`,
    );
  },
);

testEachRuntime("read says when the offset is past the end", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(onHost(`${dir.path}/three.txt`), "a\nb\nc\n");
  await Deno.writeTextFile(onHost(`${dir.path}/one.txt`), "a");
  const read = createReadTool(plainContext(dir.path).context);
  assertEquals(await read.execute({ file_path: "three.txt", offset: 4 }), {
    text: 'Cannot read "three.txt" from line 4: the file has only 3 lines',
    isError: true,
  });
  assertEquals(await read.execute({ file_path: "one.txt", offset: 7 }), {
    text: 'Cannot read "one.txt" from line 7: the file has only 1 line',
    isError: true,
  });
});

testEachRuntime(
  "read reports an empty file, a folder and a missing file clearly",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/empty.txt`), "");
    await Deno.mkdir(onHost(`${dir.path}/folder`));
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(await read.execute({ file_path: "empty.txt" }), {
      text: `File: ${dir.path}/empty.txt is empty (0 bytes)`,
      isError: false,
    });
    assertEquals(await read.execute({ file_path: "folder" }), {
      text: 'Cannot read "folder": it is a folder; list it with ls',
      isError: true,
    });
    assertEquals(await read.execute({ file_path: "missing.txt" }), {
      text: 'Cannot read "missing.txt": no such file',
      isError: true,
    });
  },
);

testEachRuntime(
  "read cuts lines over 2000 characters with a notice",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(
      onHost(`${dir.path}/long.txt`),
      `short\n${"x".repeat(5000)}\nend\n`,
    );
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(
      (await read.execute({ file_path: "long.txt" })).text,
      [
        `File: ${dir.path}/long.txt (lines 1-3 of 3)`,
        "     1\tshort",
        `     2\t${
          "x".repeat(2000)
        } [… line cut: it has 5000 bytes; the first 2000 characters are shown]`,
        "     3\tend",
        "[1 line was longer than 2000 characters and cut]",
      ].join("\n"),
    );
  },
);

testEachRuntime(
  "read keeps multi-byte characters whole and strips a byte order mark",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(
      onHost(`${dir.path}/u.txt`),
      "\uFEFFhéllo wörld\n技能 мой-навык 🎉\n",
    );
    const read = createReadTool(plainContext(dir.path).context);
    assertEquals(
      (await read.execute({ file_path: "u.txt" })).text,
      `File: ${dir.path}/u.txt (lines 1-2 of 2)\n     1\théllo wörld\n     2\t技能 мой-навык 🎉`,
    );
  },
);

testEachRuntime("read does not dump binary files", async () => {
  await using dir = await tempDir();
  await Deno.writeFile(
    onHost(`${dir.path}/blob.dat2`),
    new Uint8Array([0x41, 0x00, 0x42, 0x0a]),
  );
  await Deno.writeTextFile(onHost(`${dir.path}/image.png`), "not really a png");
  const read = createReadTool(plainContext(dir.path).context);
  assertEquals(await read.execute({ file_path: "blob.dat2" }), {
    text:
      'Cannot read "blob.dat2": it is a binary file (4 bytes); inspect it with bash (e.g. file, xxd)',
    isError: true,
  });
  assertEquals((await read.execute({ file_path: "image.png" })).isError, true);
});

testEachRuntime(
  "read offers publish_file for a binary file only when there is a publisher",
  async () => {
    await using dir = await tempDir();
    await Deno.writeFile(
      onHost(`${dir.path}/blob.bin2`),
      new Uint8Array([0, 1, 2]),
    );
    const publisher = {
      publish: () => Promise.resolve({ url: "http://127.0.0.1/x" }),
    };
    const read = createReadTool(plainContext(dir.path, { publisher }).context);
    assertEquals(await read.execute({ file_path: "blob.bin2" }), {
      text:
        'Cannot read "blob.bin2": it is a binary file (3 bytes); inspect it with bash (e.g. file, xxd) or share it with publish_file',
      isError: true,
    });
  },
);

testEachRuntime("read finds the right lines across stream chunks", async () => {
  await using dir = await tempDir();
  const lines = Array.from({ length: 200_000 }, (_, i) => `row ${i + 1}`);
  await Deno.writeTextFile(
    onHost(`${dir.path}/big.txt`),
    lines.join("\n") + "\n",
  );
  const read = createReadTool(plainContext(dir.path).context);
  assertEquals(
    (await read.execute({ file_path: "big.txt", offset: 150_001, limit: 3 }))
      .text,
    `File: ${dir.path}/big.txt (lines 150001-150003; more follow)\n150001\trow 150001\n150002\trow 150002\n150003\trow 150003\n[More lines follow; continue with offset=150004]`,
  );
  assertEquals(
    (await read.execute({ file_path: "big.txt", offset: 199_999 })).text,
    `File: ${dir.path}/big.txt (lines 199999-200000 of 200000)\n199999\trow 199999\n200000\trow 200000`,
  );
});

testEachRuntime(
  "read stops at the 4 MiB output cap and says where to continue",
  async () => {
    await using dir = await tempDir();
    const line = "y".repeat(1999);
    const file = await Deno.open(onHost(`${dir.path}/wide.txt`), {
      write: true,
      create: true,
    });
    const bytes = new TextEncoder().encode(`${line}\n`.repeat(500));
    for (let i = 0; i < 6; i++) await file.write(bytes); // 3000 lines, 6 MB
    file.close();
    const read = createReadTool(plainContext(dir.path).context);
    const result = await read.execute({ file_path: "wide.txt", limit: 3000 });
    assertEquals(result.isError, false);
    const shown = Math.floor((4 * 1024 * 1024) / 2000); // 2097 lines of 2000 bytes
    assert(
      result.text.startsWith(
        `File: ${dir.path}/wide.txt (lines 1-${shown}; more follow)`,
      ),
    );
    assert(result.text.endsWith(
      `\n[Output reached the 4 MiB limit of one read; continue with offset=${
        shown + 1
      }]`,
    ));
  },
);

testEachRuntime("read validates offset and limit", async () => {
  await using dir = await tempDir();
  const read = createReadTool(plainContext(dir.path).context);
  assertEquals(await read.execute({ file_path: "a", offset: 0 }), {
    text: 'Invalid input: Parameter "offset" must be at least 1, got 0',
    isError: true,
  });
  assertEquals(await read.execute({ file_path: "a", limit: "10" }), {
    text:
      'Invalid input: Parameter "limit" must be an integer, got string "10"',
    isError: true,
  });
});

testEachRuntime(
  "read in a conversation refuses a path outside the workspace",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/secret.txt`), "outside");
    const { context, workspace } = await conversationContext(dir.path);
    await Deno.writeTextFile(onHost(`${workspace}/in.txt`), "inside\n");
    const read = createReadTool(context);
    assertEquals(
      (await read.execute({ file_path: "in.txt" })).text,
      `File: ${workspace}/in.txt (lines 1-1 of 1)\n     1\tinside`,
    );
    for (const path of [`${dir.path}/secret.txt`, "../../secret.txt"]) {
      const result = await read.execute({ file_path: path });
      assertEquals(result.isError, true);
      assertStringIncludes(result.text, "outside the workspace");
    }
  },
);

testEachRuntime(
  "read redacts a secret before cutting a long line, leaving no fragment of it",
  async () => {
    await using dir = await tempDir();
    const secret = "tok-abcdef-123456";
    // The secret straddles the 2000-character cut.
    await Deno.writeTextFile(
      onHost(`${dir.path}/env.txt`),
      `${"a".repeat(1995)}${secret}\nTOKEN=${secret}\n`,
    );
    const read = createReadTool(
      plainContext(dir.path, {
        configs: new Map([[
          "x",
          new SkillRuntimeConfig({ env: { TOKEN: secret } }),
        ]]),
      }).context,
    );
    const { text } = await read.execute({ file_path: "env.txt" });
    assertEquals(
      text.split("\n").slice(1, 3),
      [
        `     1\t${
          "a".repeat(1995)
        }[reda [… line cut: it has 2012 bytes; the first 2000 characters are shown]`,
        "     2\tTOKEN=[redacted]",
      ],
    );
    assert(!text.includes(secret.slice(0, 4)), text.slice(-300));
  },
);

testEachRuntime(
  "read past a 64 GiB line of a sparse file answers within its time limit, and the next call answers",
  async () => {
    await using dir = await tempDir();
    const path = `${dir.path}/sparse.txt`;
    const file = await Deno.open(onHost(path), { write: true, create: true });
    // Text for the binary sniff's 8 KiB, then a hole: one 64 GiB line of NULs.
    await file.write(
      new TextEncoder().encode("first\n" + "some text\n".repeat(1000)),
    );
    await file.truncate(64 * 1024 ** 3);
    file.close();
    const { context } = plainContext(dir.path, {
      limits: { fileTimeoutMs: 5000 },
    });
    const read = createReadTool(context);
    const start = performance.now();
    const result = await read.execute({
      file_path: "sparse.txt",
      offset: 1003,
    });
    assert(result.isError, result.text);
    assertEquals(
      result.text,
      'Cannot read "sparse.txt" from line 1003: line 1002 is longer than the 4 MiB limit of one read, so read cannot find where it ends; inspect the file with bash (e.g. head -c, tail -c, cut -c)',
    );
    assert(performance.now() - start < 5000);
    // The control: the first line reads at once.
    const first = await read.execute({ file_path: "sparse.txt", limit: 1 });
    assertStringIncludes(first.text, "     1\tfirst");
  },
);

testEachRuntime(
  "read hides every line of a multi-line secret and a secret cut by a long line",
  async () => {
    await using dir = await tempDir();
    const pem =
      "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nq1w2e3r4t5y6u7i8\n-----END PRIVATE KEY-----";
    await Deno.writeTextFile(
      onHost(`${dir.path}/key.pem.txt`),
      `before\n${pem}\n${"x".repeat(1995)}q1w2e3r4t5y6u7i8 tail\nafter\n`,
    );
    const { context } = plainContext(dir.path, {
      configs: new Map([[
        "s",
        new SkillRuntimeConfig({ env: { KEY: pem } }),
      ]]),
    });
    const result = await createReadTool(context).execute({
      file_path: "key.pem.txt",
    });
    assert(!result.isError, result.text);
    for (const piece of ["MIIEvQ", "q1w2e3", "q1w", "BEGIN PRIVATE"]) {
      assert(!result.text.includes(piece), result.text);
    }
    assertStringIncludes(result.text, "before");
    assertStringIncludes(result.text, "after");
  },
);

testEachRuntime(
  "read answers at once on a line longer than one read (a 1 TiB sparse file without a newline)",
  async () => {
    await using dir = await tempDir();
    const path = `${dir.path}/huge.txt`;
    // Text first (past the binary sniff), then 1 TiB of holes: no newline.
    await Deno.writeTextFile(onHost(path), "a".repeat(10_000));
    await Deno.truncate(onHost(path), 2 ** 40);
    const read = createReadTool(plainContext(dir.path).context);
    let started = performance.now();
    const after = await read.execute({ file_path: "huge.txt", offset: 2 });
    assert(performance.now() - started < 3000, "took too long");
    assertEquals(after, {
      text:
        'Cannot read "huge.txt" from line 2: line 1 is longer than the 4 MiB limit of one read, so read cannot find where it ends; inspect the file with bash (e.g. head -c, tail -c, cut -c)',
      isError: true,
    });
    started = performance.now();
    const first = await read.execute({ file_path: "huge.txt" });
    assert(performance.now() - started < 3000, "took too long");
    assertEquals(first.isError, false);
    assertEquals(
      first.text,
      [
        `File: ${path} (lines 1-1)`,
        `     1\t${
          "a".repeat(2000)
        } [… line cut: it has more than 4 MiB; the first 2000 characters are shown]`,
        "[1 line was longer than 2000 characters and cut]",
        "[Stopped: line 1 is longer than the 4 MiB limit of one read, so read cannot find where it ends; inspect the file with bash (e.g. head -c, tail -c, cut -c)]",
      ].join("\n"),
    );
  },
);

Deno.test("read opens a local workspace file with one walk of the fence", async () => {
  await using dir = await tempDir();
  await using runtime = await LocalSkillRuntime.create({
    conversationsRoot: dir.path,
    conversationId: "walks",
  });
  await Deno.writeTextFile(onHost(`${runtime.cwd}/notes.txt`), "one\ntwo\n");
  const read = createReadTool(createToolContext(runtime));
  // The real fence, counted where every walk begins.
  const walk = PathFence.prototype.resolve;
  let walks = 0;
  PathFence.prototype.resolve = function (path) {
    walks++;
    return walk.call(this, path);
  };
  try {
    const result = await read.execute({ file_path: "notes.txt" });
    assertEquals(result.isError, false);
    assertStringIncludes(result.text, "     2\ttwo");
    assertEquals(walks, 1);
  } finally {
    PathFence.prototype.resolve = walk;
  }
});

/**
 * Reads a small file, a file too large to come back in a command's answer,
 * and a missing one in a conversation workspace, counting the requests the
 * test server answered for each.
 */
async function requestsPerRead(
  runtime: SkillRuntime,
  requests: () => number,
): Promise<number[]> {
  await runtime.fs.writeText("notes.txt", "one\ntwo\n");
  await runtime.fs.writeText("big.txt", "line\n".repeat(60_000));
  const read = createReadTool(createToolContext(runtime));
  const counts: number[] = [];
  for (
    const [input, expected] of [
      [{ file_path: "notes.txt" }, "     2\ttwo"],
      [{ file_path: "big.txt", offset: 60_000 }, "60000\tline"],
      [{ file_path: "gone.txt" }, 'Cannot read "gone.txt": no such file'],
    ] as const
  ) {
    const before = requests();
    const result = await read.execute(input);
    counts.push(requests() - before);
    assertStringIncludes(result.text, expected);
  }
  return counts;
}

Deno.test("read of a remote workspace file: one command where stat is a command [aio]", async () => {
  await using server = await startAioTestServer();
  await using runtime = server.runtime({
    conversationId: "requests",
    conversationsRoot: `${server.dir}/conversations`,
  });
  // The large file: the command's check, then its download.
  assertEquals(
    await requestsPerRead(runtime, () => server.server.requests.length),
    [1, 2, 1],
  );
});

Deno.test("read of a remote workspace file: one stat request, then the download [opensandbox]", async () => {
  await using server = await startTestServer();
  await using runtime = server.runtime({
    conversationId: "requests",
    conversationsRoot: `${server.dir}/conversations`,
  });
  // Every step of the fence and the file's facts in one /files/info (3
  // before); a missing step makes execd refuse that one, and the kind asks
  // again path by path, at once.
  assertEquals(
    await requestsPerRead(runtime, () => server.server.requests.length),
    [2, 2, 3],
  );
});
