import { assertEquals, assertThrows } from "../tests/helpers/assert.ts";
import { shellJoin, shellQuote } from "./shell_quote.ts";

const HOSTILE = [
  "",
  "plain",
  "with space",
  "it's",
  "''",
  '"double"',
  "$(touch pwned)",
  "`touch pwned`",
  "$HOME ${PATH}",
  "a;b&&c||d|e>f<g",
  "*?[a-z]{x,y}~",
  "line1\nline2\r\n",
  "tab\there",
  "-n",
  "--",
  "\\backslash\\",
  "naïve café Ω 日本 😀",
  "!event !!",
  "'; echo injected; '",
];

Deno.test("shellQuote: bash reads every hostile value back as one exact word", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `printf '%s\\0' ${shellJoin(HOSTILE)}`;
    for (const shell of ["bash", "sh"]) {
      const output = await new Deno.Command(shell, {
        args: ["-c", script],
        cwd: dir,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
      const words = new TextDecoder().decode(output.stdout).split("\0");
      words.pop();
      assertEquals(words, HOSTILE, shell);
    }
    // Nothing ran: no file was created by $() or backticks.
    assertEquals([...Deno.readDirSync(dir)].length, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shellQuote refuses a NUL character and a non-string", () => {
  assertThrows(() => shellQuote("a\0b"), TypeError, "it holds a NUL character");
  assertThrows(
    () => shellQuote(42 as unknown as string),
    TypeError,
    "expected a string",
  );
});
