/**
 * The AIO test server's `/v1/shell/*` calls beside `/v1/bash/*`: every
 * answer checked against the spec (`aio-sandbox/openapi.json`), and the
 * behaviour the spec describes (a session keeps its folder, one output
 * stream with its console record, the shell status names, soft, no-change
 * and hard timeouts, writing to a running command, kill, the sessions).
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertGreater,
  assertStringIncludes,
} from "../helpers/assert.ts";
import { type AioServer, loadAioContract, startAioServer } from "./aio.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function call(
  server: AioServer,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

async function withServer(
  fn: (server: AioServer, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "aio_shell_test_" }),
  );
  const server = startAioServer({
    home: dir,
    contract: await loadAioContract(),
  });
  try {
    await fn(server, dir);
    assertEquals(server.contractViolations, []);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("aio shell: exec runs in a session that keeps its folder; one output stream, console records, shell status names", () =>
  withServer(async (server, dir) => {
    await Deno.mkdir(`${dir}/sub`);
    const first = await call(server, "POST", "/v1/shell/exec", {
      command: "cd sub && echo out && echo err >&2; exit 3",
      exec_dir: dir,
    });
    assertEquals(first.status, 200);
    assertEquals(first.json.success, true);
    const data = first.json.data;
    assertEquals(data.status, "completed");
    assertEquals(data.exit_code, 3);
    assertEquals(data.output, "out\nerr\n");
    assertEquals(data.console.length, 1);
    assertEquals(data.console[0].command, data.command);
    assertEquals(data.console[0].output, "out\nerr\n");
    const id = data.session_id as string;
    // `cd` persists in the session (not so in /v1/bash/*).
    const second = await call(server, "POST", "/v1/shell/exec", {
      id,
      command: "pwd",
    });
    assertEquals(second.json.data.output, `${dir}/sub\n`);
    assertEquals(second.json.data.console.length, 2);
    // A session that does not exist is made with the given id.
    const named = await call(server, "POST", "/v1/shell/exec", {
      id: "mine",
      command: "true",
    });
    assertEquals(named.json.data.session_id, "mine");
    // A missing folder in strict mode is refused (HTTP 200, success false).
    const strict = await call(server, "POST", "/v1/shell/exec", {
      command: "true",
      exec_dir: `${dir}/nowhere`,
      strict: true,
    });
    assertEquals([strict.status, strict.json.success], [200, false]);
    // A bad body is FastAPI's 422.
    const invalid = await call(server, "POST", "/v1/shell/exec", {
      exec_dir: dir,
    });
    assertEquals(invalid.status, 422);
  }));

Deno.test("aio shell: soft timeout leaves it running; view, write to its stdin, wait; no_change_timeout; hard_timeout; kill terminates", () =>
  withServer(async (server) => {
    const soft = await call(server, "POST", "/v1/shell/exec", {
      command: "echo ready; read line; echo got:$line",
      timeout: 0.3,
    });
    assertEquals(soft.json.data.status, "running");
    assertEquals(soft.json.data.output, null);
    const id = soft.json.data.session_id as string;
    const view = await call(server, "POST", "/v1/shell/view", { id });
    assertEquals(view.json.data.status, "running");
    assertStringIncludes(view.json.data.output, "ready");
    const written = await call(server, "POST", "/v1/shell/write", {
      id,
      input: "hello",
      press_enter: true,
    });
    assertEquals(written.json.success, true);
    const waited = await call(server, "POST", "/v1/shell/wait", {
      id,
      seconds: 5,
    });
    assertEquals(waited.json.data.status, "completed");
    const after = await call(server, "POST", "/v1/shell/view", { id });
    assertEquals(after.json.data.output, "ready\ngot:hello\n");
    assertEquals(after.json.data.exit_code, 0);

    const quiet = await call(server, "POST", "/v1/shell/exec", {
      command: "echo start; sleep 30",
      no_change_timeout: 1,
    });
    assertEquals(quiet.json.data.status, "no_change_timeout");
    const quietId = quiet.json.data.session_id as string;
    const killed = await call(server, "POST", "/v1/shell/kill", {
      id: quietId,
    });
    assertEquals(killed.json.data.status, "terminated");
    const gone = await call(server, "POST", "/v1/shell/view", { id: quietId });
    assertEquals(gone.json.data.status, "terminated");

    const started = Date.now();
    const hard = await call(server, "POST", "/v1/shell/exec", {
      command: "sleep 30",
      hard_timeout: 0.5,
    });
    assertEquals(hard.json.data.status, "hard_timeout");
    assert(Date.now() - started < 5_000);
  }));

Deno.test("aio shell: sessions create, update, list, stats, delete one and all; terminal URL; unknown session", () =>
  withServer(async (server, dir) => {
    const created = await call(server, "POST", "/v1/shell/sessions/create", {
      id: "s1",
      exec_dir: dir,
      no_change_timeout: 30,
    });
    assertEquals(created.json.data, { session_id: "s1", working_dir: dir });
    const again = await call(server, "POST", "/v1/shell/sessions/create", {
      id: "s1",
    });
    assertEquals(again.json.success, false);
    const updated = await call(server, "POST", "/v1/shell/sessions/update", {
      id: "s1",
      no_change_timeout: 5,
    });
    assertEquals(updated.json.success, true);
    await call(server, "POST", "/v1/shell/sessions/create", { id: "s2" });
    const listed = await call(server, "GET", "/v1/shell/sessions");
    assertEquals(Object.keys(listed.json.data.sessions).sort(), ["s1", "s2"]);
    assertEquals(listed.json.data.sessions.s1.working_dir, dir);
    const stats = await call(server, "GET", "/v1/shell/sessions/stats");
    assertEquals(stats.json.data.total_sessions, 2);
    assertGreater(stats.json.data.max_sessions, 0);
    const url = await call(server, "GET", "/v1/shell/terminal-url");
    assertEquals(typeof url.json.data, "string");
    const deleted = await call(server, "DELETE", "/v1/shell/sessions/s1");
    assertEquals(deleted.json.success, true);
    const missing = await call(server, "POST", "/v1/shell/view", { id: "s1" });
    assertEquals(missing.json.success, false);
    const all = await call(server, "DELETE", "/v1/shell/sessions");
    assertEquals(all.json.success, true);
    const none = await call(server, "GET", "/v1/shell/sessions");
    assertEquals(none.json.data.sessions, {});
    // /v1/bash/* is still there beside it.
    const bash = await call(server, "POST", "/v1/bash/exec", {
      command: "echo bash",
    });
    assertEquals(bash.json.data.stdout, "bash\n");
  }));
