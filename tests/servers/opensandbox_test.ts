/**
 * Tests of the OpenSandbox test server: every answer's shape against the
 * OpenAPI documents in `../shared/specs/opensandbox/`, the facts of
 * `../shared/specs/README.md`, and each fault of the injector observed on
 * the wire. Plain `fetch` only.
 *
 * Why one long file: each test walks one flow of the server (lifecycle,
 * commands, files, faults) through many calls, checking every answer against
 * the spec on the way; the flows share the contract and the server set-up.
 */
import {
  assert,
  assertEquals,
  assertGreaterOrEqual,
  assertMatch,
  assertRejects,
} from "@std/assert";
import { checkedBody, loadSharedContract } from "./_contract.ts";
import { sharedData, sharedTest } from "../helpers/shared_data.ts";
import { unusedUrl } from "./_fault_server.ts";
import {
  type OpenSandboxServer,
  type OpenSandboxServerOptions,
  startOpenSandboxServer,
} from "./opensandbox.ts";
import { PROJECT_CONFIG } from "../helpers/testing.ts";

// The official descriptions cross-check every answer when they are beside the
// clone; without them the tests check the server's behaviour alone.
const OPENSANDBOX_SPECS = sharedData(
  "specs/opensandbox/",
  "the official OpenSandbox lifecycle and execd OpenAPI descriptions",
);
const SPECS = OPENSANDBOX_SPECS.url;
const lifecycleSpec = await loadSharedContract(
  "opensandbox/sandbox-lifecycle.yml",
  "the official OpenSandbox lifecycle OpenAPI description",
);
const execdSpec = await loadSharedContract(
  "opensandbox/execd-api.yaml",
  "the official OpenSandbox execd OpenAPI description",
);

const KEY = "test-key";
const AUTH = { "OPEN-SANDBOX-API-KEY": KEY };

interface Started {
  server: OpenSandboxServer;
  id: string;
  execd: string;
}

