/**
 * By hand, not part of the test run: the official Daytona SDK
 * (`@daytonaio/sdk`, test-only, never imported by the module) pointed at the
 * test server, making every call the runtime makes. Prints one line per
 * check and exits 1 when one fails.
 *
 * `deno run -A --no-lock tests/servers/daytona_sdk_check.ts` (needs npm).
 *
 * @module
 */
import { startDaytonaServer } from "./daytona.ts";

// Loaded by name at run time: `deno check` and the lock file leave it alone.
const SDK = "npm:@daytonaio/sdk@0.218.0";
const { Daytona } = await import(SDK);

const server = startDaytonaServer({ apiKey: "sdk-key" });
const daytona = new Daytona({
  apiKey: "sdk-key",
  apiUrl: server.url,
  target: "us",
});
let failed = 0;
async function check(name: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    const detail = await fn();
    console.log(
      `ok   ${name}${
        detail === undefined ? "" : `: ${JSON.stringify(detail)}`
      }`,
    );
  } catch (error) {
    failed++;
    console.log(
      `FAIL ${name}: ${error instanceof Error ? error.message : error}`,
    );
  }
}
function equal(actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(
      `got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`,
    );
  }
}

// deno-lint-ignore no-explicit-any
let sandbox: any;
await check("create with labels and env (waits for started)", async () => {
  sandbox = await daytona.create({
    labels: { "skillrun.conversation": "c1" },
    envVars: { A: "one" },
  }, { timeout: 30 });
  equal(sandbox.state, "started");
  return sandbox.id;
});
await check(
  "get by id",
  async () => equal((await daytona.get(sandbox.id)).id, sandbox.id),
);
async function ids(labels?: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  for await (const box of daytona.list(labels ? { labels } : undefined)) {
    out.push(box.id);
  }
  return out;
}
await check("list by labels", async () => {
  equal(await ids({ "skillrun.conversation": "c1" }), [sandbox.id]);
  equal(await ids({ "skillrun.conversation": "other" }), []);
});
await check("process.executeCommand (cwd, env, exit code)", async () => {
  const r = await sandbox.process.executeCommand(
    'echo "$A $B"; exit 3',
    "/tmp",
    { B: "two" },
  );
  equal([r.exitCode, r.result], [3, "one two\n"]);
});
await check("process.executeCommand timeout", async () => {
  try {
    await sandbox.process.executeCommand("sleep 10", undefined, undefined, 1);
  } catch (error) {
    return (error as Error).constructor.name;
  }
  throw new Error("no error");
});
await check(
  "sessions: create, exec sync, exec async, command, logs, delete",
  async () => {
    await sandbox.process.createSession("s1");
    const sync = await sandbox.process.executeSessionCommand("s1", {
      command: "echo out; echo err >&2",
    });
    equal([sync.exitCode, sync.stdout, sync.stderr], [0, "out\n", "err\n"]);
    const started = await sandbox.process.executeSessionCommand("s1", {
      command: "echo begun; sleep 30",
      runAsync: true,
    });
    await new Promise((r) => setTimeout(r, 500));
    const command = await sandbox.process.getSessionCommand(
      "s1",
      started.cmdId,
    );
    equal(command.exitCode, undefined);
    const logs = await sandbox.process.getSessionCommandLogs(
      "s1",
      started.cmdId,
    );
    equal(logs.stdout, "begun\n");
    const session = await sandbox.process.getSession("s1");
    equal(session.commands.length, 2);
    await sandbox.process.deleteSession("s1");
    try {
      await sandbox.process.getSession("s1");
    } catch {
      return "deleted";
    }
    throw new Error("session still there");
  },
);
await check("fs.uploadFiles (bulk) then download, list, details", async () => {
  await sandbox.fs.uploadFiles([
    {
      source: new TextEncoder().encode("alpha"),
      destination: "/home/daytona/d/a.txt",
    },
    {
      source: new TextEncoder().encode("beta!"),
      destination: "/home/daytona/d/b.txt",
    },
  ]);
  const down = await sandbox.fs.downloadFile("/home/daytona/d/a.txt");
  equal(new TextDecoder().decode(down), "alpha");
  const many = await sandbox.fs.downloadFiles([
    { source: "/home/daytona/d/a.txt" },
    { source: "/home/daytona/d/none" },
  ]);
  equal(many.map((m: { error?: string }) => m.error === undefined), [
    true,
    false,
  ]);
  const listed = await sandbox.fs.listFiles("/home/daytona/d");
  equal(listed.map((f: { name: string }) => f.name).sort(), ["a.txt", "b.txt"]);
  const info = await sandbox.fs.getFileDetails("/home/daytona/d/b.txt");
  equal([info.size, info.isDir], [5, false]);
});
await check("fs.createFolder, setFilePermissions, deleteFile", async () => {
  await sandbox.fs.createFolder("/home/daytona/e/f", "700");
  equal(
    (await sandbox.fs.getFileDetails("/home/daytona/e/f")).permissions,
    "0700",
  );
  await sandbox.fs.uploadFile(
    new TextEncoder().encode("x"),
    "/home/daytona/e/x.sh",
  );
  await sandbox.fs.setFilePermissions("/home/daytona/e/x.sh", { mode: "755" });
  equal(
    (await sandbox.fs.getFileDetails("/home/daytona/e/x.sh")).permissions,
    "0755",
  );
  await sandbox.fs.deleteFile("/home/daytona/e", true);
});
await check("setAutostopInterval, stop, start", async () => {
  await sandbox.setAutostopInterval(0);
  await sandbox.stop();
  equal(sandbox.state, "stopped");
  await sandbox.start();
  equal(sandbox.state, "started");
});
await check("delete", async () => {
  await sandbox.delete();
  equal(await ids(), []);
});
await server.close();
console.log(failed === 0 ? "all checks passed" : `${failed} checks failed`);
Deno.exit(failed === 0 ? 0 : 1);
