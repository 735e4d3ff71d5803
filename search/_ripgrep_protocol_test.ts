import { concatBytes } from "../_internal/std.ts";
import { assertEquals } from "../tests/helpers/assert.ts";
import {
  FIRST_NUL_ARGS,
  parseFirstNul,
  recordReader,
  splitRecords,
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

/** The records as text (the path's bytes kept). */
function parse(
  input: Uint8Array,
  withRest: boolean,
  maxRest: number,
): [Uint8Array, string][] {
  return splitRecords(input, withRest, maxRest).map((
    [path, rest],
  ) => [path, decoder.decode(rest)]);
}

Deno.test("splitRecords splits -l --null output, names with newlines and colons kept, a cut last name left out", () => {
  const input = bytes("./a\nb.txt", [0], "./c:3:d.txt", [0], "e", [0], "./cu");
  assertEquals(
    parse(input, false, 0).map(([p, rest]) => [decoder.decode(p), rest]),
    [["./a\nb.txt", ""], ["./c:3:d.txt", ""], ["e", ""]],
  );
});

Deno.test("splitRecords splits -n --null output: the path up to NUL, the line up to the newline, a cut last line left out", () => {
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
    "./cut",
    [0],
    "2:no end",
  );
  assertEquals(
    parse(input, true, 1000).map(([p, r]) => [decoder.decode(p), r]),
    [
      ["./x:1.txt", "12:a: b: c"],
      ["./x:1.txt", "13-context"],
      ["./new\nline", "1:needle"],
    ],
  );
});

Deno.test("splitRecords keeps a path that is not UTF-8 as its bytes", () => {
  const input = bytes("./", [0xff, 0xfe], ".txt", [0], "1:x\n");
  const [record] = parse(input, true, 100);
  assertEquals([...record![0]], [...bytes("./", [0xff, 0xfe], ".txt")]);
  assertEquals(record![1], "1:x");
});

Deno.test("splitRecords cuts a line over the bound", () => {
  const long = "7:" + "y".repeat(100_000);
  const input = bytes("./f", [0], long, "\n", "./g", [0], "1:short\n");
  const records = parse(input, true, 50);
  assertEquals(records.length, 2);
  assertEquals(records[0]![1], long.slice(0, 50));
  assertEquals(decoder.decode(records[1]![0]), "./g");
  assertEquals(records[1]![1], "1:short");
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

Deno.test("recordReader gives the same records whatever the chunk boundaries (a path with a newline, a line cut at the bound, a cut last record left out)", () => {
  const input = bytes(
    "./a\nb.txt",
    [0],
    "3:one two three\n",
    "./c.md",
    [0],
    "14:x\n",
    "./cut",
    [0],
    "9:no end",
  );
  const read = (chunks: Uint8Array[]): string[] => {
    const out: string[] = [];
    const reader = recordReader(true, 5, (path, rest) => {
      out.push(`${decoder.decode(path)}|${decoder.decode(rest)}`);
    });
    for (const chunk of chunks) reader(chunk);
    return out;
  };
  const whole = read([input]);
  assertEquals(whole, ["./a\nb.txt|3:one", "./c.md|14:x"]);
  for (let a = 0; a <= input.length; a++) {
    for (let b = a; b <= input.length; b += 3) {
      const chunks = [input.slice(0, a), input.slice(a, b), input.slice(b)];
      assertEquals(read(chunks), whole, `split at ${a} and ${b}`);
    }
  }
});