async function start(
  options: OpenSandboxServerOptions = {},
): Promise<Started & AsyncDisposable> {
  const server = await startOpenSandboxServer({
    apiKey: KEY,
    streamLingerMs: 20,
    ...options,
  });
  const sandbox = server.createSandbox();
  return {
    server,
    id: sandbox.id,
    execd: server.execdUrl(sandbox.id),
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** Calls the lifecycle API and checks the answer against the spec. */
async function lifecycle(
  server: OpenSandboxServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = AUTH,
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const checked = await checkedBody(lifecycleSpec, response, {
    method,
    path: new URL(response.url).pathname,
  });
  return { status: response.status, body: checked, headers: response.headers };
}

/** Calls execd and checks the answer against the spec. */
async function execd(
  base: string,
  method: string,
  route: string,
  init: RequestInit = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${base}${route}`, { method, ...init });
  const path = route.split("?")[0]!;
  const checked = await checkedBody(execdSpec, response, { method, path });
  return { status: response.status, body: checked, headers: response.headers };
}

// deno-lint-ignore no-explicit-any
type Event = Record<string, any>;

/** Parses bare-JSON framing strictly: each event is one JSON line and a blank line. */
function parseEvents(text: string): Event[] {
  assert(
    text === "" || text.endsWith("\n\n"),
    `stream ends mid-event: ${text.slice(-80)}`,
  );
  const frames = text.split("\n\n").slice(0, -1);
  return frames.map((frame) => {
    assert(!frame.includes("\n"), `an event spans lines: ${frame}`);
    assert(!frame.startsWith("data:"), "bare JSON expected, not data:");
    const event = JSON.parse(frame);
    const result = execdSpec?.validate({
      method: "POST",
      path: "/command",
      status: 200,
      contentType: "text/event-stream",
    }, event);
    if (result) assert(result.valid, `${frame}: ${result.errors.join("; ")}`);
    return event;
  });
}

async function run(
  base: string,
  body: Record<string, unknown>,
): Promise<{ events: Event[]; response: Response; closedAt: number }> {
  const response = await fetch(`${base}/command`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-type"), "text/event-stream");
  const text = await response.text();
  return { events: parseEvents(text), response, closedAt: Date.now() };
}

/** The last event that is not a ping (pings go on while the stream lingers). */
function final(events: Event[]): Event {
  return events.filter((event) => event.type !== "ping").at(-1)!;
}

function output(events: Event[], type = "stdout"): string[] {
  return events.filter((event) => event.type === type).map((event) =>
    event.text
  );
}

/** Reads an event stream as it comes, event by event. */
async function* streamEvents(response: Response): AsyncGenerator<Event> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of response.body!) {
    pending += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = pending.indexOf("\n\n")) >= 0) {
      yield JSON.parse(pending.slice(0, end));
      pending = pending.slice(end + 2);
    }
  }
}

/** Reads events until one of `type` (a `break` would cancel the stream). */
async function readUntil(
  reader: AsyncGenerator<Event>,
  events: Event[],
  type: string,
): Promise<void> {
  while (true) {
    const { value, done } = await reader.next();
    if (done) throw new Error(`the stream ended before a ${type} event`);
    events.push(value);
    if (value.type === type) return;
  }
}

// ---------------------------------------------------------------------------
// Contract documents

Deno.test({
  ...sharedTest(
    OPENSANDBOX_SPECS,
    "contract: every declared JSON response schema of both documents compiles and resolves",
  ),
  fn() {
    let checked = 0;
    for (
      const [spec, file] of [[lifecycleSpec!, "lifecycle"], [
        execdSpec!,
        "execd",
      ]] as const
    ) {
      // A sample of operations the server answers, each status declared.
      const operations: [string, string, number[]][] = file === "lifecycle"
        ? [
          ["POST", "/sandboxes", [202, 400, 401, 409, 500]],
          ["GET", "/sandboxes", [200, 400, 401]],
          ["GET", "/sandboxes/x", [200, 401, 404]],
          ["DELETE", "/sandboxes/x", [401, 404]],
          ["POST", "/sandboxes/x/renew-expiration", [200, 400, 404]],
          ["GET", "/sandboxes/x/endpoints/1", [200, 400, 404]],
        ]
        : [
          ["GET", "/files/info", [200, 404, 500]],
          ["GET", "/directories/list", [200, 400, 404]],
          ["GET", "/files/search", [200, 400, 404]],
          ["GET", "/command/status/x", [200, 404]],
          ["POST", "/command", [400, 500]],
          ["GET", "/files/download", [416, 404]],
        ];
      for (const [method, path, statuses] of operations) {
        for (const status of statuses) {
          const found = spec.responseSpec({ method, path, status });
          assert(
            found.schema !== undefined,
            `${file} ${method} ${path} ${status}`,
          );
          checked++;
        }
      }
    }
    assertGreaterOrEqual(checked, 30);
    // nullable (OpenAPI 3.0 style) is adapted: exit_code may be null.
    assert(
      execdSpec!.validate({
        method: "GET",
        path: "/command/status/x",
        status: 200,
      }, {
        id: "x",
        running: true,
        exit_code: null,
        finished_at: null,
      }).valid,
    );
    // …and a wrong type is still refused.
    assert(
      !execdSpec!.validate({
        method: "GET",
        path: "/command/status/x",
        status: 200,
      }, {
        id: "x",
        running: "yes",
      }).valid,
    );
  },
});

// ---------------------------------------------------------------------------
// Lifecycle

Deno.test("lifecycle: create 202 Running (Docker), get, endpoints for any port, renew, list filters, delete 204 then 404", async () => {
  await using started = await start();
  const { server } = started;
  const created = await lifecycle(server, "POST", "/sandboxes", {
    image: { uri: "python:3.11" },
    entrypoint: ["tail", "-f", "/dev/null"],
    timeout: 600,
    resourceLimits: { cpu: "500m", memory: "512Mi" },
    env: { A: "1" },
    metadata: { project: "apollo", note: "Demo Test" },
  });
  assertEquals(created.status, 202);
  const sandbox = created.body as Event;
  assertEquals(sandbox.status.state, "Running");
  assertEquals(sandbox.image, undefined, "no startup source in the 202");
  const got = await lifecycle(server, "GET", `/sandboxes/${sandbox.id}`);
  assertEquals((got.body as Event).image, { uri: "python:3.11" });
  for (const port of [44772, 18080, 8080]) {
    const endpoint = await lifecycle(
      server,
      "GET",
      `/sandboxes/${sandbox.id}/endpoints/${port}`,
    );
    const value = (endpoint.body as Event).endpoint as string;
    assert(!value.includes("://"), "no scheme in an endpoint");
    assert(value.endsWith(`/sandboxes/${sandbox.id}/port/${port}`), value);
  }
  const bad = await lifecycle(
    server,
    "GET",
    `/sandboxes/${sandbox.id}/endpoints/0`,
  );
  assertEquals(bad.status, 400);
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const renewed = await lifecycle(
    server,
    "POST",
    `/sandboxes/${sandbox.id}/renew-expiration`,
    { expiresAt: later },
  );
  assertEquals(renewed.body, { expiresAt: later });
  const past = await lifecycle(
    server,
    "POST",
    `/sandboxes/${sandbox.id}/renew-expiration`,
    { expiresAt: "2000-01-01T00:00:00Z" },
  );
  assertEquals(past.status, 400);
  // List: state (OR) and one metadata parameter holding k=v&k2=v2.
  const metadata = encodeURIComponent("project=apollo&note=Demo Test");
  const listed = await lifecycle(
    server,
    "GET",
    `/sandboxes?state=Paused&state=Running&metadata=${metadata}`,
  );
  const list = listed.body as Event;
  assertEquals(list.items.map((item: { id: string }) => item.id), [sandbox.id]);
  assertEquals(list.pagination.totalItems, 1);
  const none = await lifecycle(
    server,
    "GET",
    `/sandboxes?metadata=${encodeURIComponent("project=other")}`,
  );
  assertEquals((none.body as Event).items, []);
  const paused = await lifecycle(server, "GET", "/sandboxes?state=Paused");
  assertEquals((paused.body as Event).items, []);
  const deleted = await lifecycle(server, "DELETE", `/sandboxes/${sandbox.id}`);
  assertEquals(deleted.status, 204);
  const gone = await lifecycle(server, "GET", `/sandboxes/${sandbox.id}`);
  assertEquals(gone.status, 404);
  assertEquals((gone.body as Event).code, "DOCKER::SANDBOX_NOT_FOUND");
});

Deno.test("lifecycle: 401 JSON on a missing or wrong key; bad bodies 400; telemetry 404 JSON", async () => {
  await using started = await start();
  const { server } = started;
  const missing = await lifecycle(server, "GET", "/sandboxes", undefined, {});
  assertEquals(missing.status, 401);
  assertEquals((missing.body as Event).code, "MISSING_API_KEY");
  const wrong = await lifecycle(server, "GET", "/sandboxes", undefined, {
    "OPEN-SANDBOX-API-KEY": "nope",
  });
  assertEquals(wrong.status, 401);
  assertEquals((wrong.body as Event).code, "INVALID_API_KEY");
  const noImage = await lifecycle(server, "POST", "/sandboxes", {
    entrypoint: ["x"],
  });
  assertEquals(noImage.status, 400);
  const shortTimeout = await lifecycle(server, "POST", "/sandboxes", {
    image: { uri: "u" },
    entrypoint: ["x"],
    timeout: 5,
  });
  assertEquals(shortTimeout.status, 400);
  const telemetry = await fetch(`${server.url}/metrics/events`, {
    method: "POST",
    headers: AUTH,
    body: "{}",
  });
  assertEquals(telemetry.status, 404);
  const error = await telemetry.json();
  assertEquals(typeof error.code, "string");
  assertEquals(typeof error.message, "string");
});

Deno.test("lifecycle: Kubernetes-style Pending, endpoints resolve while Pending, execd 503 until ready, then /ping 200 empty", async () => {
  await using server = await startOpenSandboxServer({
    apiKey: KEY,
    provisioning: "kubernetes",
    pendingMs: 400,
  });
  const created = await lifecycle(server, "POST", "/sandboxes", {
    image: { uri: "u" },
    entrypoint: ["x"],
    resourceLimits: {},
  });
  const sandbox = created.body as Event;
  assertEquals(sandbox.status.state, "Pending");
  const endpoint = await lifecycle(
    server,
    "GET",
    `/sandboxes/${sandbox.id}/endpoints/44772`,
  );
  const execdUrl = `http://${(endpoint.body as Event).endpoint}`;
  const early = await fetch(`${execdUrl}/ping`);
  assertEquals(early.status, 503);
  assertEquals(typeof (await early.json()).code, "string");
  let state = "Pending";
  const deadline = Date.now() + 5000;
  while (state === "Pending" && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    state = ((await lifecycle(server, "GET", `/sandboxes/${sandbox.id}`))
      .body as Event)
      .status.state;
  }
  assertEquals(state, "Running");
  const ping = await execd(execdUrl, "GET", "/ping");
  assertEquals(ping.status, 200);
  assertEquals(ping.body, undefined);
});

Deno.test("execd: an endpoint path like Docker bridge mode and endpoint headers required on every call", async () => {
  await using started = await start({
    endpointPath: "/proxy/{port}",
    endpointHeaders: { "X-Access-Token": "secret-token" },
  });
  const { server, id } = started;
  const endpoint = await lifecycle(
    server,
    "GET",
    `/sandboxes/${id}/endpoints/44772`,
  );
  assertEquals(endpoint.body, {
    endpoint: `${server.origin.slice("http://".length)}/proxy/44772`,
    headers: { "X-Access-Token": "secret-token" },
  });
  const refused = await fetch(`${server.origin}/proxy/44772/ping`);
  assertEquals(refused.status, 401);
  assertEquals(typeof (await refused.json()).code, "string");
  const ok = await fetch(`${server.origin}/proxy/44772/ping`, {
    headers: { "X-Access-Token": "secret-token" },
  });
  assertEquals(ok.status, 200);
  await ok.body?.cancel();
});

Deno.test("execd: unknown route or method is 404 text/plain '404 page not found'", async () => {
  await using started = await start();
  for (
    const [method, route] of [["GET", "/nothing"], ["PUT", "/command"]] as const
  ) {
    const response = await fetch(`${started.execd}${route}`, { method });
    assertEquals(response.status, 404);
    assertEquals(response.headers.get("content-type"), "text/plain");
    assertEquals(await response.text(), "404 page not found");
  }
});

// ---------------------------------------------------------------------------
// Commands

Deno.test("command: bare-JSON framing, one event per line, \\r ends a line, blank line as \\n, last line flushed, exit code only in the error event", async () => {
  await using started = await start();
  const { events } = await run(started.execd, {
    command: String
      .raw`printf 'one\n\ntwo\r\nthree\rfour\n'; printf 'bad \377 byte\n'; echo oops >&2; printf 'tail'; exit 7`,
  });
  assertEquals(events[0]!.type, "init");
  assertMatch(events[0]!.text, /^\S+$/);
  assertEquals(
    events[1]!.type,
    "ping",
    "the first ping comes right after init",
  );
  assertEquals(output(events), [
    "one",
    "\n",
    "two",
    "three",
    "four",
    "bad \ufffd byte",
    "tail",
  ]);
  assertEquals(output(events, "stderr"), ["oops"]);
  const last = final(events);
  assertEquals(last.type, "error");
  assertEquals(last.error, {
    ename: "CommandExecError",
    evalue: "7",
    traceback: ["exit status 7"],
  });
  assert(!events.some((event) => event.type === "execution_complete"));
  // Long enough for a non-zero `execution_time`: execd leaves out a 0 ms one
  // (`omitempty`), and `true` alone sometimes took under 1 ms.
  const ok = await run(started.execd, { command: "sleep 0.01" });
  assertEquals(final(ok.events).type, "execution_complete");
  assertEquals(typeof final(ok.events).execution_time, "number");
});

Deno.test("command: cwd, envs, pings every interval, stream open a while after the last event", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start({
      pingIntervalMs: 100,
      streamLingerMs: 300,
    });
    const begin = Date.now();
    const { events, closedAt } = await run(started.execd, {
      command: 'sleep 0.45; pwd; echo "$GREETING"',
      cwd: dir,
      envs: { GREETING: "hello there" },
    });
    assertEquals(output(events), [await Deno.realPath(dir), "hello there"]);
    assertGreaterOrEqual(
      events.filter((event) => event.type === "ping").length,
      4,
    );
    const lastEvent = final(events).timestamp as number;
    assertGreaterOrEqual(closedAt - lastEvent, 250, "the stream lingers");
    assertGreaterOrEqual(closedAt - begin, 700);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command: a missing, non-folder or undefined-$VAR cwd is 400 INVALID_REQUEST_BODY before any event; no command is 400", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/file`, "x");
    await using started = await start();
    for (
      const cwd of [
        `${dir}/missing`,
        `${dir}/file`,
        "$SKILLRUN_UNDEFINED_VAR/x",
      ]
    ) {
      const answer = await execd(started.execd, "POST", "/command", {
        body: JSON.stringify({ command: "touch ran", cwd }),
      });
      assertEquals(answer.status, 400, cwd);
      assertEquals((answer.body as Event).code, "INVALID_REQUEST_BODY");
    }
    const none = await execd(started.execd, "POST", "/command", { body: "{}" });
    assertEquals(none.status, 400);
    const broken = await execd(started.execd, "POST", "/command", {
      body: "{",
    });
    assertEquals(broken.status, 400);
    assertEquals(started.server.commands.size, 0, "nothing ran");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command: a start failure is init then an error whose evalue is the error text", async () => {
  await using started = await start();
  // One environment string over the kernel's 128 KiB limit: execve fails (E2BIG).
  const { events } = await run(started.execd, {
    command: "true",
    envs: { HUGE: "x".repeat(200_000) },
  });
  assertEquals(events[0]!.type, "init");
  const error = final(events);
  assertEquals(error.type, "error");
  assertEquals(error.error.ename, "CommandExecError");
  assert(!/^-?\d+$/.test(error.error.evalue), error.error.evalue);
});

