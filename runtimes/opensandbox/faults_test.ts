/**
 * Every fault of the test server's injector, each with the error the user
 * sees and proof that nothing was lost or left running.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertLess,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import type { Fault } from "../../tests/servers/_faults.ts";
import { SkillPreparationError } from "../errors.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { SandboxCommandError } from "./execd.ts";
import { startTestServer } from "../../tests/helpers/opensandbox.ts";
import {
  countingFetch,
  makeSkill,
  processAlive,
  waitFor,
} from "../../tests/helpers/remote.ts";

/** Whether any command the server ran still has a live process. */
function anyCommandAlive(
  server: {
    commands: ReadonlyMap<string, unknown>;
    commandAlive(id: string): boolean;
  },
): boolean {
  return [...server.commands.keys()].some((id) => server.commandAlive(id));
}

Deno.test("fault: refused connection — a network error (status 0); the runtime works again once the server accepts", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({ requestTimeoutMs: 2_000 });
  await runtime.fs.writeText("kept.txt", "kept");
  await server.server.listener.refuseConnections();
  const error = await assertRejects(
    () => runtime.fs.readText("kept.txt", { maxBytes: 100 }),
    RemoteHttpError,
  );
  assertEquals(error.status, 0);
  await server.server.listener.acceptConnections();
  assertEquals(
    await runtime.fs.readText("kept.txt", { maxBytes: 100 }),
    "kept",
  );
});

Deno.test("fault: 401 on create — the server's message, no sandbox made, no key shown", async () => {
  await using server = await startTestServer();
  server.faults.add({
    fault: { kind: "status", status: 401 },
    method: "POST",
    path: "/v1/sandboxes",
  });
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 401);
  assertStringIncludes(error.message, "401");
  assert(!error.message.includes("test-key"));
  assertEquals(server.server.sandboxes.size, 0);
});

Deno.test("fault: 404 on attach — the sandbox is unknown, nothing is created", async () => {
  await using server = await startTestServer();
  const owner = server.runtime();
  await owner.execute({ command: "true" });
  server.faults.add({
    fault: { kind: "status", status: 404 },
    method: "GET",
    path: "/v1/sandboxes/{id}",
  });
  await assertRejects(
    () =>
      server.runtime({ sandboxId: owner.sandboxId! }).execute({
        command: "true",
      }),
    Error,
    "the server does not know it",
  );
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("fault: 500 on create — the error names the call and status; nothing is left", async () => {
  await using server = await startTestServer();
  server.faults.add({
    fault: { kind: "status", status: 500 },
    method: "POST",
    path: "/v1/sandboxes",
    times: 1,
  });
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 500);
  assertStringIncludes(error.message, "POST ");
  assertStringIncludes(error.message, "/v1/sandboxes");
  assertEquals(server.server.sandboxes.size, 0);
  // Not cached: the next call creates the sandbox.
  assertEquals((await runtime.execute({ command: "echo ok" })).stdout, "ok\n");
});

Deno.test("fault: 503 then success — an idempotent call is retried, a command never", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  await runtime.fs.writeText("a.txt", "a");
  server.faults.add({
    fault: { kind: "status", status: 503 },
    method: "GET",
    path: "/files/info",
    times: 1,
  });
  assertEquals((await runtime.fs.stat("a.txt"))?.size, 1);
  server.faults.add({
    fault: { kind: "status", status: 503 },
    method: "POST",
    path: "/command",
    times: 1,
  });
  const commands = () =>
    counted.requests.filter((r) =>
      r.method === "POST" && r.path.endsWith("/command")
    ).length;
  const before = commands();
  const error = await assertRejects(
    () => runtime.execute({ command: "echo ran >> ran.txt" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 503);
  assertEquals(commands(), before + 1);
  assertEquals(await runtime.fs.stat("ran.txt"), null);
});

Deno.test("fault: a slow first byte past the client's timeout — a timeout error, then the runtime goes on", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({ requestTimeoutMs: 300 });
  await runtime.fs.writeText("a.txt", "a");
  server.faults.add({
    fault: { kind: "slow", delayMs: 2_000 },
    method: "GET",
    path: "/files/info",
  });
  const started = Date.now();
  const error = await assertRejects(
    () => runtime.fs.stat("a.txt"),
    RemoteHttpError,
  );
  assert(error.timedOut, error.message);
  assertLess(Date.now() - started, 10_000);
  server.faults.clear();
  assertEquals((await runtime.fs.stat("a.txt"))?.size, 1);
});

Deno.test("fault: invalid JSON — a clear error, no sandbox left behind", async () => {
  await using server = await startTestServer();
  server.faults.add({
    fault: { kind: "invalid-json" },
    method: "POST",
    path: "/v1/sandboxes",
    times: 1,
  });
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertStringIncludes(error.message.toLowerCase(), "json");
  // The sandbox the server made anyway was found by its tag and deleted.
  assertEquals(server.server.sandboxes.size, 0);
  await runtime.execute({ command: "true" });
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("fault: a reset in the middle of the event stream — an error, and the command interrupted", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  server.faults.add({
    fault: { kind: "reset-stream", afterLines: 3 }, // init, ping, "started"
    method: "POST",
    path: "/command",
    times: 1,
  });
  const pidFile = `${server.dir}/pid`;
  const error = await assertRejects(
    () =>
      runtime.execute({
        command: `sleep 30 & echo $! > '${pidFile}'; echo started; wait`,
      }),
    SandboxCommandError,
    "the connection broke before the command finished; it was interrupted",
  );
  assertEquals(error.reason, "stream");
  const pid = Number(await Deno.readTextFile(pidFile));
  assert(await waitFor(() => !processAlive(pid)), "sleep still runs");
  assert(await waitFor(() => !anyCommandAlive(server.server)));
});

Deno.test("fault: an event stream that ends without completion — an error, and the command interrupted", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  server.faults.add({
    fault: { kind: "end-stream" },
    method: "POST",
    path: "/command",
    times: 1,
  });
  const error = await assertRejects(
    () => runtime.execute({ command: "echo started; exit 4" }),
    SandboxCommandError,
    "Cannot run the command: the event stream ended before the command finished; it was interrupted",
  );
  assertEquals(error.reason, "stream");
  assert(await waitFor(() => !anyCommandAlive(server.server)));
});

Deno.test("fault: a process that ignores SIGTERM — the timeout still stops it (SIGKILL)", async () => {
  await using server = await startTestServer({ killGraceMs: 500 });
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  server.faults.add({
    fault: { kind: "ignore-sigterm" },
    method: "POST",
    path: "/command",
    times: 1,
  });
  const started = Date.now();
  const result = await runtime.execute({
    command: "trap '' TERM; sleep 30",
    timeoutMs: 300,
  });
  assertEquals([result.timedOut, result.exitCode], [true, -1]);
  assertLess(Date.now() - started, 10_000);
  assert(await waitFor(() => !anyCommandAlive(server.server)));
});

Deno.test("fault: a failed upload is not cached — preparation fails cleanly and succeeds later", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const skill = await makeSkill(`${server.dir}/src`, "retry", {
    "data.bin": new Uint8Array([0, 1, 2, 255]),
  });
  server.faults.add({
    fault: { kind: "status", status: 500 },
    method: "POST",
    path: "/files/upload",
    times: 1,
  });
  await assertRejects(
    () => runtime.prepare({ skills: [{ skill }] }),
    SkillPreparationError,
    'Cannot prepare skill "retry"',
  );
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  assertEquals(
    await Deno.readFile(`${prepared!.basePath}/data.bin`),
    new Uint8Array([0, 1, 2, 255]),
  );
});

