import {
  assertEquals,
  assertLess,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { countTimeoutChecks } from "../../tests/helpers/timeout_checks.ts";
import { checkTimeoutMs } from "../command_core.ts";
import {
  checkedRemoteCommand,
  namedCommand,
  type RemoteCommandEvent,
  type RemoteCommandKind,
  RemoteOutput,
  runRemoteCommand,
} from "./command.ts";

const COMMAND = {
  command: "work",
  cwd: "/",
  env: {},
  timeoutMs: 5_000,
  maxOutputBytes: 1024,
};

/** A kind whose command yields `events`, then waits for its kill or `signal`. */
function kindOf(
  events: RemoteCommandEvent[],
  options: { hang?: boolean; fail?: Error } = {},
): RemoteCommandKind & { kills: string[]; serverTimeouts: number[] } {
  const kills: string[] = [];
  const serverTimeouts: number[] = [];
  let killed: () => void = () => {};
  return {
    kills,
    serverTimeouts,
    backstopMs: 7_000,
    graceMs: 200,
    start: (request) => {
      serverTimeouts.push(request.serverTimeoutMs);
      return Promise.resolve({
        id: "c1",
        events: (async function* () {
          yield* events;
          if (options.fail) throw options.fail;
          if (!options.hang) return;
          await new Promise<void>((resolve, reject) => {
            killed = resolve;
            request.signal.addEventListener(
              "abort",
              () => reject(request.signal.reason),
            );
          });
          yield { type: "stdout" as const, data: "after the kill\r" };
          yield { type: "exit" as const, exitCode: 143 };
        })(),
      });
    },
    kill: (id) => {
      kills.push(id);
      killed();
      return Promise.resolve();
    },
  };
}

Deno.test("RemoteOutput: \\r and \\r\\n end a line across chunk boundaries; bytes left out by the server are counted", () => {
  const out = new RemoteOutput(1024);
  out.push("a\r");
  out.push("\nb\r");
  out.push(new TextEncoder().encode("c\r\r\n"));
  out.push("", 5);
  out.end();
  assertEquals(out.text(), "a\nb\nc\n\n");
  assertEquals([out.totalBytes, out.truncated], [7 + 5, true]);
});

Deno.test("runRemoteCommand: the exit code and output; the server's deadline is ours plus the backstop", async () => {
  const kind = kindOf([
    { type: "stdout", data: "out\r\n" },
    { type: "stderr", data: "err" },
    { type: "exit", exitCode: 3 },
  ]);
  const result = await runRemoteCommand(kind, COMMAND);
  assertEquals(
    [result.stdout, result.stderr, result.exitCode, result.timedOut],
    ["out\n", "err", 3, false],
  );
  assertEquals([kind.kills, kind.serverTimeouts], [[], [12_000]]);
});

Deno.test("runRemoteCommand: a command of your own has its timeout checked once, with the runtimes' error; the kit's checked command is not checked again", async () => {
  const kind = kindOf([{ type: "exit", exitCode: 0 }]);
  const plain = await countTimeoutChecks(
    4_321.5,
    () => runRemoteCommand(kind, { ...COMMAND, timeoutMs: 4_321.5 }),
  );
  assertEquals([plain.result.exitCode, plain.checks], [0, 1]);
  for (const bad of [0, -1, NaN, Infinity, "5" as unknown as number]) {
    await assertRejects(
      () => runRemoteCommand(kind, { ...COMMAND, timeoutMs: bad }),
      RangeError,
      `Cannot run a command with timeout "${bad}": it must be a positive number of ms`,
    );
  }
  // Refused before anything started: only the first command reached the kind.
  assertEquals(kind.serverTimeouts, [4_322 + 7_000]);
  // The remote runtime's command: checked once, before (as
  // checkExecuteRequest does), and carried.
  const carried = await countTimeoutChecks(4_321.5, () => {
    const command = checkedRemoteCommand({
      ...COMMAND,
      timeoutMs: checkTimeoutMs(4_321.5),
    });
    return runRemoteCommand(kind, command);
  });
  assertEquals([carried.result.exitCode, carried.checks], [0, 1]);
});

Deno.test("runRemoteCommand: at the deadline the command is killed once and its output after the kill is kept", async () => {
  const kind = kindOf([{ type: "stdout", data: "begun\n" }], { hang: true });
  const started = performance.now();
  const result = await runRemoteCommand(kind, { ...COMMAND, timeoutMs: 100 });
  assertLess(performance.now() - started, 2_000);
  assertEquals(
    [result.timedOut, result.exitCode, result.stdout, kind.kills],
    [true, -1, "begun\nafter the kill\n", ["c1"]],
  );
});

Deno.test("runRemoteCommand: a broken stream kills the command and throws the kind's error; a start failure in the exit kills nothing", async () => {
  const broken = kindOf([{ type: "stdout", data: "x" }], {
    fail: new Error("reset"),
  });
  await assertRejects(
    () => runRemoteCommand(broken, COMMAND),
    Error,
    "Cannot run the command: reset; it was killed",
  );
  assertEquals(broken.kills, ["c1"]);
  const ended = kindOf([]);
  await assertRejects(
    () => runRemoteCommand(ended, COMMAND),
    Error,
    "ended before the command finished",
  );
  assertEquals(ended.kills, ["c1"]);
  const failed = kindOf([{
    type: "exit",
    exitCode: -1,
    failure: new TypeError("could not start"),
  }]);
  await assertRejects(
    () => runRemoteCommand(failed, COMMAND),
    TypeError,
    "could not start",
  );
  assertEquals(failed.kills, []);
});

Deno.test("runRemoteCommand: an aborted signal runs nothing; an abort kills", async () => {
  const kind = kindOf([], { hang: true });
  const controller = new AbortController();
  controller.abort();
  const none = await runRemoteCommand(kind, {
    ...COMMAND,
    signal: controller.signal,
  });
  assertEquals([none.aborted, kind.serverTimeouts.length], [true, 0]);
  const later = new AbortController();
  setTimeout(() => later.abort(), 50);
  const result = await runRemoteCommand(kind, {
    ...COMMAND,
    signal: later.signal,
  });
  assertEquals([result.aborted, result.exitCode, kind.kills], [true, -1, [
    "c1",
  ]]);
});

Deno.test("namedCommand: output before the id is kept; a stream that never names the command is an error", async () => {
  const started = await namedCommand((async function* () {
    yield { type: "stdout" as const, data: "early" };
    yield { type: "id" as const, id: "7" };
    yield { type: "exit" as const, exitCode: 0 };
  })());
  const seen: string[] = [];
  for await (const event of started.events) seen.push(event.type);
  assertEquals([started.id, seen], ["7", ["stdout", "exit"]]);
  await assertRejects(
    () => namedCommand((async function* () {})()),
    Error,
    "before the server named it",
  );
});
