import { assert, assertEquals } from "../../tests/helpers/assert.ts";
import { BackgroundCommands, backgroundCommands } from "../background.ts";
import { startAioTestServer } from "../../tests/helpers/aio.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(50);
  }
}

/** A fetch that records each JSON body sent to a path. */
function recordingFetch(): {
  fetch: typeof fetch;
  bodies: { path: string; body: Record<string, unknown> }[];
} {
  const bodies: { path: string; body: Record<string, unknown> }[] = [];
  return {
    bodies,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.headers.get("content-type")?.includes("json")) {
        bodies.push({
          path: new URL(request.url).pathname,
          body: await request.clone().json(),
        });
      }
      return fetch(request);
    },
  };
}

Deno.test("aio background: the asynchronous exec: the command's id at once, output from the byte offsets, the exit code", async () => {
  await using server = await startAioTestServer();
  const seen = recordingFetch();
  const runtime = server.runtime({ fetch: seen.fetch, pollSeconds: 1 });
  const commands = new BackgroundCommands(runtime);
  // At once: the command cannot end before the test makes its flag (no
  // clock: a time limit failed on a loaded machine).
  const flag = `.go-${crypto.randomUUID()}`;
  const { id, running } = await commands.start({
    command:
      `echo one; echo e >&2; while [ ! -e ${flag} ]; do sleep 0.05; done; rm -f ${flag}; echo two; exit 6`,
  });
  assert(running);
  const exec = seen.bodies.find((b) => b.path === "/v1/bash/exec")!;
  assertEquals(exec.body.async_mode, true);
  assertEquals(exec.body.hard_timeout, undefined, "no timeout: runs on");
  await until(async () => (await commands.read(id)).stdout === "one\n");
  assertEquals(
    (await runtime.execute({ command: `touch ${flag}` })).exitCode,
    0,
  );
  await commands.wait(id);
  const last = await commands.read(id);
  assertEquals([last.stdout, last.exitCode, last.running], ["two\n", 6, false]);
  // Each poll names the command and asks from the offsets it was given.
  const polls = seen.bodies.filter((b) => b.path === "/v1/bash/output");
  assert(polls.every((p) => p.body.command_id === id));
  assert(polls.some((p) => p.body.offset === 4 && p.body.stderr_offset === 2));
});

Deno.test("aio background: kill ends the process group; close() leaves no process and no session", async () => {
  await using server = await startAioTestServer();
  const runtime = server.runtime({ pollSeconds: 1 });
  // The runtime's own set: its close() ends them.
  const commands = backgroundCommands(runtime);
  const ids = [];
  for (let i = 0; i < 3; i++) {
    ids.push(
      (await commands.start({ command: "sleep 300 & sleep 300 & wait" })).id,
    );
  }
  await until(() => server.server.runningPids().length === 3);
  const killed = await commands.kill(ids[0]!);
  assertEquals([killed.running, killed.exitCode], [false, -1]);
  assertEquals(server.server.runningPids().length, 2);
  await runtime.close();
  assertEquals(server.server.runningPids(), []);
  const ps = new Deno.Command("pgrep", {
    args: ["-f", "sleep 300 & sleep 300 & wait"],
    stdout: "piped",
  }).outputSync();
  assertEquals(new TextDecoder().decode(ps.stdout).trim(), "");
  const sessions =
    await (await fetch(`${server.server.baseUrl}/v1/bash/sessions`, {
      headers: { authorization: "Bearer aio-test-token-0123456789" },
    })).json();
  assertEquals(sessions.data, []);
});

Deno.test("aio background: a timeout becomes the server's hard timeout and reads as timed out", async () => {
  await using server = await startAioTestServer();
  const runtime = server.runtime({ pollSeconds: 1 });
  const commands = new BackgroundCommands(runtime);
  const { id } = await commands.start({ command: "sleep 30", timeoutMs: 300 });
  await commands.wait(id);
  const read = await commands.read(id);
  assertEquals([read.running, read.timedOut, read.exitCode], [false, true, -1]);
});

Deno.test("aio background: a container that stops answering does not hang close(), and nothing keeps polling", async () => {
  await using server = await startAioTestServer();
  const runtime = server.runtime({ pollSeconds: 1 });
  const commands = backgroundCommands(runtime);
  const { id } = await commands.start({ command: "sleep 300" });
  await server.server.refuseConnections();
  const before = performance.now();
  await runtime.close();
  assert(performance.now() - before < 20_000);
  const requests = server.server.requestCount();
  await sleep(1200);
  await server.server.acceptConnections();
  await sleep(3000);
  // Once it answered again, at most a request already under way came: the
  // poller had stopped (it would ask every second).
  const later = server.server.requests.slice(requests).map((r) => r.path);
  assert(later.length <= 1, later.join(", "));
  assertEquals(commands.list().find((c) => c.id === id)?.running, false);
});
