import { assertEquals, assertInstanceOf } from "../../tests/helpers/assert.ts";
import {
  rejoinLines,
  type SplitLineEvent,
  splitLinesCommand,
} from "./split_lines.ts";
import { RemoteOutput } from "./command.ts";

/**
 * Runs the wrapped command with the local bash, each stream into a file (as
 * execd does: the wrapper reads a trailing `\r` back from it), and splits
 * what came as execd does: a line ends at `\n` or `\r` (`\r\n` once), its
 * end stripped, an empty line as `"\n"`, an unterminated last line flushed.
 */
async function splitRun(
  command: string,
  folder?: string,
): Promise<SplitLineEvent[]> {
  const dir = await Deno.makeTempDir();
  try {
    const { code } = await new Deno.Command("bash", {
      args: [
        "-c",
        `bash -c "$1" >"$2/out" 2>"$2/err"`,
        "_",
        splitLinesCommand(command, folder),
        dir,
      ],
    }).output();
    const lines = async (type: "stdout" | "stderr") =>
      split(
        await Deno.readTextFile(`${dir}/${type === "stdout" ? "out" : "err"}`),
      )
        .map((line) => ({ type, line }));
    return [
      ...await lines("stdout"),
      ...await lines("stderr"),
      { type: "exit", exitCode: code },
    ];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function split(text: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char !== "\n" && char !== "\r") {
      line += char;
      continue;
    }
    if (char === "\r" && text[i + 1] === "\n") i++;
    lines.push(line === "" ? "\n" : line);
    line = "";
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** The rejoined output of each stream, through the kit's line ends. */
async function rejoined(
  events: SplitLineEvent[],
  folder?: string,
): Promise<
  { stdout: string; stderr: string; exitCode: number; failure?: Error }
> {
  const out = {
    stdout: new RemoteOutput(1 << 20),
    stderr: new RemoteOutput(1 << 20),
  };
  const raw = { stdout: "", stderr: "" };
  let exit: { exitCode: number; failure?: Error } = { exitCode: -2 };
  for await (
    const event of rejoinLines(
      (async function* () {
        yield* events;
      })(),
      { folder, error: (message) => new TypeError(message) },
    )
  ) {
    if (event.type === "stdout" || event.type === "stderr") {
      raw[event.type] += event.data;
      out[event.type].push(event.data);
    } else if (event.type === "exit") {
      exit = event.failure
        ? { exitCode: event.exitCode, failure: event.failure }
        : { exitCode: event.exitCode };
    }
  }
  out.stdout.end();
  return { stdout: out.stdout.text(), stderr: raw.stderr, ...exit };
}

Deno.test("splitLinesCommand + rejoinLines: the output comes back exactly, with or without a last newline, blank lines kept", async () => {
  for (
    const [command, expected] of [
      ["printf 'a\\nb'", "a\nb"],
      ["printf 'a\\nb\\n'", "a\nb\n"],
      ["printf 'a\\n\\n\\nb\\n\\n'", "a\n\n\nb\n\n"],
      ["printf ''", ""],
      ["echo one; exit 3", "one\n"],
    ] as const
  ) {
    const result = await rejoined(await splitRun(command));
    assertEquals(result.stdout, expected, command);
  }
  const failed = await rejoined(await splitRun("echo err >&2; exit 3"));
  assertEquals([failed.stderr, failed.exitCode], ["err\n", 3]);
});

Deno.test("splitLinesCommand + rejoinLines: a trailing \\r ends its line as on every remote kind (the wrapper's mark, not a newline)", async () => {
  const result = await rejoined(
    await splitRun("printf 'p 50%%\\rp 100%%\\r'"),
  );
  assertEquals(result.stdout, "p 50%\np 100%\n");
  const marked = await rejoined(await splitRun("printf 'x\\r' >&2"));
  assertEquals(marked.stderr, "x\r");
});

Deno.test("splitLinesCommand: a folder the server cannot take is entered by the wrapper; a missing one is the kind's refusal", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-a$1-" });
  try {
    const inside = await rejoined(await splitRun("pwd", dir), dir);
    assertEquals(inside.stdout, `${dir}\n`);
    const missing = `${dir}/none$x`;
    const refused = await rejoined(
      await splitRun("echo ran", missing),
      missing,
    );
    assertInstanceOf(refused.failure, TypeError);
    assertEquals(
      refused.failure.message,
      `Cannot run the command in "${missing}": the sandbox refused it: the working directory does not exist or is not a folder`,
    );
    assertEquals(refused.stdout, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rejoinLines: the shell's report of a SIGTERM before the wrapper's stop mark is not output; a killed command keeps every newline", async () => {
  const stopped = await rejoined([
    { type: "stdout", line: "partial" },
    { type: "stderr", line: "Terminated" },
    { type: "stderr", line: "\u0000skillrun:stopped\u0000" },
    { type: "exit", exitCode: -1 },
  ]);
  assertEquals([stopped.stdout, stopped.stderr], ["partial\n", ""]);
  const said = await rejoined([
    { type: "stdout", line: "Terminated" },
    { type: "stdout", line: "\n" },
    { type: "exit", exitCode: 0 },
  ]);
  assertEquals(said.stdout, "Terminated\n");
});
