import { concatBytes } from "../_internal/std.ts";
import { assertEquals } from "../tests/helpers/assert.ts";
import {
  FIRST_NUL_ARGS,
  lineNumbersIn,
  parseFirstNul,
  RecordParser,
} from "./_ripgrep_protocol.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes of text and raw bytes, joined. */
function bytes(...parts: (string | number[])[]): Uint8Array {
  return concatBytes(
    parts.map((p) =>
      typeof p === "string" ? encoder.encode(p) : new Uint8Array(p)
    ),
  );
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

Deno.test("lineNumbersIn counts the newlines before each line start across read chunks of a real file, and says null for a file that changed", async () => {
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
    const numbers = (offsets: number[]) => {
      using file = Deno.openSync(`${dir}/f`);
      return lineNumbersIn(new Uint8Array(0), offsets, (b) => file.readSync(b));
    };
    const wanted = [0, 1, 2, 777, 40_000, 65_432, 99_999];
    assertEquals(
      numbers(wanted.map((i) => starts[i]!)),
      wanted.map((i) => i + 1),
    );
    assertEquals(numbers([]), []);
    assertEquals(numbers([text.length + 10]), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lineNumbersIn counts in the bytes read already, reads the rest only past them, and says null for a file that changed", () => {
  const text = new TextEncoder().encode("a\nbb\n\nccc\nd\n");
  // Line starts: 0, 2, 5, 6, 10.
  const noRead = (): number => {
    throw new Error("read past the head");
  };
  assertEquals(lineNumbersIn(text, [0, 5, 10], noRead), [1, 3, 5]);
  assertEquals(lineNumbersIn(text.subarray(0, 6), [2, 6], noRead), [2, 4]);
  assertEquals(lineNumbersIn(text, [], noRead), []);
  // The head holds the first 4 bytes; the rest comes from reads.
  let at = 4;
  const rest = (buffer: Uint8Array): number | null => {
    const n = Math.min(buffer.length, 3, text.length - at);
    buffer.set(text.subarray(at, at + n));
    at += n;
    return n;
  };
  assertEquals(lineNumbersIn(text.subarray(0, 4), [2, 6, 10], rest), [
    2,
    4,
    5,
  ]);
  at = text.length;
  assertEquals(lineNumbersIn(text.subarray(0, 4), [99], rest), null);
});
