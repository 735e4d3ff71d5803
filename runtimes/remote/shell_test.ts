import { assertEquals, assertThrows } from "../../tests/helpers/assert.ts";
import { shellAssignments, shellJoin, shellQuote } from "./shell.ts";

const ADVERSARIAL: readonly string[] = [
  "",
  " ",
  "plain",
  "with space",
  "  leading and trailing  ",
  "it's",
  "'",
  "''",
  "'\\''",
  '"double"',
  '"',
  "$(touch /tmp/skillrun-pwned)",
  "`touch /tmp/skillrun-pwned`",
  "${HOME}",
  "$HOME",
  "a;b&&c||d|e",
  "line1\nline2",
  "\n",
  "tab\there",
  "cr\r\n",
  "back\\slash\\",
  "-n",
  "--help",
  "-e \\x41",
  "*",
  "?",
  "[a-z]",
  "~",
  "~root",
  "{a,b}",
  "a=b",
  "!",
  "!!",
  "#comment",
  "< > >>",
  "café ☕ 日本語 😀",
  "\u00a0nbsp",
  "\x01\x7f",
  "%s %n",
  "/workspace/skills/my skill/it's $(x).txt",
];

async function echoBack(script: string): Promise<string> {
  const output = await new Deno.Command("bash", {
    args: ["-c", script],
    stdout: "piped",
    stderr: "piped",
    env: { HOME: "/nonexistent-home" },
  }).output();
  if (output.code !== 0) {
    throw new Error(new TextDecoder().decode(output.stderr));
  }
  return new TextDecoder().decode(output.stdout);
}

Deno.test("shellQuote: real bash reads back exactly each adversarial value", async () => {
  for (const value of ADVERSARIAL) {
    // printf %s prints the one argument as it is; a marker shows where it ends.
    const script = `printf '%s|' ${shellQuote(value)}`;
    assertEquals(await echoBack(script), `${value}|`, JSON.stringify(value));
  }
});

Deno.test("shellJoin: every value stays one word, in order", async () => {
  const script = `for a in ${
    shellJoin(ADVERSARIAL.slice())
  }; do printf '%s\\0' "$a"; done`;
  const words = (await echoBack(script)).split("\0");
  words.pop();
  assertEquals(words, ADVERSARIAL.slice());
});

Deno.test("shellQuote leaves safe words bare and refuses NUL and non-strings", () => {
  assertEquals(
    shellQuote("/workspace/skills/pdf-1.2_x"),
    "/workspace/skills/pdf-1.2_x",
  );
  assertEquals(shellQuote("a b"), "'a b'");
  assertEquals(shellQuote("it's"), "'it'\\''s'");
  assertThrows(() => shellQuote("a\0b"), TypeError, "NUL");
  assertThrows(() => shellQuote(42 as unknown as string), TypeError);
});

Deno.test("shellAssignments: values arrive exactly, bad names are refused", async () => {
  const env: Record<string, string> = {};
  ADVERSARIAL.forEach((value, i) => (env[`V_${i}`] = value));
  const names = Object.keys(env);
  const script = `${shellAssignments(env)}bash -c 'for n in ${
    names.join(" ")
  }; do printf "%s\\0" "\${!n}"; done'`;
  const values = (await echoBack(script)).split("\0");
  values.pop();
  assertEquals(values, Object.values(env));
  assertThrows(() => shellAssignments({ "A B": "x" }), TypeError, "A B");
  assertThrows(() => shellAssignments({ "1A": "x" }), TypeError);
  assertThrows(() => shellAssignments({ "A;rm": "x" }), TypeError);
});

Deno.test("shellQuote: a command substitution in a value never runs", async () => {
  const marker = await Deno.makeTempFile();
  await Deno.remove(marker);
  const value = `$(touch ${marker})\`touch ${marker}\``;
  assertEquals(await echoBack(`printf %s ${shellQuote(value)}`), value);
  let exists = true;
  try {
    await Deno.stat(marker);
  } catch {
    exists = false;
  }
  assertEquals(exists, false);
});
