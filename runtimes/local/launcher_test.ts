import {
  assert,
  assertEquals,
  assertFalse,
  assertGreater,
  assertInstanceOf,
  assertLess,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import {
  DenoCommandLauncher,
  type LaunchRequest,
  runProcessGroup,
  signalProcessGroup,
} from "./launcher.ts";
import type { ExecuteResult } from "../types.ts";
import { checkTimeoutMs } from "../command_core.ts";
import { liveGroupMembers } from "../../tests/helpers/testing.ts";

const linux = Deno.build.os === "linux";

async function waitForFile(path: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const text = (await Deno.readTextFile(path)).trim();
      if (text) return text;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`"${path}" never appeared`);
}

function request(
  command: string,
  options: Partial<LaunchRequest> = {},
): LaunchRequest {
  return {
    command,
    cwd: Deno.cwd(),
    env: {},
    timeoutMs: checkTimeoutMs(30_000),
    maxOutputBytes: 1024 * 1024,
    ...options,
  };
}

Deno.test("launch() returns stdout, stderr and the exit code", async () => {
  const result = await new DenoCommandLauncher().launch(
    request("printf out; printf err >&2; exit 7"),
  );
  assertEquals(result.stdout, "out");
  assertEquals(result.stderr, "err");
  assertEquals(result.exitCode, 7);
  assertEquals(result.stdoutBytes, 3);
  assertFalse(result.timedOut);
  assertFalse(result.aborted);
  assertFalse(result.stdoutTruncated);
  assertGreater(result.durationMs, 0);
});

