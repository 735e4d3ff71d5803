import { assert, assertEquals, assertFalse } from "../_internal/assert.ts";
import {
  FIRST_NUL_ARGS,
  lineNumbersAt,
  parseDebugSkip,
  parseFirstNul,
  parseLine,
  parseRipgrepOutput,
  RecordParser,
  ripgrepGrepArgs,
} from "./_ripgrep_protocol.ts";
import type { GrepPlan } from "./_plan.ts";
import { planGrep } from "./_plan.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes of text and raw bytes, joined. */
function bytes(...parts: (string | number[])[]): Uint8Array {
  const chunks = parts.map((p) =>
    typeof p === "string" ? encoder.encode(p) : new Uint8Array(p)
  );
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/** Feeds the parser in pieces of `size` bytes; the records as text. */
function parse(
  input: Uint8Array,
  withRest: boolean,
  maxRest: number,
  size: number,
): [Uint8Array, string][] {
  const parser = new RecordParser(withRest, maxRest);
  const out: [Uint8Array, Uint8Array][] = [];
  for (let i = 0; i < input.length; i += size) {
    parser.push(input.slice(i, i + size), out);
  }
  return out.map(([path, rest]) => [path, decoder.decode(rest)]);
}

Deno.test("RecordParser splits -l --null output whatever the chunk boundaries, names with newlines and colons kept", () => {
  const input = bytes("./a\nb.txt", [0], "./c:3:d.txt", [0], "e", [0]);
  for (const size of [1, 2, 3, 5, 64]) {
    const records = parse(input, false, 0, size);
    assertEquals(
      records.map(([p, rest]) => [decoder.decode(p), rest]),
      [["./a\nb.txt", ""], ["./c:3:d.txt", ""], ["e", ""]],
    );
  }
});

Deno.test("RecordParser splits -n --null output: the path up to NUL, the line up to the newline", () => {
  const input = bytes(
    "./x:1.txt",
    [0],
    "12:a: b: c\n",
    "./x:1.txt",
    [0],
    "13-context\n",
    "./new\nline",
    [0],
    "1:needle\n",
  );
  for (const size of [1, 4, 7, 1024]) {
    assertEquals(
      parse(input, true, 1000, size).map(([p, r]) => [decoder.decode(p), r]),
      [
        ["./x:1.txt", "12:a: b: c"],
        ["./x:1.txt", "13-context"],
        ["./new\nline", "1:needle"],
      ],
    );
  }
});

Deno.test("RecordParser keeps a path that is not UTF-8 as its bytes", () => {
  const input = bytes("./", [0xff, 0xfe], ".txt", [0], "1:x\n");
  for (const size of [1, 3, 100]) {
    const [record] = parse(input, true, 100, size);
    assertEquals([...record![0]], [...bytes("./", [0xff, 0xfe], ".txt")]);
    assertEquals(record![1], "1:x");
  }
});

Deno.test("RecordParser cuts a line over the bound and drops the rest as it streams by, whatever the chunks", () => {
  const long = "7:" + "y".repeat(100_000);
  const input = bytes("./f", [0], long, "\n", "./g", [0], "1:short\n");
  for (const size of [1000, 4096, 65536, 300_000]) {
    const records = parse(input, true, 50, size);
    assertEquals(records.length, 2);
    assertEquals(records[0]![1], long.slice(0, 50));
    assertEquals(decoder.decode(records[1]![0]), "./g");
    assertEquals(records[1]![1], "1:short");
  }
});

async function plan(
  request: Record<string, unknown>,
  root: string,
): Promise<GrepPlan> {
  return await planGrep(
    new LocalFileSystem({ root }),
    { pattern: "needle", path: root, ...request },
    true,
  );
}

Deno.test("parseLine reads a match and a context line, colons in the text kept, a long line cut", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ outputMode: "content", maxLineChars: 10 }, dir);
    assertEquals(parseLine(encoder.encode("12:a:b"), decoder, p), {
      lineNumber: 12,
      text: "a:b",
      match: true,
      cut: false,
    });
    assertEquals(parseLine(encoder.encode("3-x-1:2"), decoder, p), {
      lineNumber: 3,
      text: "x-1:2",
      match: false,
      cut: false,
    });
    const long = parseLine(encoder.encode(`9:${"z".repeat(40)}`), decoder, p);
    assertEquals(long.lineNumber, 9);
    assert(long.cut);
    assert(long.text.length <= 10 + 20, long.text);
    assert(long.text.startsWith("zzzzzzzzzz"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseRipgrepOutput groups content lines per file in output order, ./ dropped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ outputMode: "content" }, dir);
    const files = parseRipgrepOutput(
      bytes(
        "./b:c",
        [0],
        "1:needle\n",
        "./b:c",
        [0],
        "4:needle 2\n",
        "./a\nz",
        [0],
        "2:needle\n",
      ),
      p,
    );
    assertEquals(files.map((f) => [f.path, f.count]), [["b:c", 2], [
      "a\nz",
      1,
    ]]);
    assertEquals(files[0]!.lines.map((l) => l.lineNumber), [1, 4]);
    const counted = parseRipgrepOutput(
      bytes("./x", [0], "3\n"),
      await plan({ outputMode: "count" }, dir),
    );
    assertEquals(counted, [{ path: "x", count: 3, lines: [] }]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseDebugSkip reads a file over the size limit and one that is not regular; a symlink and other lines are not skips", () => {
  assertEquals(
    parseDebugSkip(
      "DEBUG|ignore::walk|crates/ignore/src/walk.rs:1730: ignoring ./a: b.txt: 5008 bytes",
    ),
    { path: "./a: b.txt", reason: "too-large", size: 5008 },
  );
  assertEquals(
    parseDebugSkip(
      "DEBUG|rg::subject|crates/core/subject.rs:85: ignoring ./p: failed to pass subject filter: file type: Some(FileType(FileType { mode: 4480 }))",
    ),
    { path: "./p", reason: "not-regular" },
  );
  // 0o120777: a symlink (not followed), not reported.
  assertEquals(
    parseDebugSkip(
      "DEBUG|rg::subject|crates/core/subject.rs:85: ignoring ./l: failed to pass subject filter: file type: Some(FileType(FileType { mode: 41471 }))",
    ),
    null,
  );
  assertEquals(parseDebugSkip("DEBUG|globset|x: built glob set"), null);
  assertEquals(parseDebugSkip("rg: regex parse error"), null);
});

