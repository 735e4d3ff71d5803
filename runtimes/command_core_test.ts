import { assert, assertEquals, assertThrows } from "@std/assert";
import {
  checkTimeoutMs,
  CommandRun,
  MAX_EXECUTE_TIMEOUT_MS,
  type OutputTally,
} from "./command_core.ts";

const EMPTY: OutputTally = { text: () => "", totalBytes: 0, truncated: false };
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("checkTimeoutMs() clamps to the longest timer and refuses what is not a positive number", () => {
  assertEquals(checkTimeoutMs(30 * 24 * 3600_000), MAX_EXECUTE_TIMEOUT_MS);
  assertEquals(checkTimeoutMs(MAX_EXECUTE_TIMEOUT_MS), MAX_EXECUTE_TIMEOUT_MS);
  assertEquals(checkTimeoutMs(0.5), 0.5);
  for (const bad of [0, -1, NaN, Infinity, "10", null]) {
    assertThrows(
      () => checkTimeoutMs(bad),
      RangeError,
      `Cannot run a command with timeout "${
        String(bad)
      }": it must be a positive number of ms`,
    );
  }
});

Deno.test("CommandRun: a clamped month-long deadline does not fire at once", async () => {
  using run = new CommandRun({ timeoutMs: 30 * 24 * 3600_000 });
  await delay(50);
  assertEquals(run.reason, undefined);
  assertEquals(run.timeoutMs, MAX_EXECUTE_TIMEOUT_MS);
  assert(run.remainingMs() > 24 * 24 * 3600_000);
  assertEquals(run.result(3, EMPTY, EMPTY).exitCode, 3);
});

Deno.test("CommandRun: an aborted signal stops the run before anything starts", () => {
  const stops: string[] = [];
  using run = new CommandRun({
    timeoutMs: 1000,
    signal: AbortSignal.abort(),
    graceMs: 5,
  });
  run.onStop((reason) => stops.push(reason));
  assertEquals(stops, ["abort"]);
  assert(run.stopSignal.aborted);
  const result = run.result(0, EMPTY, EMPTY);
  assertEquals([result.exitCode, result.aborted, result.timedOut], [
    -1,
    true,
    false,
  ]);
});

Deno.test("CommandRun: the first reason wins; the grace period follows the stop", async () => {
  const controller = new AbortController();
  const steps: string[] = [];
  using run = new CommandRun({
    timeoutMs: 30,
    signal: controller.signal,
    graceMs: 40,
  });
  run.onStop((reason) => steps.push(`stop ${reason}`));
  run.onGraceOver(() => steps.push("grace over"));
  await delay(60);
  controller.abort();
  assertEquals(steps, ["stop timeout"]);
  await delay(60);
  assertEquals(steps, ["stop timeout", "grace over"]);
  assertEquals(run.reason, "timeout");
  assert(run.result(0, EMPTY, EMPTY).timedOut);
});

Deno.test("CommandRun: disposing clears the deadline and the listener (no timer left)", () => {
  const controller = new AbortController();
  const run = new CommandRun({ timeoutMs: 60_000, signal: controller.signal });
  run[Symbol.dispose]();
  controller.abort();
  assertEquals(run.reason, undefined);
});

Deno.test("CommandRun: the result carries the tallies and a duration", async () => {
  using run = new CommandRun({ timeoutMs: 1000 });
  await delay(5);
  const out: OutputTally = { text: () => "ab", totalBytes: 9, truncated: true };
  const result = run.result(2, out, EMPTY);
  assertEquals(
    [
      result.stdout,
      result.stdoutBytes,
      result.stdoutTruncated,
      result.exitCode,
    ],
    ["ab", 9, true, 2],
  );
  assert(result.durationMs >= 4);
});

Deno.test("CommandRun refuses a bad grace period", () => {
  assertThrows(
    () => new CommandRun({ timeoutMs: 10, graceMs: -1 }),
    RangeError,
    'graceMs "-1"',
  );
});