Deno.test("command: a server-side timeout kills the group: evalue -1, signal: killed, nothing left alive", async () => {
  await using started = await start();
  const { events } = await run(started.execd, {
    command: "sleep 30 & sleep 30; wait",
    timeout: 300,
  });
  const id = events[0]!.text as string;
  assertEquals(final(events).error, {
    ename: "CommandExecError",
    evalue: "-1",
    traceback: ["signal: killed"],
  });
  assertEquals(started.server.commandAlive(id), false);
  const status = await execd(started.execd, "GET", `/command/status/${id}`);
  const body = status.body as Event;
  assertEquals([body.running, body.exit_code, body.error], [
    false,
    -1,
    "signal: killed",
  ]);
});

Deno.test("command: DELETE /command?id= terminates the whole group, answers 200 only once it is gone; unknown or finished id 500 RUNTIME_ERROR", async () => {
  await using started = await start();
  const response = await fetch(`${started.execd}/command`, {
    method: "POST",
    body: JSON.stringify({
      command: "sleep 30 & sleep 30 & echo started; wait",
    }),
  });
  const events: Event[] = [];
  const reader = streamEvents(response);
  await readUntil(reader, events, "stdout");
  const id = events[0]!.text as string;
  assert(started.server.commandAlive(id));
  const interrupted = await execd(started.execd, "DELETE", `/command?id=${id}`);
  assertEquals(interrupted.status, 200);
  assertEquals(
    started.server.commandAlive(id),
    false,
    "the group is gone at 200",
  );
  for await (const event of reader) events.push(event);
  assertEquals(final(events).error, {
    ename: "CommandExecError",
    evalue: "-1",
    traceback: ["signal: terminated"],
  });
  for (const unknown of [id, "no-such-id"]) {
    const again = await execd(
      started.execd,
      "DELETE",
      `/command?id=${unknown}`,
    );
    assertEquals(again.status, 500);
    assertEquals((again.body as Event).code, "RUNTIME_ERROR");
  }
});

