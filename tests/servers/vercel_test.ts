// Contract tests of the Vercel test server against the shapes recorded in
// vercel.md (the SDK's validators): sandbox and session, commands and their
// NDJSON, files, errors.
import { assert, assertEquals } from "../helpers/assert.ts";
import { startVercelServer, type VercelServer } from "./vercel.ts";

const TOKEN = "contract-token";
type Json = Record<string, unknown>;

/** Checks that `value` has each field with the given `typeof` (`?` optional). */
function shape(value: unknown, fields: Record<string, string>, what: string) {
  assert(typeof value === "object" && value !== null, `${what} is an object`);
  for (const [name, type] of Object.entries(fields)) {
    const optional = type.endsWith("?");
    const wanted = type.replace(/\?$/, "");
    const got = (value as Json)[name];
    if (got === undefined && optional) continue;
    const actual = got === null
      ? "null"
      : Array.isArray(got)
      ? "array"
      : typeof got;
    assert(
      wanted.split("|").includes(actual),
      `${what}.${name}: ${wanted} expected, got ${actual}`,
    );
  }
}

const SANDBOX = {
  name: "string",
  persistent: "boolean",
  createdAt: "number",
  updatedAt: "number",
  currentSessionId: "string",
  status: "string",
  vcpus: "number?",
  memory: "number?",
  timeout: "number?",
  tags: "object?",
};
const SESSION = {
  id: "string",
  memory: "number",
  vcpus: "number",
  region: "string",
  timeout: "number",
  status: "string",
  requestedAt: "number",
  createdAt: "number",
  cwd: "string",
  updatedAt: "number",
  startedAt: "number?",
};
const COMMAND = {
  id: "string",
  name: "string",
  args: "array",
  cwd: "string",
  sessionId: "string",
  exitCode: "number|null",
  startedAt: "number",
};