Deno.test("launch() runs in the working directory with the given variables", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const result = await new DenoCommandLauncher().launch(
      request('pwd; echo "$ONE-$TWO"', {
        cwd: dir,
        env: { ONE: "1", TWO: "two words" },
      }),
    );
    assertEquals(
      result.stdout,
      `${await Deno.realPath(dir)}\n1-two words\n`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("launch() closes stdin", async () => {
  const result = await new DenoCommandLauncher().launch(
    request("cat; echo done"),
  );
  assertEquals(result.stdout, "done\n");
});

for (const method of ["deno", "shell"] as const) {
  Deno.test({
    name:
      `launch() kills the whole process group on timeout (${method} group signal)`,
    ignore: !linux,
    async fn() {
      const dir = await Deno.makeTempDir();
      try {
        const pidFile = `${dir}/pid`;
        const launcher = new DenoCommandLauncher({
          graceMs: 500,
          groupSignal: method,
        });
        const start = performance.now();
        const result = await launcher.launch(
          request(`echo $$ > ${pidFile}; sleep 30 & sleep 30 & wait`, {
            timeoutMs: checkTimeoutMs(500),
          }),
        );
        const elapsed = performance.now() - start;
        assert(result.timedOut);
        assertFalse(result.aborted);
        assertEquals(result.exitCode, -1);
        assertLess(elapsed, 500 + 500 + 1000);
        const pgid = Number(await waitForFile(pidFile));
        await new Promise((resolve) => setTimeout(resolve, 1000));
        assertEquals(liveGroupMembers(pgid), []);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "launch() kills a group that ignores SIGTERM after the grace period",
  ignore: !linux,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const pidFile = `${dir}/pid`;
      const launcher = new DenoCommandLauncher({ graceMs: 500 });
      const start = performance.now();
      const result = await launcher.launch(
        request(
          `echo $$ > ${pidFile}; trap '' TERM; sleep 30 & sleep 30; wait`,
          { timeoutMs: checkTimeoutMs(300) },
        ),
      );
      const elapsed = performance.now() - start;
      assert(result.timedOut);
      assertEquals(result.exitCode, -1);
      // SIGTERM was ignored: it took the grace period and SIGKILL.
      assertGreater(elapsed, 300 + 400);
      assertLess(elapsed, 300 + 500 + 1000);
      const pgid = Number(await waitForFile(pidFile));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assertEquals(liveGroupMembers(pgid), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "launch() kills a stopped group's survivor that closed its pipes and ignores SIGTERM",
  ignore: !linux,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const pidFile = `${dir}/pid`;
      const result = await new DenoCommandLauncher({ graceMs: 5000 }).launch(
        request(
          `echo $$ > ${pidFile}; (trap '' TERM; exec sleep 30) >/dev/null 2>&1 & sleep 30`,
          { timeoutMs: checkTimeoutMs(300) },
        ),
      );
      assert(result.timedOut);
      const pgid = Number(await waitForFile(pidFile));
      await new Promise((resolve) => setTimeout(resolve, 500));
      assertEquals(liveGroupMembers(pgid), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "launch() stops the group when the signal aborts, distinct from timeout",
  ignore: !linux,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const pidFile = `${dir}/pid`;
      const controller = new AbortController();
      const running = new DenoCommandLauncher({ graceMs: 500 }).launch(
        request(`echo $$ > ${pidFile}; sleep 30 & sleep 30; wait`, {
          timeoutMs: checkTimeoutMs(60_000),
          signal: controller.signal,
        }),
      );
      const pgid = Number(await waitForFile(pidFile));
      controller.abort();
      const result = await running;
      assert(result.aborted);
      assertFalse(result.timedOut);
      assertEquals(result.exitCode, -1);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assertEquals(liveGroupMembers(pgid), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("launch() with an aborted signal runs nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const result = await new DenoCommandLauncher().launch(
      request(`touch ${dir}/ran`, { signal: AbortSignal.abort() }),
    );
    assert(result.aborted);
    assertEquals(result.exitCode, -1);
    await assertRejects(() => Deno.stat(`${dir}/ran`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("launch() reports -1 for a shell killed by a signal", async () => {
  const result = await new DenoCommandLauncher().launch(
    request("kill -KILL $$"),
  );
  assertEquals(result.exitCode, -1);
  assertFalse(result.timedOut);
  assertFalse(result.aborted);
  // bash reports 128 + n for a child killed by a signal, and survives it.
  const child = await new DenoCommandLauncher().launch(
    request("sleep 30 & kill -KILL $!; wait $!"),
  );
  assertEquals(child.exitCode, 137);
});

Deno.test("launch() keeps the start and end of a 200 MB output in bounded memory", async () => {
  // In its own process, so other tests running in parallel don't count.
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-run=bash",
      new URL("./testdata/big_output.ts", import.meta.url).pathname,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert(output.success, "the child ran");
  const line = new TextDecoder().decode(output.stdout).split("\n")
    .find((l) => l.startsWith("RESULT "));
  assert(line);
  const { growth, result } = JSON.parse(line.slice("RESULT ".length)) as {
    growth: number;
    result: ExecuteResult;
  };
  const cap = 64 * 1024;
  assertEquals(result.exitCode, 0);
  assertEquals(result.stdoutBytes, 200_000_008);
  assertEquals(result.stderrBytes, 3_000_014);
  assert(result.stdoutTruncated && result.stderrTruncated);
  assert(result.stdout.startsWith("BEGINxxx"));
  assert(result.stdout.endsWith("xxxEND"));
  assertStringIncludes(
    result.stdout,
    `\n[... ${200_000_008 - cap} bytes omitted ...]\n`,
  );
  assert(result.stderr.startsWith("ERRSTARTyyy"));
  assert(result.stderr.endsWith("yyyERREND"));
  assertLess(result.stdout.length, cap + 100);
  assertLess(growth, 64 * 1024 * 1024);
});

Deno.test("launch() refuses a missing working directory clearly", async () => {
  const error = await assertRejects(
    () =>
      new DenoCommandLauncher().launch(
        request("true", { cwd: "/nonexistent/skillrun-dir" }),
      ),
    Deno.errors.NotFound,
  );
  assertStringIncludes(
    error.message,
    'Cannot run a command in "/nonexistent/skillrun-dir": the working directory does not exist',
  );
});

Deno.test("runProcessGroup() refuses a bad timeout or cap", async () => {
  const base = {
    program: "bash",
    args: ["-c", "true"],
    cwd: Deno.cwd(),
    env: {},
    timeoutMs: 1000,
    maxOutputBytes: 10,
  };
  await assertRejects(
    () => runProcessGroup({ ...base, timeoutMs: 0 }),
    RangeError,
  );
  await assertRejects(
    () => runProcessGroup({ ...base, maxOutputBytes: -5 }),
    RangeError,
  );
  assertThrows(() => new DenoCommandLauncher({ graceMs: -1 }), RangeError);
});

Deno.test("signalProcessGroup() ignores a group that is gone and refuses a bad id", async () => {
  const child = new Deno.Command("bash", {
    args: ["-c", "true"],
    detached: true,
  }).spawn();
  await child.status;
  await signalProcessGroup(child.pid, "SIGTERM", { method: "deno" });
  await signalProcessGroup(child.pid, "SIGTERM", { method: "shell" });
  const error = await assertRejects(
    () => signalProcessGroup(1, "SIGKILL"),
    RangeError,
  );
  assertInstanceOf(error, RangeError);
});

const hasSetsid = (() => {
  try {
    return new Deno.Command("bash", {
      args: ["-c", "command -v setsid"],
      stdout: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
})();
if (!hasSetsid) {
  console.error(
    "launcher_test: setsid is missing; the escaped-process test is ignored",
  );
}

Deno.test({
  name:
    "launch() returns even when a process that escaped the group holds its pipes",
  ignore: !linux || !hasSetsid,
  async fn() {
    const dir = await Deno.makeTempDir();
    let escaped = 0;
    try {
      const pidFile = `${dir}/escaped`;
      const start = performance.now();
      const result = await new DenoCommandLauncher({ graceMs: 300 }).launch(
        request(
          `echo before; setsid bash -c 'echo $$ > ${pidFile}; exec sleep 30' & wait`,
          { timeoutMs: checkTimeoutMs(500) },
        ),
      );
      const elapsed = performance.now() - start;
      escaped = Number(await waitForFile(pidFile));
      assert(result.timedOut);
      assertEquals(result.stdout, "before\n");
      // timeout + grace (SIGTERM..SIGKILL) + grace (drain stop) + margin.
      assertLess(elapsed, 500 + 300 + 300 + 1500);
    } finally {
      if (escaped > 1) {
        try {
          Deno.kill(escaped, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "runProcessGroup() starts the program as its own group's leader whichever way it spawns (setsid when allowed, detached otherwise), and a missing program is NotFound",
  ignore: !linux,
  async fn() {
    const result = await runProcessGroup({
      program: "bash",
      args: ["-c", 'echo "$$ $(ps -o pgid= -p $$) $(ps -o sid= -p $$)"'],
      cwd: Deno.cwd(),
      env: {},
      timeoutMs: 10_000,
      maxOutputBytes: 1024,
    });
    const [pid, pgid, sid] = result.stdout.trim().split(/\s+/).map(Number);
    assertEquals(result.exitCode, 0, result.stderr);
    assertEquals(pgid, pid);
    assertEquals(sid, pid);
    await assertRejects(
      () =>
        runProcessGroup({
          program: "no-such-program-skillrun",
          args: [],
          cwd: Deno.cwd(),
          env: {},
          timeoutMs: 10_000,
          maxOutputBytes: 1024,
        }),
      Deno.errors.NotFound,
      'Cannot run "no-such-program-skillrun": it was not found',
    );
  },
});