Deno.test("command: a client that disconnects does not stop the command", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const response = await fetch(`${started.execd}/command`, {
      method: "POST",
      body: JSON.stringify({ command: `sleep 0.3; echo done > "${dir}/mark"` }),
    });
    const reader = streamEvents(response);
    const init = await reader.next();
    await reader.return(undefined);
    const id = init.value!.text as string;
    const deadline = Date.now() + 5000;
    while (started.server.commands.get(id)?.running && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assertEquals(await Deno.readTextFile(`${dir}/mark`), "done\n");
    assertEquals(started.server.commands.get(id)?.exitCode, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("command: background runs answer init + execution_complete at once; logs by byte cursor with EXECD-COMMANDS-TAIL-CURSOR; status", async () => {
  await using started = await start();
  const { events } = await run(started.execd, {
    command: "echo first; echo err >&2; sleep 1; echo second; exit 4",
    background: true,
  });
  assertEquals(events.map((event) => event.type).filter((t) => t !== "ping"), [
    "init",
    "execution_complete",
  ]);
  const id = events[0]!.text as string;
  const running = await execd(started.execd, "GET", `/command/status/${id}`);
  assertEquals((running.body as Event).running, true);
  let first = await execd(started.execd, "GET", `/command/${id}/logs`);
  for (let i = 0; i < 50 && first.body !== "first\nerr\n"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    first = await execd(started.execd, "GET", `/command/${id}/logs`);
  }
  assertEquals(first.body, "first\nerr\n");
  const cursor = first.headers.get("EXECD-COMMANDS-TAIL-CURSOR");
  assertEquals(cursor, "10");
  const deadline = Date.now() + 5000;
  while (started.server.commands.get(id)?.running && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const rest = await execd(
    started.execd,
    "GET",
    `/command/${id}/logs?cursor=${cursor}`,
  );
  assertEquals(rest.body, "second\n");
  assertEquals(rest.headers.get("EXECD-COMMANDS-TAIL-CURSOR"), "17");
  const done = await execd(started.execd, "GET", `/command/status/${id}`);
  const status = done.body as Event;
  assertEquals([status.running, status.exit_code, status.content], [
    false,
    4,
    "echo first; echo err >&2; sleep 1; echo second; exit 4",
  ]);
  const unknown = await execd(started.execd, "GET", "/command/status/nope");
  assertEquals(unknown.status, 404);
});

Deno.test("command: background logs stream from a byte cursor (past the end, bad and negative cursors, foreground and unknown ids), interrupt of a background group, and execd's late registration", async () => {
  await using started = await start({ killGraceMs: 300 });
  const { events } = await run(started.execd, {
    command: "printf 'abc'; sleep 30 & sleep 30 & wait",
    background: true,
  });
  const id = events[0]!.text as string;
  let logs = await execd(started.execd, "GET", `/command/${id}/logs?cursor=0`);
  for (let i = 0; i < 50 && logs.body !== "abc"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    logs = await execd(started.execd, "GET", `/command/${id}/logs?cursor=0`);
  }
  assertEquals(logs.body, "abc");
  // The header the spec declares: an integer, the next cursor.
  if (OPENSANDBOX_SPECS.present) {
    const declared = (await Deno.readTextFile(new URL("execd-api.yaml", SPECS)))
      .includes("EXECD-COMMANDS-TAIL-CURSOR:");
    assert(declared);
  }
  assertEquals(logs.headers.get("EXECD-COMMANDS-TAIL-CURSOR"), "3");
  const middle = await execd(
    started.execd,
    "GET",
    `/command/${id}/logs?cursor=1`,
  );
  assertEquals(
    [middle.body, middle.headers.get("EXECD-COMMANDS-TAIL-CURSOR")],
    [
      "bc",
      "3",
    ],
  );
  // Past the end: nothing, and the cursor stays where it was put (Go's Seek).
  const past = await execd(
    started.execd,
    "GET",
    `/command/${id}/logs?cursor=99`,
  );
  assertEquals([past.body, past.headers.get("EXECD-COMMANDS-TAIL-CURSOR")], [
    undefined,
    "99",
  ]);
  // Not an integer: read as 0 (QueryInt64's default).
  const word = await execd(
    started.execd,
    "GET",
    `/command/${id}/logs?cursor=abc`,
  );
  assertEquals(word.body, "abc");
  const negative = await execd(
    started.execd,
    "GET",
    `/command/${id}/logs?cursor=-1`,
  );
  assertEquals(negative.status, 400);
  assertEquals((negative.body as Event).code, "INVALID_REQUEST_BODY");
  const unknown = await execd(started.execd, "GET", "/command/nope/logs");
  assertEquals([unknown.status, (unknown.body as Event).message], [
    400,
    "command not found: nope",
  ]);
  const foreground = await run(started.execd, { command: "true" });
  const fgId = foreground.events[0]!.text as string;
  const fgLogs = await execd(started.execd, "GET", `/command/${fgId}/logs`);
  assertEquals([fgLogs.status, (fgLogs.body as Event).message], [
    400,
    `command ${fgId} is not running in background`,
  ]);
  // The interrupt ends the whole background group, then answers 200.
  const pgid = started.server.commands.get(id)!.pgid;
  const interrupted = await execd(
    started.execd,
    "DELETE",
    `/command?id=${id}`,
  );
  assertEquals(interrupted.status, 200);
  const alive = new Deno.Command("ps", {
    args: ["-o", "stat=", "-g", String(pgid)],
    stdout: "piped",
  }).outputSync();
  const states = new TextDecoder().decode(alive.stdout).trim();
  assert(states === "" || /^Z+$/.test(states.replaceAll(/\s/g, "")), states);
  const status = await execd(started.execd, "GET", `/command/status/${id}`);
  assertEquals((status.body as Event).running, false);
  const again = await execd(started.execd, "DELETE", `/command?id=${id}`);
  assertEquals(again.status, 500);

  // The real execd sends init before it registers the command.
  await using late = await start({ registerDelayMs: 300 });
  const lateRun = await run(late.execd, {
    command: "echo x",
    background: true,
  });
  const lateId = lateRun.events[0]!.text as string;
  const early = await execd(late.execd, "GET", `/command/status/${lateId}`);
  const earlyLogs = await execd(late.execd, "GET", `/command/${lateId}/logs`);
  assertEquals([early.status, earlyLogs.status], [404, 400]);
  assertEquals(
    (earlyLogs.body as Event).message,
    `command not found: ${lateId}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 350));
  const known = await execd(late.execd, "GET", `/command/status/${lateId}`);
  assertEquals(known.status, 200);
});

// ---------------------------------------------------------------------------
// Files

function multipartStream(
  parts: {
    name: string;
    filename?: string;
    type?: string;
    content: Uint8Array | string;
  }[],
): { body: ReadableStream<Uint8Array>; contentType: string } {
  const boundary = `----skillrun${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${
      part.filename === undefined ? "" : `; filename="${part.filename}"`
    }`;
    chunks.push(encoder.encode(
      `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${
        part.type === undefined ? "" : `Content-Type: ${part.type}\r\n`
      }\r\n`,
    ));
    chunks.push(
      typeof part.content === "string"
        ? encoder.encode(part.content)
        : part.content,
    );
    chunks.push(encoder.encode("\r\n"));
  }
  chunks.push(encoder.encode(`--${boundary}--\r\n`));
  return {
    // A stream without a length: fetch sends it chunked.
    body: new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(next);
      },
    }),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

Deno.test("files: chunked multipart upload of metadata+file pairs, parents created, modes octal-as-decimal both ways; metadata must be a file part", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const binary = new Uint8Array(70_000).map((_, i) => (i * 7) & 0xff);
    const { body, contentType } = multipartStream([
      {
        name: "metadata",
        filename: "metadata",
        type: "application/json",
        content: JSON.stringify({ path: `${dir}/a/b/run.sh`, mode: 755 }),
      },
      {
        name: "file",
        filename: "run.sh",
        type: "application/octet-stream",
        content: "#!/bin/sh\necho hi\n",
      },
      {
        name: "metadata",
        filename: "metadata",
        type: "application/json",
        content: JSON.stringify({ path: `${dir}/data.bin`, mode: 600 }),
      },
      {
        name: "file",
        filename: "data.bin",
        type: "application/octet-stream",
        content: binary,
      },
    ]);
    const uploaded = await execd(started.execd, "POST", "/files/upload", {
      method: "POST",
      headers: { "content-type": contentType },
      body,
    });
    assertEquals(uploaded.status, 200);
    assertEquals((await Deno.stat(`${dir}/a/b/run.sh`)).mode! & 0o777, 0o755);
    assertEquals((await Deno.stat(`${dir}/data.bin`)).mode! & 0o777, 0o600);
    assertEquals(await Deno.readFile(`${dir}/data.bin`), binary);
    const info = await execd(
      started.execd,
      "GET",
      `/files/info?path=${encodeURIComponent(`${dir}/a/b/run.sh`)}&path=${
        encodeURIComponent(`${dir}/data.bin`)
      }`,
    );
    const map = info.body as Event;
    assertEquals(map[`${dir}/a/b/run.sh`].mode, 755);
    assertEquals(map[`${dir}/data.bin`].mode, 600);
    assertEquals(map[`${dir}/data.bin`].size, 70_000);
    // The command sees the same path.
    const { events } = await run(started.execd, {
      command: `${dir}/a/b/run.sh`,
    });
    assertEquals(output(events), ["hi"]);
    // A metadata part without a file name is not a metadata file.
    const plain = new FormData();
    plain.append("metadata", JSON.stringify({ path: `${dir}/x` }));
    plain.append("file", new Blob(["x"]), "x");
    const refused = await execd(started.execd, "POST", "/files/upload", {
      body: plain,
    });
    assertEquals(refused.status, 400);
    assertEquals((refused.body as Event).code, "INVALID_FILE_METADATA");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files: download 200 with length, one Range 206 + Content-Range, unsatisfiable 416 text/plain, bad syntax 416 JSON, empty file ignores Range", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const bytes = new Uint8Array(1000).map((_, i) => i % 251);
    await Deno.writeFile(`${dir}/f.bin`, bytes);
    await Deno.writeFile(`${dir}/empty`, new Uint8Array());
    const url = (name: string) =>
      `${started.execd}/files/download?path=${
        encodeURIComponent(`${dir}/${name}`)
      }`;
    const full = await fetch(url("f.bin"));
    assertEquals(full.status, 200);
    assertEquals(full.headers.get("content-length"), "1000");
    assertEquals(full.headers.get("content-type"), "application/octet-stream");
    assertEquals(
      full.headers.get("content-disposition"),
      'attachment; filename="f.bin"',
    );
    assertEquals(new Uint8Array(await full.arrayBuffer()), bytes);
    for (
      const [range, start, end] of [
        ["bytes=100-199", 100, 199],
        ["bytes=900-", 900, 999],
        ["bytes=-10", 990, 999],
        ["bytes=995-5000,0-1", 995, 999],
      ] as const
    ) {
      const part = await fetch(url("f.bin"), { headers: { range } });
      assertEquals(part.status, 206, range);
      assertEquals(
        part.headers.get("content-range"),
        `bytes ${start}-${end}/1000`,
      );
      assertEquals(
        new Uint8Array(await part.arrayBuffer()),
        bytes.slice(start, end + 1),
      );
    }
    const beyond = await fetch(url("f.bin"), {
      headers: { range: "bytes=1000-" },
    });
    assertEquals(beyond.status, 416);
    assertMatch(beyond.headers.get("content-type")!, /^text\/plain/);
    assertEquals(beyond.headers.get("content-range"), "bytes */1000");
    await beyond.body?.cancel();
    // A Range that does not parse: the real execd (measured on the binary)
    // answers 416 under the file's octet-stream Content-Type and
    // Content-Length already set; Go refuses its JSON error body
    // {"code":"UNKNOWN"} (longer than that length) and not one byte goes out,
    // so the body breaks off empty. That error has no message either, which
    // the spec's ErrorResponse would not allow.
    const syntax = await fetch(url("f.bin"), {
      headers: { range: "lines=1-2" },
    });
    assertEquals(syntax.status, 416);
    assertEquals(syntax.headers.get("content-length"), "1000");
    assertEquals(
      syntax.headers.get("content-type"),
      "application/octet-stream",
    );
    let received = "";
    await assertRejects(async () => {
      for await (const chunk of syntax.body!) {
        received += new TextDecoder().decode(chunk);
      }
    });
    assertEquals(received, "");
    if (execdSpec) {
      assert(
        !execdSpec.validate({
          method: "GET",
          path: "/files/download",
          status: 416,
        }, { code: "UNKNOWN" }).valid,
      );
    }
    // A folder: 200 with the largest int64 as its length, then a broken body.
    const folder = await fetch(
      `${started.execd}/files/download?path=${encodeURIComponent(dir)}`,
    );
    assertEquals(folder.status, 200);
    assertEquals(folder.headers.get("content-length"), "9223372036854775807");
    await assertRejects(() => folder.arrayBuffer());
    const empty = await fetch(url("empty"), { headers: { range: "bytes=0-" } });
    assertEquals(empty.status, 200);
    assertEquals((await empty.arrayBuffer()).byteLength, 0);
    const missing = await execd(
      started.execd,
      "GET",
      `/files/download?path=${encodeURIComponent(`${dir}/nope`)}`,
    );
    assertEquals(missing.status, 404);
    assertEquals((missing.body as Event).code, "FILE_NOT_FOUND");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files: info of several paths (any missing → 404 FILE_NOT_FOUND), list in lexical order with symlinks not followed, symlink or file root 400", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    await Deno.mkdir(`${dir}/b/inner`, { recursive: true });
    await Deno.writeTextFile(`${dir}/c.txt`, "c");
    await Deno.writeTextFile(`${dir}/a.txt`, "a");
    await Deno.writeTextFile(`${dir}/b/inner/deep.txt`, "d");
    await Deno.writeTextFile(`${dir}/b/z.txt`, "z");
    await Deno.symlink(`${dir}/b`, `${dir}/link`);
    const q = (path: string) => encodeURIComponent(path);
    const both = await execd(
      started.execd,
      "GET",
      `/files/info?path=${q(`${dir}/a.txt`)}&path=${q(`${dir}/b`)}`,
    );
    assertEquals(Object.keys(both.body as object).sort(), [
      `${dir}/a.txt`,
      `${dir}/b`,
    ]);
    const oneMissing = await execd(
      started.execd,
      "GET",
      `/files/info?path=${q(`${dir}/a.txt`)}&path=${q(`${dir}/none`)}`,
    );
    assertEquals(oneMissing.status, 404);
    assertEquals((oneMissing.body as Event).code, "FILE_NOT_FOUND");
    const listed = await execd(
      started.execd,
      "GET",
      `/directories/list?path=${q(dir)}&depth=3`,
    );
    const entries = listed.body as Event[];
    assertEquals(
      entries.map((entry) => [entry.path.slice(dir.length + 1), entry.type]),
      [
        ["a.txt", "file"],
        ["b", "directory"],
        ["b/inner", "directory"],
        ["b/inner/deep.txt", "file"],
        ["b/z.txt", "file"],
        ["c.txt", "file"],
        ["link", "symlink"],
      ],
    );
    const shallow = await execd(
      started.execd,
      "GET",
      `/directories/list?path=${q(dir)}`,
    );
    assertEquals((shallow.body as unknown[]).length, 4);
    for (const root of [`${dir}/link`, `${dir}/a.txt`]) {
      const refused = await execd(
        started.execd,
        "GET",
        `/directories/list?path=${q(root)}`,
      );
      assertEquals(refused.status, 400, root);
    }
    const absent = await execd(
      started.execd,
      "GET",
      `/directories/list?path=${q(`${dir}/none`)}`,
    );
    assertEquals(absent.status, 404);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files: POST /directories with modes, DELETE /files (missing 200, folder 500), search globs base names recursively", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const made = await execd(started.execd, "POST", "/directories", {
      body: JSON.stringify({ [`${dir}/p/q`]: { mode: 700 } }),
    });
    assertEquals(made.status, 200);
    assertEquals((await Deno.stat(`${dir}/p/q`)).mode! & 0o777, 0o700);
    await Deno.writeTextFile(`${dir}/p/q/x.md`, "x");
    await Deno.writeTextFile(`${dir}/p/y.md`, "y");
    await Deno.writeTextFile(`${dir}/p/y.txt`, "y");
    const q = (path: string) => encodeURIComponent(path);
    const found = await execd(
      started.execd,
      "GET",
      `/files/search?path=${q(dir)}&pattern=${q("*.md")}`,
    );
    assertEquals(
      (found.body as { path: string }[]).map((entry) => entry.path),
      [
        `${dir}/p/q/x.md`,
        `${dir}/p/y.md`,
      ],
    );
    const all = await execd(
      started.execd,
      "GET",
      `/files/search?path=${q(dir)}`,
    );
    assertEquals((all.body as unknown[]).length, 3);
    const missingRoot = await execd(
      started.execd,
      "GET",
      `/files/search?path=${q(`${dir}/none`)}`,
    );
    assertEquals(missingRoot.status, 404);
    const removedMissing = await execd(
      started.execd,
      "DELETE",
      `/files?path=${q(`${dir}/none`)}`,
    );
    assertEquals(removedMissing.status, 200);
    const removedFolder = await execd(
      started.execd,
      "DELETE",
      `/files?path=${q(`${dir}/p`)}`,
    );
    assertEquals(removedFolder.status, 500);
    assertEquals((removedFolder.body as Event).code, "RUNTIME_ERROR");
    const removed = await execd(
      started.execd,
      "DELETE",
      `/files?path=${q(`${dir}/p/y.txt`)}`,
    );
    assertEquals(removed.status, 200);
    await assertRejects(
      () => Deno.stat(`${dir}/p/y.txt`),
      Deno.errors.NotFound,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// Faults, each observed on the wire

Deno.test("faults: refused connections (listener closed, and a port with nothing), then service again", async () => {
  await using started = await start();
  await started.server.listener.refuseConnections();
  await assertRejects(() => fetch(`${started.execd}/ping`), TypeError);
  await started.server.listener.acceptConnections();
  const ok = await fetch(`${started.execd}/ping`);
  assertEquals(ok.status, 200);
  await ok.body?.cancel();
  await assertRejects(() => fetch(`${unusedUrl()}/ping`), TypeError);
});

Deno.test("faults: status 401, 404, 500 with JSON bodies; 503 twice then success", async () => {
  await using started = await start();
  const { faults } = started.server;
  for (const status of [401, 404, 500]) {
    faults.add({
      method: "GET",
      path: "/files/info",
      fault: { kind: "status", status },
      times: 1,
    });
    const answer = await fetch(`${started.execd}/files/info?path=/`);
    assertEquals(answer.status, status);
    assertEquals(typeof (await answer.json()).code, "string");
  }
  faults.add({
    method: "GET",
    path: "/ping",
    fault: { kind: "status", status: 503 },
    times: 2,
  });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${started.execd}/ping`);
    await response.body?.cancel();
    statuses.push(response.status);
  }
  assertEquals(statuses, [503, 503, 200]);
  assertEquals(faults.count("status"), 5);
});

Deno.test("faults: reset in the middle of a body and of an event stream", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    await Deno.writeFile(`${dir}/big`, new Uint8Array(1 << 20));
    started.server.faults.add({
      path: "/files/download",
      fault: { kind: "reset", afterBytes: 100_000 },
      times: 1,
    });
    const response = await fetch(
      `${started.execd}/files/download?path=${
        encodeURIComponent(`${dir}/big`)
      }`,
    );
    assertEquals(response.status, 200);
    assertEquals(response.headers.get("content-length"), String(1 << 20));
    let received = 0;
    await assertRejects(async () => {
      for await (const chunk of response.body!) received += chunk.length;
    });
    assertEquals(received, 100_000);
    started.server.faults.add({
      method: "POST",
      path: "/command",
      fault: { kind: "reset-stream", afterLines: 3 },
      times: 1,
    });
    const stream = await fetch(`${started.execd}/command`, {
      method: "POST",
      body: JSON.stringify({ command: "echo a; sleep 0.2; echo b; echo c" }),
    });
    const seen: string[] = [];
    await assertRejects(async () => {
      for await (const event of streamEvents(stream)) seen.push(event.type);
    });
    assertEquals(seen, ["init", "ping", "stdout"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("faults: slow first byte past a client's timeout; truncated body; invalid JSON; stream without completion; Range ignored", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const { faults } = started.server;
    faults.add({
      path: "/ping",
      fault: { kind: "slow", delayMs: 2000 },
      times: 1,
    });
    const begin = Date.now();
    await assertRejects(
      () =>
        fetch(`${started.execd}/ping`, { signal: AbortSignal.timeout(150) }),
      DOMException,
    );
    assert(Date.now() - begin < 1500);

    await Deno.writeFile(`${dir}/f`, new Uint8Array(4000).fill(65));
    const download = `${started.execd}/files/download?path=${
      encodeURIComponent(`${dir}/f`)
    }`;
    faults.add({
      path: "/files/download",
      fault: { kind: "truncate", keepBytes: 1000 },
      times: 1,
    });
    const short = await fetch(download);
    assertEquals(short.headers.get("content-length"), "4000");
    await assertRejects(() => short.arrayBuffer());

    faults.add({
      path: "/files/info",
      fault: { kind: "invalid-json" },
      times: 1,
    });
    const invalid = await fetch(
      `${started.execd}/files/info?path=${encodeURIComponent(dir)}`,
    );
    assertEquals(invalid.status, 200);
    await assertRejects(() => invalid.json(), SyntaxError);

    faults.add({ path: "/command", fault: { kind: "end-stream" }, times: 1 });
    const { events } = await run(started.execd, { command: "echo x; exit 3" });
    assertEquals(output(events), ["x"]);
    assert(
      !events.some((event) =>
        event.type === "error" || event.type === "execution_complete"
      ),
    );

    faults.add({
      path: "/files/download",
      fault: { kind: "ignore-range" },
      times: 1,
    });
    const ignored = await fetch(download, {
      headers: { range: "bytes=10-19" },
    });
    assertEquals(ignored.status, 200);
    assertEquals((await ignored.arrayBuffer()).byteLength, 4000);
    assertEquals(faults.hits.map((hit) => hit.kind), [
      "slow",
      "truncate",
      "invalid-json",
      "end-stream",
      "ignore-range",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("faults: a command that ignores SIGTERM is killed after the grace period; 200 only once the group is gone", async () => {
  await using started = await start({ killGraceMs: 400 });
  started.server.faults.add({
    method: "POST",
    path: "/command",
    fault: { kind: "ignore-sigterm" },
    times: 1,
  });
  const response = await fetch(`${started.execd}/command`, {
    method: "POST",
    body: JSON.stringify({ command: "sleep 30 & echo up; wait" }),
  });
  const reader = streamEvents(response);
  const events: Event[] = [];
  await readUntil(reader, events, "stdout");
  const id = events[0]!.text as string;
  const begin = Date.now();
  const interrupted = await fetch(`${started.execd}/command?id=${id}`, {
    method: "DELETE",
  });
  assertEquals(interrupted.status, 200);
  await interrupted.body?.cancel();
  assertGreaterOrEqual(Date.now() - begin, 350, "SIGTERM was ignored");
  assertEquals(started.server.commandAlive(id), false);
  for await (const event of reader) events.push(event);
  assertEquals(final(events).error.traceback, ["signal: killed"]);
});

Deno.test("faults: switched from the command line and over /__faults in a hand-run server", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--config=${PROJECT_CONFIG}`,
      new URL("./opensandbox.ts", import.meta.url).pathname,
      "--port",
      "0",
      "--api-key",
      "hand",
      "--fault",
      "GET /v1/sandboxes status:503 x1",
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let first = "";
    while (!first.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      first += value;
    }
    const url = first.split("\n")[0]!;
    assertMatch(url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const headers = { "OPEN-SANDBOX-API-KEY": "hand" };
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${url}/sandboxes`, { headers });
      await response.body?.cancel();
      statuses.push(response.status);
    }
    assertEquals(statuses, [503, 200]);
    const origin = new URL(url).origin;
    const added = await fetch(`${origin}/__faults`, {
      method: "POST",
      body: JSON.stringify({ spec: "GET /v1/sandboxes status:500 x1" }),
    });
    assertEquals(added.status, 200);
    await added.body?.cancel();
    const failed = await fetch(`${url}/sandboxes`, { headers });
    assertEquals(failed.status, 500);
    await failed.body?.cancel();
  } finally {
    await reader.cancel();
    child.kill("SIGTERM");
    await child.status;
  }
});

// ---------------------------------------------------------------------------
// The official TypeScript SDK against the server

Deno.test("sdk: the official OpenSandbox SDK creates, runs (foreground, failing, background, interrupted), writes, reads, searches, renews and kills", async () => {
  const { ConnectionConfig, Sandbox } = await import(
    "npm:@alibaba-group/opensandbox@0.1.11"
  );
  const dir = await Deno.makeTempDir();
  try {
    await using server = await startOpenSandboxServer({
      apiKey: KEY,
      streamLingerMs: 20,
      provisioning: "kubernetes",
      pendingMs: 200,
    });
    const connectionConfig = new ConnectionConfig({
      domain: server.origin.slice("http://".length),
      apiKey: KEY,
      protocol: "http",
    });
    const sandbox = await Sandbox.create({
      connectionConfig,
      image: "ubuntu",
      timeoutSeconds: 600,
      metadata: { purpose: "sdk-test" },
    });
    try {
      const execution = await sandbox.commands.run(
        `echo hello; echo err >&2; printf 'a\\r\\nb'`,
        { workingDirectory: dir },
      );
      assertEquals(execution.exitCode, 0);
      assertEquals(execution.logs.stdout.map((line) => line.text), [
        "hello",
        "a",
        "b",
      ]);
      assertEquals(execution.logs.stderr.map((line) => line.text), ["err"]);
      const failing = await sandbox.commands.run("exit 3");
      assertEquals(failing.exitCode, 3);
      assertEquals(failing.error?.value, "3");

      const background = await sandbox.commands.run(
        "echo one; sleep 0.2; echo two",
        { background: true },
      );
      const id = background.id!;
      let status = await sandbox.commands.getCommandStatus(id);
      const deadline = Date.now() + 5000;
      while (status.running && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await sandbox.commands.getCommandStatus(id);
      }
      assertEquals(status.exitCode, 0);
      const logs = await sandbox.commands.getBackgroundCommandLogs(id);
      assertEquals(logs.content, "one\ntwo\n");

      const sleeper = await sandbox.commands.run("sleep 30", {
        background: true,
      });
      assert(server.commandAlive(sleeper.id!));
      await sandbox.commands.interrupt(sleeper.id!);
      assertEquals(server.commandAlive(sleeper.id!), false);
      const stopped = await sandbox.commands.getCommandStatus(sleeper.id!);
      assertEquals([stopped.running, stopped.exitCode], [false, -1]);

      await sandbox.files.writeFiles([
        { path: `${dir}/x/hello.txt`, data: "Hello World", mode: 640 },
      ]);
      assertEquals(
        await Deno.readTextFile(`${dir}/x/hello.txt`),
        "Hello World",
      );
      assertEquals(
        (await Deno.stat(`${dir}/x/hello.txt`)).mode! & 0o777,
        0o640,
      );
      assertEquals(
        await sandbox.files.readFile(`${dir}/x/hello.txt`),
        "Hello World",
      );
      const info = await sandbox.files.getFileInfo([`${dir}/x/hello.txt`]);
      assertEquals(info[`${dir}/x/hello.txt`]?.mode, 640);
      const found = await sandbox.files.search({ path: dir, pattern: "*.txt" });
      assertEquals(found.map((entry) => entry.path), [`${dir}/x/hello.txt`]);
      assertEquals((await sandbox.getInfo()).status.state, "Running");
      await sandbox.renew(1800);
    } finally {
      await sandbox.kill();
      await sandbox.close();
    }
    assertEquals(server.sandboxes.size, 0);
    // What the SDK asked for while the sandbox was Pending.
    assertEquals(server.count("GET", "/v1/sandboxes/*/endpoints/18080"), 1);
    assertGreaterOrEqual(server.count("GET", "/ping"), 1);
    assertEquals(server.count("POST", "/v1/metrics/events"), 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("contract: the rest of the routes the SDK reaches (pause, resume, metadata, pagination, mv, permissions, replace, rmdir, metrics, empty info)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using started = await start();
    const { server, id, execd: base } = started;
    const second = server.createSandbox({
      image: { uri: "u" },
      entrypoint: ["x"],
      metadata: { team: "a" },
    });
    const page = await lifecycle(server, "GET", "/sandboxes?page=1&pageSize=1");
    const pagination = (page.body as Event).pagination;
    assertEquals([
      pagination.totalItems,
      pagination.totalPages,
      pagination.hasNextPage,
    ], [2, 2, true]);
    assertEquals(
      (await lifecycle(server, "POST", `/sandboxes/${id}/pause`)).status,
      202,
    );
    const paused = await lifecycle(server, "GET", `/sandboxes/${id}`);
    assertEquals((paused.body as Event).status.state, "Paused");
    assertEquals(
      (await lifecycle(server, "POST", `/sandboxes/${id}/resume`)).status,
      202,
    );
    const patched = await fetch(
      `${server.url}/sandboxes/${second.id}/metadata`,
      {
        method: "PATCH",
        headers: AUTH,
        body: JSON.stringify({ team: null, env: "prod" }),
      },
    );
    const sandbox = await checkedBody(lifecycleSpec, patched, {
      method: "PATCH",
      path: `/v1/sandboxes/${second.id}/metadata`,
    }) as Event;
    assertEquals(sandbox.metadata, { env: "prod" });
    const unknown = await lifecycle(
      server,
      "GET",
      "/sandboxes/none/endpoints/44772",
    );
    assertEquals(unknown.status, 404);

    await Deno.writeTextFile(`${dir}/a.txt`, "localhost and localhost");
    const q = encodeURIComponent;
    const moved = await execd(base, "POST", "/files/mv", {
      body: JSON.stringify([{ src: `${dir}/a.txt`, dest: `${dir}/sub/b.txt` }]),
    });
    assertEquals(moved.status, 200);
    const missing = await execd(base, "POST", "/files/mv", {
      body: JSON.stringify([{ src: `${dir}/none`, dest: `${dir}/c` }]),
    });
    assertEquals(missing.status, 404);
    const chmod = await execd(base, "POST", "/files/permissions", {
      body: JSON.stringify({ [`${dir}/sub/b.txt`]: { mode: 600 } }),
    });
    assertEquals(chmod.status, 200);
    assertEquals((await Deno.stat(`${dir}/sub/b.txt`)).mode! & 0o777, 0o600);
    const replaced = await execd(base, "POST", "/files/replace?verbose=true", {
      body: JSON.stringify({
        [`${dir}/sub/b.txt`]: { old: "localhost", new: "0.0.0.0" },
      }),
    });
    assertEquals(replaced.body, { [`${dir}/sub/b.txt`]: { replacedCount: 2 } });
    assertEquals(
      await Deno.readTextFile(`${dir}/sub/b.txt`),
      "0.0.0.0 and 0.0.0.0",
    );
    assertEquals((await Deno.stat(`${dir}/sub/b.txt`)).mode! & 0o777, 0o600);
    const empty = await execd(base, "GET", "/files/info");
    assertEquals(empty.body, {});
    const metrics = await execd(base, "GET", "/metrics");
    assertGreaterOrEqual((metrics.body as Event).cpu_count, 1);
    const rmdir = await execd(
      base,
      "DELETE",
      `/directories?path=${q(`${dir}/sub`)}&path=${q(`${dir}/none`)}`,
    );
    assertEquals(rmdir.status, 200);
    await assertRejects(() => Deno.stat(`${dir}/sub`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("started by hand, the test server prints its execd address with a readable <id> placeholder", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      `--config=${PROJECT_CONFIG}`,
      new URL("./opensandbox.ts", import.meta.url).pathname,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const reader = child.stderr.pipeThrough(new TextDecoderStream())
      .getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    reader.releaseLock();
    const line = text.split("\n", 1)[0]!;
    assertMatch(line, /execd at http:\/\/\S+\/<id>\//);
    assert(!line.includes("%3C"), line);
  } finally {
    child.kill("SIGTERM");
    await child.stderr.cancel().catch(() => {});
    await child.status;
  }
});