async function call(
  server: VercelServer,
  method: string,
  path: string,
  body?: unknown,
  token = TOKEN,
): Promise<Response> {
  return await fetch(`${server.url}${path}?teamId=team_1`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function checkWhole(answer: Json): void {
  shape(
    answer,
    { sandbox: "object", session: "object", routes: "array" },
    "answer",
  );
  shape(answer.sandbox, SANDBOX, "sandbox");
  shape(answer.session, SESSION, "session");
}

Deno.test("contract: create, get (resume), list, extend, stop and delete answer the SDK's shapes; errors are {error: {code, message}}", async () => {
  await using server = startVercelServer({ token: TOKEN });
  const created = await call(server, "POST", "/v3/sandboxes", {
    projectId: "prj_1",
    timeout: 60_000,
    persistent: true,
    tags: { a: "1" },
  });
  assertEquals(created.status, 200);
  const answer = await created.json();
  checkWhole(answer);
  const { name } = answer.sandbox;
  const sid = answer.session.id;
  checkWhole(await (await call(server, "GET", `/v2/sandboxes/${name}`)).json());
  const listed = await (await call(server, "GET", "/v2/sandboxes")).json();
  shape(listed, { sandboxes: "array", pagination: "object" }, "list");
  shape(listed.pagination, { count: "number", next: "string|null" }, "page");
  const extended = await (await call(
    server,
    "POST",
    `/v2/sandboxes/sessions/${sid}/extend-timeout`,
    { duration: 1000 },
  )).json();
  shape(extended.session, SESSION, "session");
  assertEquals(extended.session.timeout, 61_000);
  const stopped = await (await call(
    server,
    "POST",
    `/v2/sandboxes/sessions/${sid}/stop`,
  )).json();
  shape(stopped.session, SESSION, "session");
  assertEquals(stopped.session.status, "stopped");
  const gone = await call(server, "POST", `/v2/sandboxes/sessions/${sid}/cmd`, {
    command: "true",
  });
  assertEquals(gone.status, 410);
  shape((await gone.json()).error, { code: "string", message: "string" }, "e");
  const resumed = await (await fetch(
    `${server.url}/v2/sandboxes/${name}?teamId=t&resume=true`,
    { headers: { authorization: `Bearer ${TOKEN}` } },
  )).json();
  checkWhole(resumed);
  assertEquals([resumed.resumed, resumed.session.status], [true, "running"]);
  assertEquals(
    (await call(server, "DELETE", `/v2/sandboxes/${name}`)).status,
    200,
  );
  const missing = await call(server, "GET", `/v2/sandboxes/${name}`);
  assertEquals(missing.status, 404);
  shape(
    (await missing.json()).error,
    { code: "string", message: "string" },
    "e",
  );
  assertEquals(
    (await call(server, "GET", "/v2/sandboxes", undefined, "x")).status,
    403,
  );
});

Deno.test("contract: a waited command streams application/x-ndjson: the command, its logs, the finished command", async () => {
  await using server = startVercelServer({ token: TOKEN });
  const answer = await (await call(server, "POST", "/v3/sandboxes", {})).json();
  const sid = answer.session.id;
  const response = await call(
    server,
    "POST",
    `/v2/sandboxes/sessions/${sid}/cmd`,
    {
      command: "bash",
      args: ["-c", "echo out; echo err >&2; exit 3"],
      cwd: "/",
      wait: true,
    },
  );
  assertEquals(response.headers.get("content-type"), "application/x-ndjson");
  const lines = (await response.text()).trim().split("\n").map((l) =>
    JSON.parse(l)
  );
  shape(lines[0].command, COMMAND, "command");
  assertEquals(lines[0].command.exitCode, null);
  const last = lines.at(-1);
  shape(last.command, COMMAND, "command");
  assertEquals(last.command.exitCode, 3);
  const logs = lines.slice(1, -1);
  for (const log of logs) {
    shape(log, { stream: "string", data: "string" }, "log");
  }
  assertEquals(
    logs.filter((l) => l.stream === "stdout").map((l) => l.data).join(""),
    "out\n",
  );
  // Detached: {command} at once, then the logs and the finished command.
  const detached = await (await call(
    server,
    "POST",
    `/v2/sandboxes/sessions/${sid}/cmd`,
    { command: "sleep", args: ["30"], cwd: "/" },
  )).json();
  shape(detached.command, COMMAND, "command");
  const killed = await call(
    server,
    "POST",
    `/v2/sandboxes/sessions/${sid}/cmd/${detached.command.id}/kill`,
    { signal: 15 },
  );
  shape((await killed.json()).command, COMMAND, "command");
  const done = await (await fetch(
    `${server.url}/v2/sandboxes/sessions/${sid}/cmd/${detached.command.id}?wait=true`,
    { headers: { authorization: `Bearer ${TOKEN}` } },
  )).json();
  assertEquals(done.command.exitCode, 143);
});

Deno.test("contract: fs/read answers octet-stream or 404; fs/mkdir {}", async () => {
  await using server = startVercelServer({ token: TOKEN });
  const dir = await Deno.makeTempDir();
  try {
    const answer = await (await call(server, "POST", "/v3/sandboxes", {}))
      .json();
    const sid = answer.session.id;
    await Deno.writeTextFile(`${dir}/f.txt`, "hello");
    const read = await call(
      server,
      "POST",
      `/v2/sandboxes/sessions/${sid}/fs/read`,
      {
        path: `${dir}/f.txt`,
      },
    );
    assertEquals(read.headers.get("content-type"), "application/octet-stream");
    assertEquals(await read.text(), "hello");
    const missing = await call(
      server,
      "POST",
      `/v2/sandboxes/sessions/${sid}/fs/read`,
      { path: `${dir}/none` },
    );
    assertEquals(missing.status, 404);
    await missing.body?.cancel();
    const made = await call(
      server,
      "POST",
      `/v2/sandboxes/sessions/${sid}/fs/mkdir`,
      {
        path: `${dir}/d`,
      },
    );
    assertEquals([made.status, await made.json()], [200, {}]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("vercel server: a command's timeout (ms) SIGKILLs its process group: exit 137, awaited and detached", async () => {
  await using server = startVercelServer({ token: TOKEN });
  const answer = await (await call(server, "POST", "/v3/sandboxes", {})).json();
  const sid = answer.session.id;
  const dir = await Deno.makeTempDir();
  try {
    const started = performance.now();
    const waited = await call(
      server,
      "POST",
      `/v2/sandboxes/sessions/${sid}/cmd`,
      {
        command: "bash",
        args: ["-c", `sleep 30 & echo $! > ${dir}/pid; wait`],
        cwd: "/",
        wait: true,
        timeout: 300,
      },
    );
    const lines = (await waited.text()).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals(lines.at(-1).command.exitCode, 137);
    assert(performance.now() - started < 5_000, "the timeout was not kept");
    const pid = Number(await Deno.readTextFile(`${dir}/pid`));
    let alive = true;
    for (let i = 0; i < 50 && alive; i++) {
      try {
        Deno.kill(pid, "SIGCONT");
        await new Promise((resolve) => setTimeout(resolve, 50));
      } catch {
        alive = false;
      }
    }
    assert(!alive, "the group's background child outlived the timeout");
    const detached = await (await call(
      server,
      "POST",
      `/v2/sandboxes/sessions/${sid}/cmd`,
      { command: "sleep", args: ["30"], cwd: "/", timeout: 300 },
    )).json();
    const done = await (await fetch(
      `${server.url}/v2/sandboxes/sessions/${sid}/cmd/${detached.command.id}?wait=true`,
      { headers: { authorization: `Bearer ${TOKEN}` } },
    )).json();
    assertEquals(done.command.exitCode, 137);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("vercel server: started by hand, its file calls and its commands see one file system", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./vercel.ts", import.meta.url).pathname,
      "--port",
      "0",
      "--token",
      TOKEN,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const url = text.split("\n")[0]!;
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const byHand = { url } as VercelServer;
  try {
    const answer = await (await call(byHand, "POST", "/v3/sandboxes", {}))
      .json();
    const session = `/v2/sandboxes/sessions/${answer.session.id}`;
    // A file written by a command is read by the file API...
    const wrote = await call(byHand, "POST", `${session}/cmd`, {
      command: "bash",
      args: ["-c", `printf 'from a command' > ${dir}/a.txt`],
      wait: true,
    });
    await wrote.text();
    const read = await call(byHand, "POST", `${session}/fs/read`, {
      path: `${dir}/a.txt`,
    });
    assertEquals([read.status, await read.text()], [200, "from a command"]);
    // ...and a folder made by the file API is where a command finds it.
    const made = await call(byHand, "POST", `${session}/fs/mkdir`, {
      path: `${dir}/made`,
    });
    await made.body?.cancel();
    const listed = await call(byHand, "POST", `${session}/cmd`, {
      command: "bash",
      args: ["-c", `test -d ${dir}/made && echo there`],
      wait: true,
    });
    const lines = (await listed.text()).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assertEquals(lines.at(-1).command.exitCode, 0);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
