/**
 * Parallel tool calls on one file: models issue several `edit` and `write`
 * calls at once, and every one that reports success must be in the file.
 */
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { createToolContext } from "./context.ts";
import { createEditTool } from "./edit.ts";
import { createWriteTool } from "./write.ts";
import {
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

testEachRuntime(
  "20 edits of one file dispatched at once all land, and each says so",
  async () => {
    await using dir = await tempDir();
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}: old`);
    await Deno.writeTextFile(
      onHost(`${dir.path}/f.txt`),
      lines.join("\n") + "\n",
    );
    const edit = createEditTool(plainContext(dir.path).context);
    const results = await Promise.all(
      lines.map((line, i) =>
        edit.execute({
          file_path: "f.txt",
          old_string: line,
          new_string: `line ${i}: new`,
        })
      ),
    );
    for (const result of results) assert(!result.isError, result.text);
    assertEquals(
      await Deno.readTextFile(onHost(`${dir.path}/f.txt`)),
      lines.map((_, i) => `line ${i}: new`).join("\n") + "\n",
    );
  },
);

testEachRuntime(
  "two edits of the same anchor at once: one applies, the other says it cannot",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/f.txt`), "anchor\n");
    const edit = createEditTool(plainContext(dir.path).context);
    const results = await Promise.all(
      ["first", "second"].map((text) =>
        edit.execute({
          file_path: "f.txt",
          old_string: "anchor",
          new_string: text,
        })
      ),
    );
    // Which one wins depends on the runtime; exactly one does.
    const won = results.findIndex((r) => !r.isError);
    const lost = 1 - won;
    assert(won >= 0 && results[lost]!.isError, JSON.stringify(results));
    assertStringIncludes(results[lost]!.text, "old_string was not found");
    assertEquals(
      await Deno.readTextFile(onHost(`${dir.path}/f.txt`)),
      `${["first", "second"][won]}\n`,
    );
  },
);

testEachRuntime(
  "a write and an edit of one file at once run one after the other",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/f.txt`), "one\ntwo\n");
    const { context } = plainContext(dir.path);
    const write = createWriteTool(context);
    const edit = createEditTool(context);
    const [written, edited] = await Promise.all([
      write.execute({ file_path: "f.txt", content: "one\ntwo\nthree\n" }),
      edit.execute({ file_path: "f.txt", old_string: "two", new_string: "2" }),
    ]);
    assert(!written.isError, written.text);
    assert(!edited.isError, edited.text);
    // Never a mix (the edit writing over the write with what it read before):
    // the edit applied to the written text, or the write after the edit.
    const content = await Deno.readTextFile(onHost(`${dir.path}/f.txt`));
    assert(
      content === "one\n2\nthree\n" || content === "one\ntwo\nthree\n",
      JSON.stringify(content),
    );
  },
);

/**
 * A local runtime whose file system lets another writer (a second process or
 * edge instance, here a plain file write) change the file just after the
 * edit has read it, `times` times.
 */
function racedRuntime(cwd: string, path: string, times: number): SkillRuntime {
  const runtime = new LocalSkillRuntime({ cwd });
  const fs = runtime.fs;
  let raced = 0;
  const readBytes: typeof fs.readBytes = async (file, options) => {
    const bytes = await fs.readBytes(file, options);
    if (raced < times) {
      raced++;
      await Deno.writeTextFile(onHost(path), `other ${raced}\n`, {
        append: true,
      });
    }
    return bytes;
  };
  return new Proxy(runtime, {
    get(target, key) {
      if (key === "fs") {
        return new Proxy(fs, {
          get: (f, k) =>
            k === "readBytes"
              ? readBytes
              : (f as unknown as Record<PropertyKey, unknown>)[k] instanceof
                  Function
              ? ((f as unknown as Record<
                PropertyKey,
                (...a: unknown[]) => unknown
              >)[k]!).bind(f)
              : (f as unknown as Record<PropertyKey, unknown>)[k],
        });
      }
      const value = Reflect.get(target, key, target);
      return value instanceof Function ? value.bind(target) : value;
    },
  });
}

Deno.test("edit writes only over the content it read: a change made meanwhile by another writer is kept, and the edit is applied again", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.txt`;
  await Deno.writeTextFile(onHost(path), "keep anchor\n");
  const runtime = racedRuntime(dir.path, path, 1);
  const edit = createEditTool(createToolContext(runtime));
  const result = await edit.execute({
    file_path: "f.txt",
    old_string: "anchor",
    new_string: "edited",
  });
  assert(!result.isError, result.text);
  assertEquals(await Deno.readTextFile(onHost(path)), "keep edited\nother 1\n");
});

Deno.test("edit that keeps losing the race says so and changes nothing", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.txt`;
  await Deno.writeTextFile(onHost(path), "keep anchor\n");
  const runtime = racedRuntime(dir.path, path, 100);
  const edit = createEditTool(createToolContext(runtime));
  const result = await edit.execute({
    file_path: "f.txt",
    old_string: "anchor",
    new_string: "edited",
  });
  assert(result.isError);
  assertStringIncludes(
    result.text,
    "the file changed while it was being edited",
  );
  assert(!(await Deno.readTextFile(onHost(path))).includes("edited"));
});

Deno.test("two runtimes (two instances) editing one file at once lose nothing: every edit that says so is in the file", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.txt`;
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i}: old`);
  await Deno.writeTextFile(onHost(path), lines.join("\n") + "\n");
  // Each runtime orders its own calls; only the file is shared.
  const edits = [0, 1].map(() =>
    createEditTool(createToolContext(new LocalSkillRuntime({ cwd: dir.path })))
  );
  const results = await Promise.all(
    lines.map((line, i) =>
      edits[i % 2]!.execute({
        file_path: "f.txt",
        old_string: line,
        new_string: `line ${i}: new`,
      })
    ),
  );
  const text = await Deno.readTextFile(onHost(path));
  results.forEach((result, i) => {
    if (result.isError) {
      assertStringIncludes(result.text, "the file changed while it was");
      assertStringIncludes(text, `line ${i}: old`);
    } else assertStringIncludes(text, `line ${i}: new`);
  });
  // Contention this hard still lets nearly every edit through.
  assert(results.filter((r) => !r.isError).length >= 36, text);
});

Deno.test("a write in one runtime racing edits in another is never overwritten unseen", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/f.txt`;
  for (let round = 0; round < 5; round++) {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}: old`);
    await Deno.writeTextFile(onHost(path), lines.join("\n") + "\n");
    const edit = createEditTool(
      createToolContext(new LocalSkillRuntime({ cwd: dir.path })),
    );
    const write = createWriteTool(
      createToolContext(new LocalSkillRuntime({ cwd: dir.path })),
    );
    const edits = lines.map((line, i) =>
      edit.execute({
        file_path: "f.txt",
        old_string: line,
        new_string: `line ${i}: new`,
      })
    );
    await new Promise((resolve) => setTimeout(resolve, round * 3));
    const written = await write.execute({
      file_path: "f.txt",
      content: "written\n",
    });
    await Promise.all(edits);
    assert(!written.isError, written.text);
    // Every edit after the write finds nothing to replace and says so; none
    // puts back the content it read before the write.
    assertEquals(
      await Deno.readTextFile(onHost(path)),
      "written\n",
      `round ${round}`,
    );
  }
});
