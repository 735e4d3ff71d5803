import { assertEquals, assertThrows } from "../tests/helpers/assert.ts";
import { commandLine, parseArgs, UsageError } from "./_args.ts";

Deno.test("parseArgs() reads flags with spaces or equals, positionals and the rest after --", () => {
  const parsed = parseArgs(
    ["a", "--root", "/r", "--conversation=c1", "b", "--", "--root", "x"],
    { root: "string", conversation: "string" },
  );
  assertEquals(parsed.flags, { root: "/r", conversation: "c1" });
  assertEquals(parsed.positionals, ["a", "b"]);
  assertEquals(parsed.rest, ["--root", "x"]);
});

Deno.test("parseArgs() reads -h and --help as help everywhere", () => {
  assertEquals(parseArgs(["-h"], {}).flags, { help: true });
  assertEquals(parseArgs(["x", "--help"], {}).flags, { help: true });
});

Deno.test("parseArgs() without -- leaves the rest undefined", () => {
  assertEquals(parseArgs(["a"], {}).rest, undefined);
  assertEquals(parseArgs(["a", "--"], {}).rest, []);
});

Deno.test("parseArgs() refuses unknown options, missing values and repeated options", () => {
  assertThrows(
    () => parseArgs(["--nope"], {}),
    UsageError,
    'Unknown option "--nope"',
  );
  assertThrows(() => parseArgs(["-x"], {}), UsageError, 'Unknown option "-x"');
  assertThrows(
    () => parseArgs(["--root"], { root: "string" }),
    UsageError,
    'Option "--root" needs a value',
  );
  assertThrows(
    () => parseArgs(["--root", "--"], { root: "string" }),
    UsageError,
    'Option "--root" needs a value',
  );
  assertThrows(
    () => parseArgs(["--root=a", "--root", "b"], { root: "string" }),
    UsageError,
    'Option "--root" is given more than once',
  );
  assertThrows(
    () => parseArgs(["--json=1"], { json: "boolean" }),
    UsageError,
    'Option "--json" takes no value',
  );
});

Deno.test("parseArgs() accepts an empty value after equals", () => {
  assertEquals(parseArgs(["--root="], { root: "string" }).flags, { root: "" });
});

Deno.test("commandLine() keeps one word as a shell line and quotes several", () => {
  assertEquals(commandLine(["echo hi >&2; exit 3"]), "echo hi >&2; exit 3");
  assertEquals(commandLine(["ls", "-la", "my file"]), "ls -la 'my file'");
  assertEquals(
    commandLine(["echo", "it's", "$HOME"]),
    `echo 'it'\\''s' '$HOME'`,
  );
  assertThrows(
    () => commandLine([]),
    UsageError,
    'No command given after "--"',
  );
  assertThrows(() => commandLine(["  "]), UsageError);
});