Deno.test("ripgrepGrepArgs passes --max-filesize unless the caller bounds the size itself", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await plan({ maxFileBytes: 1234 }, dir);
    const bounded = ripgrepGrepArgs(p);
    assertEquals(bounded[bounded.indexOf("--max-filesize") + 1], "1234");
    assertFalse(
      ripgrepGrepArgs(p, { sizeLimit: false }).includes("--max-filesize"),
    );
    // Files mode is rg -l; the pattern comes after --regexp, the root last.
    assert(bounded.includes("--files-with-matches"));
    assertEquals(bounded.slice(-3), ["needle", "--", "."]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseFirstNul reads rg's first NUL of each file (the sandbox's binary sniff), names with colons and newlines kept", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a:1`, "text\u0000more\u0000");
    await Deno.writeTextFile(`${dir}/b\nc`, `${"x".repeat(9000)}\u0000`);
    await Deno.writeTextFile(`${dir}/plain`, "no nul\n");
    const output = await new Deno.Command("rg", {
      args: [...FIRST_NUL_ARGS, "./a:1", "./b\nc", "./plain"],
      cwd: dir,
      stdout: "piped",
      stderr: "null",
    }).output();
    assertEquals(
      [...parseFirstNul(output.stdout)].sort(),
      [["./a:1", 4], ["./b\nc", 9000]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lineNumbersAt counts the newlines before each line start, across read chunks, and says null for a file that changed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // 100,000 lines of varied length: over 256 KiB, several reads.
    const lines = Array.from({ length: 100_000 }, (_, i) => "x".repeat(i % 9));
    const text = lines.join("\n") + "\n";
    await Deno.writeTextFile(`${dir}/f`, text);
    const starts: number[] = [];
    for (let i = 0, offset = 0; i < lines.length; i++) {
      starts.push(offset);
      offset += lines[i]!.length + 1;
    }
    const wanted = [0, 1, 2, 777, 40_000, 65_432, 99_999];
    assertEquals(
      lineNumbersAt(`${dir}/f`, wanted.map((i) => starts[i]!)),
      wanted.map((i) => i + 1),
    );
    assertEquals(lineNumbersAt(`${dir}/f`, []), []);
    assertEquals(lineNumbersAt(`${dir}/f`, [text.length + 10]), null);
    assertEquals(lineNumbersAt(`${dir}/missing`, [0]), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
