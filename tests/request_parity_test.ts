/**
 * The request checks of `runtimes/request.ts` as every runtime applies them:
 * local, OpenSandbox and AIO (test servers) on one folder give the same
 * refusals with the same errors. Here, across parts, rather than in
 * `runtimes/`, which may not reach a backend.
 *
 * @module
 */
import { assert, assertEquals } from "@std/assert";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import { startTestServer } from "./helpers/opensandbox.ts";
import { startAioTestServer } from "./helpers/aio.ts";
import type { ExecuteRequest, SkillRuntime } from "../runtimes/types.ts";

/** The three runtimes on one folder: local, OpenSandbox and AIO (test servers). */
async function threeRuntimes(): Promise<
  AsyncDisposable & { dir: string; runtimes: Record<string, SkillRuntime> }
> {
  const os = await startTestServer();
  const aio = await startAioTestServer();
  const local = new LocalSkillRuntime({ cwd: os.dir });
  return {
    dir: os.dir,
    runtimes: {
      local,
      opensandbox: os.runtime(),
      aio: aio.runtime({ cwd: os.dir }),
    },
    async [Symbol.asyncDispose]() {
      await local.close();
      await aio[Symbol.asyncDispose]();
      await os[Symbol.asyncDispose]();
    },
  };
}

async function outcome(
  runtime: SkillRuntime,
  request: ExecuteRequest,
): Promise<string> {
  try {
    const result = await runtime.execute(request);
    return `ran: exit ${result.exitCode}, timedOut ${result.timedOut}, ${
      JSON.stringify(result.stdout)
    }`;
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

Deno.test("execute() refuses the same bad requests with the same errors on local, OpenSandbox and AIO", async () => {
  await using three = await threeRuntimes();
  const bad: Record<string, ExecuteRequest> = {
    "blank command": { command: "   " },
    "command not a string": { command: 5 as unknown as string },
    "command with NUL": { command: "echo a\0b" },
    "zero timeout": { command: "true", timeoutMs: 0 },
    "NaN timeout": { command: "true", timeoutMs: NaN },
    "infinite timeout": { command: "true", timeoutMs: Infinity },
    "timeout as text": { command: "true", timeoutMs: "5" as unknown as number },
    "negative cap": { command: "true", maxOutputBytes: -1 },
    "empty working directory": { command: "pwd", cwd: "" },
    "working directory with NUL": { command: "pwd", cwd: "a\0b" },
    "bad variable name": { command: "true", env: { "A-B": "x" } },
    "empty variable name": { command: "true", env: { "": "x" } },
    "variable value with NUL": { command: "true", env: { A: "x\0y" } },
    "variable value not a string": {
      command: "true",
      env: { A: 5 as unknown as string },
    },
  };
  for (const [what, request] of Object.entries(bad)) {
    const answers: Record<string, string> = {};
    for (const [name, runtime] of Object.entries(three.runtimes)) {
      answers[name] = await outcome(runtime, request);
    }
    const expected = answers.local!;
    assert(
      /^(TypeError|RangeError): Cannot /.test(expected),
      `${what}: local ${expected}`,
    );
    assertEquals(
      answers,
      { local: expected, opensandbox: expected, aio: expected },
      what,
    );
  }
  // Nothing of it ran anywhere.
  assertEquals(
    (await Array.fromAsync(Deno.readDir(three.dir))).map((e) => e.name),
    [],
  );
});

Deno.test("a 30-day timeout is clamped, not fired at once, on local, OpenSandbox and AIO", async () => {
  await using three = await threeRuntimes();
  for (const [name, runtime] of Object.entries(three.runtimes)) {
    const result = await runtime.execute({
      command: "sleep 0.3; echo done",
      timeoutMs: 30 * 24 * 3600_000,
    });
    assertEquals(
      [result.timedOut, result.exitCode, result.stdout],
      [false, 0, "done\n"],
      name,
    );
    assert(result.durationMs >= 250, `${name}: ${result.durationMs} ms`);
  }
});

Deno.test("file calls refuse empty and NUL paths with the same errors on local, OpenSandbox and AIO", async () => {
  await using three = await threeRuntimes();
  const calls: Record<
    string,
    (runtime: SkillRuntime, path: string) => unknown
  > = {
    resolve: (runtime, path) => runtime.fs.resolve(path),
    readText: (runtime, path) => runtime.fs.readText(path, { maxBytes: 10 }),
    readBytes: (runtime, path) => runtime.fs.readBytes(path),
    writeText: (runtime, path) => runtime.fs.writeText(path, "x"),
    stat: (runtime, path) => runtime.fs.stat(path),
    list: (runtime, path) => runtime.fs.list(path),
    readStream: (runtime, path) => runtime.fs.readStream(path),
  };
  for (const path of ["", "a\0/.."]) {
    for (const [name, call] of Object.entries(calls)) {
      const answers: Record<string, string> = {};
      for (const [kind, runtime] of Object.entries(three.runtimes)) {
        try {
          await call(runtime, path);
          answers[kind] = "accepted";
        } catch (error) {
          answers[kind] = `${(error as Error).name}: ${
            (error as Error).message
          }`;
        }
      }
      const expected = path === ""
        ? 'TypeError: Cannot use "": the path is empty'
        : 'TypeError: Cannot use "a\\u0000/..": the path holds a NUL character';
      assertEquals(
        answers,
        { local: expected, opensandbox: expected, aio: expected },
        `${name}(${JSON.stringify(path)})`,
      );
    }
  }
});
