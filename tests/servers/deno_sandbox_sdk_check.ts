/**
 * By hand, not part of the test run: the official Deno Sandbox SDK
 * (`@deno/sandbox`, test-only, never imported by the module) pointed at the
 * test server (its `sandboxEndpoint` and `apiEndpoint` = the server's
 * origin), making every call the runtime makes. Prints one line per check
 * and exits 1 when one fails.
 *
 * `deno run -A --no-lock tests/servers/deno_sandbox_sdk_check.ts` (needs npm).
 *
 * @module
 */
import { startDenoSandboxServer } from "./deno_sandbox.ts";

// Loaded by name at run time: `deno check` and the lock file leave it alone.
const SDK = "npm:@deno/sandbox@0.13.2";
const { Sandbox, Client } = await import(SDK);

const TOKEN = "ddo_sdk_check_token";
const server = startDenoSandboxServer({ token: TOKEN });
const options = {
  token: TOKEN,
  sandboxEndpoint: server.url,
  apiEndpoint: server.url,
};
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
async function text(stream: ReadableStream<Uint8Array> | null) {
  return stream ? await new Response(stream).text() : "";
}

// deno-lint-ignore no-explicit-any
let sandbox: any;
await check(
  "create with labels, a lifetime and env (id from the 101)",
  async () => {
    sandbox = await Sandbox.create({
      ...options,
      labels: { "skillrun.conversation": "c1" },
      timeout: "10m",
      env: { A: "one" },
    });
    if (!/^sbx_ord_[0-9a-hjkmnp-z]{20}$/.test(sandbox.id)) {
      throw new Error(`bad id ${sandbox.id}`);
    }
    return sandbox.id;
  },
);
await check("list by labels (console)", async () => {
  const client = new Client(options);
  const found = await client.sandboxes.list({
    labels: { "skillrun.conversation": "c1" },
  });
  equal(found.map((b: { id: string }) => b.id), [sandbox.id]);
  const none = await client.sandboxes.list({
    labels: { "skillrun.conversation": "other" },
  });
  equal(none, []);
});
await check("spawn: args, env, cwd, piped output, exit code", async () => {
  const child = await sandbox.spawn("bash", {
    args: ["-c", 'echo "$A $B $PWD"; echo err >&2; exit 3'],
    env: { B: "two" },
    cwd: "/tmp",
    stdout: "piped",
    stderr: "piped",
  });
  const [out, err, status] = await Promise.all([
    text(child.stdout),
    text(child.stderr),
    child.status,
  ]);
  equal([out, err, status.code, status.success], [
    "one two /tmp\n",
    "err\n",
    3,
    false,
  ]);
});
await check("sh (bash -c, BASH_ENV)", async () => {
  const result = await sandbox.sh`echo hi`.text();
  equal(result.trim(), "hi");
});
await check("kill (SIGTERM, then the status)", async () => {
  const child = await sandbox.spawn("sleep", { args: ["30"] });
  await child.kill();
  const status = await child.status;
  equal([status.code, status.signal], [143, "SIGTERM"]);
});
await check(
  "fs: writeTextFile, readTextFile, writeFile (stream), lstat",
  async () => {
    await sandbox.fs.mkdir("/home/app/d", { recursive: true });
    await sandbox.fs.writeTextFile("/home/app/d/a.txt", "hello");
    equal(await sandbox.fs.readTextFile("/home/app/d/a.txt"), "hello");
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("streamed "));
        c.enqueue(new TextEncoder().encode("bytes"));
        c.close();
      },
    });
    await sandbox.fs.writeFile("/home/app/d/b.bin", body, { mode: 0o755 });
    const info = await sandbox.fs.lstat("/home/app/d/b.bin");
    equal([info.isFile, info.size, info.mode & 0o777], [true, 14, 0o755]);
  },
);
await check("fs: readDir, a handle's seek and read, remove", async () => {
  const names = [];
  for await (const entry of sandbox.fs.readDir("/home/app/d")) {
    names.push(entry.name);
  }
  equal(names.sort(), ["a.txt", "b.bin"]);
  const file = await sandbox.fs.open("/home/app/d/b.bin", { read: true });
  await file.seek(9, 0);
  const buffer = new Uint8Array(16);
  const n = await file.read(buffer);
  await file.close();
  equal(new TextDecoder().decode(buffer.subarray(0, n)), "bytes");
  await sandbox.fs.remove("/home/app/d", { recursive: true });
});
await check("fs: a missing file is Deno.errors.NotFound", async () => {
  try {
    await sandbox.fs.readFile("/home/app/none");
  } catch (error) {
    equal((error as Error).constructor.name, "NotFound");
    return;
  }
  throw new Error("no error");
});
await check("env set and get", async () => {
  await sandbox.env.set("C", "three");
  equal(await sandbox.env.get("C"), "three");
});
await check("extendTimeout (PATCH stop_at_ms)", async () => {
  const until = await sandbox.extendTimeout("5m");
  return until instanceof Date ? "date" : String(until);
});
await check("connect by id (second socket)", async () => {
  const again = await Sandbox.connect(sandbox.id, options);
  equal((await again.sh`cat /proc/self/comm`.text()).trim().length > 0, true);
  await again.close();
});
await check("allowNet and secrets (placeholder in the sandbox)", async () => {
  const fenced = await Sandbox.create({
    ...options,
    allowNet: ["example.com"],
    secrets: { KEY: { hosts: ["api.example.com"], value: "real-value-123" } },
  });
  const seen = (await fenced.sh`printf %s "$KEY"`.text()).trim();
  await fenced.kill();
  if (seen === "" || seen.includes("real-value-123")) {
    throw new Error(`the sandbox saw ${JSON.stringify(seen)}`);
  }
});
await check("kill (DELETE; the socket closes)", async () => {
  await sandbox.kill();
  equal(server.sandboxes.get(sandbox.id)?.status, "stopped");
});
await check("a wrong token is InvalidTokenError", async () => {
  try {
    await Sandbox.create({ ...options, token: "ddo_wrong" });
  } catch (error) {
    equal((error as Error).name, "InvalidTokenError");
    return;
  }
  throw new Error("no error");
});

await server.close();
console.log(failed === 0 ? "all checks passed" : `${failed} checks failed`);
Deno.exit(failed === 0 ? 0 : 1);