/** The faults a download may meet, each alone. */
const DOWNLOAD_FAULTS: readonly {
  name: string;
  fault: Fault;
  times?: number;
}[] = [
  { name: "500", fault: { kind: "status", status: 500 } },
  { name: "404", fault: { kind: "status", status: 404 } },
  { name: "503 once", fault: { kind: "status", status: 503 }, times: 1 },
  { name: "reset once", fault: { kind: "reset" }, times: 1 },
  { name: "reset always", fault: { kind: "reset" } },
  { name: "truncated once", fault: { kind: "truncate" }, times: 1 },
  { name: "truncated always", fault: { kind: "truncate" } },
  { name: "slow", fault: { kind: "slow", delayMs: 3_000 } },
  { name: "Range ignored", fault: { kind: "ignore-range" } },
];

Deno.test("fault: a download on every fault is complete and identical, or fails leaving no file", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({ requestTimeoutMs: 1_000 });
  const bytes = new Uint8Array(3 * 1024 * 1024);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 251;
  await Deno.writeFile(`${server.dir}/data.bin`, bytes);
  for (const { name, fault, times } of DOWNLOAD_FAULTS) {
    const target = await Deno.makeTempDir({ dir: server.dir });
    server.faults.clear();
    server.faults.add({
      fault,
      method: "GET",
      path: "/files/download",
      ...(times !== undefined ? { times } : {}),
    });
    // Ranges ignored only matter after a drop.
    if (fault.kind === "ignore-range") {
      server.faults.add({
        fault: { kind: "reset" },
        method: "GET",
        path: "/files/download",
        times: 1,
      });
    }
    let ok = false;
    try {
      await runtime.fs.download("data.bin", `${target}/out.bin`);
      ok = true;
    } catch (error) {
      assert(error instanceof Error, name);
    }
    const left = [];
    for await (const entry of Deno.readDir(target)) left.push(entry.name);
    if (ok) {
      assertEquals(left, ["out.bin"], name);
      assertEquals(await Deno.readFile(`${target}/out.bin`), bytes, name);
    } else {
      assertEquals(left, [], `${name}: a file was left behind`);
    }
  }
  server.faults.clear();
});
