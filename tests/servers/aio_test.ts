import {
  assert,
  assertEquals,
  assertGreater,
  assertMatch,
  assertStringIncludes,
} from "../helpers/assert.ts";
import { liveGroupMembers } from "../helpers/testing.ts";
import { waitFor } from "../helpers/remote.ts";
import { sharedData, sharedTest } from "../helpers/shared_data.ts";
import { type AioServer, loadAioContract, startAioServer } from "./aio.ts";

const AIO_SPEC = sharedData(
  "specs/aio-sandbox/openapi.json",
  "the official AIO OpenAPI description",
);

// deno-lint-ignore no-explicit-any
type Json = any;

async function post(
  server: AioServer,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function withServer(
  fn: (server: AioServer, dir: string) => Promise<void>,
  options: { token?: string; range?: boolean } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "aio_server_test_" });
  const server = startAioServer({ home: dir, ...options });
  try {
    await fn(server, dir);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("aio server: exec keeps stdout and stderr apart with the exit code", () =>
  withServer(async (server, dir) => {
    const { status, json } = await post(server, "/v1/bash/exec", {
      command: 'printf out; printf err >&2; echo "$FOO:$(pwd)"; exit 7',
      env: { FOO: "bar" },
      exec_dir: dir,
    });
    assertEquals(status, 200);
    assertEquals(json.success, true);
    assertEquals(json.hint, null);
    assertEquals(json.data.status, "completed");
    assertEquals(json.data.exit_code, 7);
    assertEquals(json.data.stdout, `outbar:${dir}\n`);
    assertEquals(json.data.stderr, "err");
    assertEquals(
      json.data.offset,
      new TextEncoder().encode(json.data.stdout).length,
    );
  }));

Deno.test("aio server: exec_dir becomes the session default, cd and export do not persist", () =>
  withServer(async (server, dir) => {
    await Deno.mkdir(`${dir}/sub`);
    const first = await post(server, "/v1/bash/exec", {
      command: "export X=1; cd /; pwd",
      exec_dir: `${dir}/sub`,
    });
    const session = first.json.data.session_id;
    assertEquals(first.json.data.stdout, "/\n");
    const second = await post(server, "/v1/bash/exec", {
      command: 'pwd; echo "x=$X"',
      session_id: session,
    });
    assertEquals(second.json.data.stdout, `${dir}/sub\nx=\n`);
    assertEquals(second.json.data.session_id, session);
  }));

Deno.test("aio server: max_output_length keeps head and tail in characters", () =>
  withServer(async (server) => {
    const { json } = await post(server, "/v1/bash/exec", {
      command: "printf 'é%.0s' $(seq 1 100); printf END",
      max_output_length: 10,
    });
    const stdout: string = json.data.stdout;
    assert(stdout.startsWith("ééééé"), stdout);
    assert(stdout.endsWith("éEND"), stdout);
    assertStringIncludes(stdout, "93 characters truncated");
    // Offsets count bytes of the whole output: 100 two-byte chars + 3.
    assertEquals(json.data.offset, 203);
  }));

Deno.test("aio server: a soft timeout answers running and /output long-polls to the end", () =>
  withServer(async (server) => {
    const started = await post(server, "/v1/bash/exec", {
      command: "printf 'ü'; sleep 0.6; printf 'ß-done'; printf e >&2",
      timeout: 0.2,
    });
    const data = started.json.data;
    assertEquals(data.status, "running");
    assertEquals(data.exit_code, null);
    assertEquals(data.stdout, "ü");
    assertEquals(data.offset, 2);
    let offset = data.offset;
    let stderrOffset = data.stderr_offset;
    let stdout = data.stdout;
    let stderr = data.stderr;
    let status = "running";
    let polls = 0;
    while (status === "running") {
      const { json } = await post(server, "/v1/bash/output", {
        session_id: data.session_id,
        command_id: data.command_id,
        offset,
        stderr_offset: stderrOffset,
        wait: true,
        wait_timeout: 5,
      });
      assert(json.success);
      stdout += json.data.stdout;
      stderr += json.data.stderr;
      offset = json.data.offset;
      stderrOffset = json.data.stderr_offset;
      status = json.data.command.status;
      polls++;
    }
    assertEquals(status, "completed");
    assertEquals(stdout, "üß-done");
    assertEquals(stderr, "e");
    assertEquals(offset, new TextEncoder().encode("üß-done").length);
    assert(polls <= 4, `long poll returned ${polls} times`);
  }));

Deno.test("aio server: async_mode answers running with null output", () =>
  withServer(async (server) => {
    const { json } = await post(server, "/v1/bash/exec", {
      command: "sleep 0.2; echo hi",
      async_mode: true,
    });
    assertEquals(json.data.status, "running");
    assertEquals(json.data.stdout, null);
    assertEquals(json.data.stderr, null);
    const out = await post(server, "/v1/bash/output", {
      session_id: json.data.session_id,
      wait: true,
      wait_timeout: 5,
    });
    assertEquals(out.json.data.stdout, "hi\n");
  }));

Deno.test("aio server: hard_timeout kills the whole process group (timed_out)", () =>
  withServer(async (server) => {
    const { json } = await post(server, "/v1/bash/exec", {
      command: "sleep 30 & sleep 30; echo never",
      hard_timeout: 0.5,
      async_mode: true,
    });
    const pids = server.runningPids();
    assertEquals(pids.length, 1);
    // Both sleeps run in the group (give bash a moment to start them).
    for (let i = 0; i < 100 && liveGroupMembers(pids[0]!).length < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assertGreater(liveGroupMembers(pids[0]!).length, 1);
    const out = await post(server, "/v1/bash/output", {
      session_id: json.data.session_id,
      wait: true,
      wait_timeout: 10,
    });
    assertEquals(out.json.data.command.status, "timed_out");
    assertEquals(out.json.data.stdout, "");
    // The leader's end is reported first; a member may take a moment to go
    // on a loaded machine.
    await waitFor(() => liveGroupMembers(pids[0]!).length === 0, 2_000);
    assertEquals(liveGroupMembers(pids[0]!), []);
  }));

Deno.test("aio server: kill stops the session's current process", () =>
  withServer(async (server) => {
    const { json } = await post(server, "/v1/bash/exec", {
      command: "trap '' TERM; sleep 30",
      timeout: 0.1,
    });
    assertEquals(json.data.status, "running");
    const [pid] = server.runningPids();
    const killed = await post(server, "/v1/bash/kill", {
      session_id: json.data.session_id,
      signal: "SIGKILL",
    });
    assertEquals(killed.json.success, true);
    assertEquals(killed.json.data.status, "killed");
    await waitFor(() => liveGroupMembers(pid!).length === 0, 2_000);
    assertEquals(liveGroupMembers(pid!), []);
    const again = await post(server, "/v1/bash/kill", {
      session_id: json.data.session_id,
    });
    assertEquals(again.status, 200);
    assertEquals(again.json.success, false);
    const unknown = await post(server, "/v1/bash/kill", { session_id: "nope" });
    assertEquals(unknown.json.success, false);
    assertStringIncludes(unknown.json.message, "nope");
  }));

Deno.test("aio server: malformed bodies get 422 with FastAPI details", () =>
  withServer(async (server) => {
    const missing = await post(server, "/v1/bash/exec", { timeout: 1 });
    assertEquals(missing.status, 422);
    assertEquals(missing.json.detail[0].loc, ["body", "command"]);
    assertEquals(missing.json.detail[0].type, "missing");
    const wrong = await post(server, "/v1/bash/exec", { command: 3 });
    assertEquals(wrong.status, 422);
    assertEquals(wrong.json.detail[0].type, "string_type");
    const notJson = await post(server, "/v1/file/list", "{nope");
    assertEquals(notJson.status, 422);
    assertEquals(notJson.json.detail[0].type, "json_invalid");
    const badSignal = await post(server, "/v1/bash/kill", {
      session_id: "s",
      signal: "SIGSTOP",
    });
    assertEquals(badSignal.status, 422);
    const download = await fetch(`${server.baseUrl}/v1/file/download`);
    assertEquals(download.status, 422);
    assertEquals((await download.json()).detail[0].loc, ["query", "path"]);
    const form = new FormData();
    form.set("path", "/tmp/x");
    const upload = await fetch(`${server.baseUrl}/v1/file/upload`, {
      method: "POST",
      body: form,
    });
    assertEquals(upload.status, 422);
    await upload.body?.cancel();
  }));

Deno.test("aio server: failed file operations are HTTP 200 with success false", () =>
  withServer(async (server, dir) => {
    const read = await post(server, "/v1/file/read", { file: `${dir}/none` });
    assertEquals(read.status, 200);
    assertEquals(read.json.success, false);
    assertEquals(read.json.data.error_type, "not_found");
    assertEquals(read.json.data.operation, "read");
    assertEquals(read.json.data.path, `${dir}/none`);
    const list = await post(server, "/v1/file/list", { path: `${dir}/none` });
    assertEquals(list.json.success, false);
    assertEquals(list.json.data.error_type, "not_found");
    await Deno.writeTextFile(`${dir}/f`, "x");
    const listFile = await post(server, "/v1/file/list", { path: `${dir}/f` });
    assertEquals(listFile.json.data.error_type, "invalid_target");
    const relative = await post(server, "/v1/file/write", {
      file: "rel.txt",
      content: "x",
    });
    assertEquals(relative.json.data.error_type, "invalid_path");
    const writeUnder = await post(server, "/v1/file/write", {
      file: `${dir}/f/child`,
      content: "x",
    });
    assertEquals(writeUnder.json.success, false);
    const form = new FormData();
    form.set("file", new File(["x"], "x.txt"));
    form.set("path", `${dir}/f/child.txt`);
    const upload = await fetch(`${server.baseUrl}/v1/file/upload`, {
      method: "POST",
      body: form,
    });
    assertEquals(upload.status, 200);
    assertEquals((await upload.json()).success, false);
    const download = await fetch(
      `${server.baseUrl}/v1/file/download?path=${
        encodeURIComponent(`${dir}/none`)
      }`,
    );
    assertEquals(download.status, 404);
    assertEquals((await download.json()).success, false);
  }));

Deno.test("aio server: upload, download, read, write and list real files", () =>
  withServer(async (server, dir) => {
    const bytes = new Uint8Array(300_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 256;
    const form = new FormData();
    form.set("file", new File([bytes], "blob.bin"));
    form.set("path", `${dir}/deep/er/blob.bin`);
    const up = await fetch(`${server.baseUrl}/v1/file/upload`, {
      method: "POST",
      body: form,
    });
    const upJson = await up.json();
    assertEquals(upJson.data, {
      file_path: `${dir}/deep/er/blob.bin`,
      file_size: bytes.length,
      success: true,
    });
    assertEquals(await Deno.readFile(`${dir}/deep/er/blob.bin`), bytes);
    const down = await fetch(
      `${server.baseUrl}/v1/file/download?path=${
        encodeURIComponent(`${dir}/deep/er/blob.bin`)
      }`,
    );
    assertEquals(down.status, 200);
    assertEquals(down.headers.get("content-type"), "application/octet-stream");
    assertEquals(new Uint8Array(await down.arrayBuffer()), bytes);

    const write = await post(server, "/v1/file/write", {
      file: `${dir}/t/a.txt`,
      content: btoa("line1\nline2\n"),
      encoding: "base64",
    });
    assertEquals(write.json.data, {
      file: `${dir}/t/a.txt`,
      bytes_written: 12,
    });
    const read = await post(server, "/v1/file/read", {
      file: `${dir}/t/a.txt`,
      start_line: 1,
    });
    assertEquals(read.json.data, {
      content: "line2\n",
      file: `${dir}/t/a.txt`,
    });

    await Deno.symlink(`${dir}/deep`, `${dir}/link`);
    const list = await post(server, "/v1/file/list", {
      path: dir,
      recursive: true,
      include_permissions: true,
    });
    const paths = list.json.data.files.map((f: Json) => f.path);
    assertEquals(paths, [
      `${dir}/deep`,
      `${dir}/deep/er`,
      `${dir}/deep/er/blob.bin`,
      `${dir}/link`,
      `${dir}/t`,
      `${dir}/t/a.txt`,
    ]);
    const link = list.json.data.files[3];
    assertEquals(link.is_directory, false);
    assertMatch(link.permissions, /^l/);
    assertEquals(list.json.data.directory_count, 3);
    const shallow = await post(server, "/v1/file/list", { path: dir });
    assertEquals(shallow.json.data.total_count, 3);
  }));

Deno.test("aio server: Range is ignored by default and honoured with range: true", async () => {
  for (const range of [false, true]) {
    await withServer(async (server, dir) => {
      await Deno.writeTextFile(`${dir}/r.txt`, "0123456789");
      const url = `${server.baseUrl}/v1/file/download?path=${
        encodeURIComponent(`${dir}/r.txt`)
      }`;
      const response = await fetch(url, { headers: { range: "bytes=4-" } });
      if (range) {
        assertEquals(response.status, 206);
        assertEquals(response.headers.get("content-range"), "bytes 4-9/10");
        assertEquals(await response.text(), "456789");
        const bad = await fetch(url, { headers: { range: "bytes=20-" } });
        assertEquals(bad.status, 416);
        await bad.body?.cancel();
      } else {
        assertEquals(response.status, 200);
        assertEquals(await response.text(), "0123456789");
      }
    }, { range });
  }
});

Deno.test("aio server: the bearer token is checked when configured", () =>
  withServer(async (server) => {
    const none = await post(server, "/v1/bash/exec", { command: "true" });
    assertEquals(none.status, 401);
    assertEquals(none.json.success, false);
    const wrong = await post(server, "/v1/bash/exec", { command: "true" }, {
      authorization: "Bearer nope",
    });
    assertEquals(wrong.status, 401);
    const right = await post(server, "/v1/bash/exec", { command: "true" }, {
      authorization: "Bearer s3cret-token",
    });
    assertEquals(right.json.data.exit_code, 0);
    assertEquals(server.requestCount("/v1/bash/exec"), 3);
  }, { token: "s3cret-token" }));

Deno.test("aio server: started by hand it prints its base URL first and serves", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./aio.ts", import.meta.url).pathname,
      "--port",
      "0",
      "--token",
      "tok",
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
  const baseUrl = text.split("\n")[0]!;
  assertMatch(baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  const response = await fetch(`${baseUrl}/v1/bash/exec`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: "Bearer tok",
    },
    body: JSON.stringify({ command: "echo served" }),
  });
  assertEquals((await response.json()).data.stdout, "served\n");
  child.kill("SIGTERM");
  const status = await child.status;
  reader.releaseLock();
  await child.stdout.cancel().catch(() => {});
  assertEquals(status.success, true);
});

Deno.test("aio server: injected faults answer in the envelope and are counted", () =>
  withServer(async (server) => {
    server.faults.add({
      method: "POST",
      path: "/v1/bash/exec",
      fault: { kind: "status", status: 503 },
      times: 1,
    });
    const faulted = await post(server, "/v1/bash/exec", { command: "true" });
    assertEquals(faulted.status, 503);
    assertEquals(faulted.json.success, false);
    assertStringIncludes(faulted.json.message, "503");
    const real = await post(server, "/v1/bash/exec", { command: "true" });
    assertEquals(real.json.data.exit_code, 0);
    assertEquals(server.requestCount("/v1/bash/exec"), 2);
    assertEquals(server.requests.length, 1);

    server.faults.add({
      path: "/v1/bash/exec",
      fault: { kind: "ignore-sigterm" },
      times: 1,
    });
    const stubborn = await post(server, "/v1/bash/exec", {
      command: "sleep 30",
      timeout: 0.1,
    });
    const [pid] = server.runningPids();
    const started = Date.now();
    const killed = await post(server, "/v1/bash/kill", {
      session_id: stubborn.json.data.session_id,
    });
    assertEquals(killed.json.data.status, "killed");
    assertGreater(Date.now() - started, 1500, "SIGTERM was not ignored");
    assertEquals(liveGroupMembers(pid!), []);

    await server.refuseConnections();
    const refused = await fetch(`${server.baseUrl}/v1/file/list`).then(
      () => null,
      (error) => error,
    );
    assert(refused instanceof TypeError);
    await server.acceptConnections();
    const back = await post(server, "/v1/file/list", { path: server.home });
    assertEquals(back.json.success, true);
  }));

Deno.test({
  ...sharedTest(
    AIO_SPEC,
    "aio server: every answer of every endpoint matches openapi.json",
  ),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "aio_contract_" });
    const server = startAioServer({
      home: dir,
      contract: (await loadAioContract())!,
    });
    try {
      const exec = await post(server, "/v1/bash/exec", {
        command: "echo a; echo b >&2; exit 2",
      });
      const session = exec.json.data.session_id;
      await post(server, "/v1/bash/exec", {
        command: "sleep 0.3",
        timeout: 0.05,
        session_id: "soft",
      });
      await post(server, "/v1/bash/output", {
        session_id: "soft",
        wait: true,
        wait_timeout: 2,
      });
      await post(server, "/v1/bash/exec", {
        command: "sleep 5",
        async_mode: true,
        session_id: "k",
      });
      // A background command: async exec, then output by command id from
      // the offsets the server gave, long-polled.
      const started = await post(server, "/v1/bash/exec", {
        command: "echo a; echo b >&2; sleep 0.2; echo c",
        async_mode: true,
        session_id: "bg",
      });
      const commandId = started.json.data.command_id;
      let offsets = { offset: 0, stderr_offset: 0 };
      let out = "";
      for (let i = 0; i < 20; i++) {
        const read = await post(server, "/v1/bash/output", {
          session_id: "bg",
          command_id: commandId,
          ...offsets,
          wait: true,
          wait_timeout: 1,
        });
        out += read.json.data.stdout;
        offsets = {
          offset: read.json.data.offset,
          stderr_offset: read.json.data.stderr_offset,
        };
        if (read.json.data.command.status !== "running") break;
      }
      assertEquals([out, offsets], ["a\nc\n", { offset: 4, stderr_offset: 2 }]);
      await post(server, "/v1/bash/kill", {
        session_id: "k",
        signal: "SIGKILL",
      });
      await post(server, "/v1/bash/kill", { session_id: "k" });
      await post(server, "/v1/bash/kill", { session_id: "none" });
      await post(server, "/v1/bash/output", { session_id: "none" });
      await post(server, "/v1/bash/output", {
        session_id: session,
        command_id: "nope",
      });
      await post(server, "/v1/bash/exec", {
        command: "sleep 0.2",
        hard_timeout: 0.05,
        session_id: "h",
      });
      await post(server, "/v1/bash/exec", {
        command: "true",
        exec_dir: "/nonexistent",
      });
      await post(server, "/v1/bash/sessions/create", {
        session_id: "made",
        exec_dir: dir,
      });
      await post(server, "/v1/bash/sessions/create", { session_id: "made" });
      await post(server, "/v1/bash/sessions/create", {});
      await (await fetch(`${server.baseUrl}/v1/bash/sessions`)).body?.cancel();
      await post(server, "/v1/bash/sessions/k/close", {});
      await post(server, "/v1/bash/sessions/none/close", {});
      await post(server, "/v1/file/write", {
        file: `${dir}/w.txt`,
        content: "w",
      });
      await post(server, "/v1/file/write", {
        file: `${dir}/w.txt/x`,
        content: "w",
      });
      await post(server, "/v1/file/read", { file: `${dir}/w.txt` });
      await post(server, "/v1/file/read", { file: `${dir}/none` });
      await post(server, "/v1/file/list", {
        path: dir,
        recursive: true,
        include_permissions: true,
      });
      await post(server, "/v1/file/list", { path: `${dir}/none` });
      for (const target of [`${dir}/up.bin`, `${dir}/w.txt/up.bin`]) {
        const form = new FormData();
        form.set("file", new File([new Uint8Array([0, 1, 2])], "up.bin"));
        form.set("path", target);
        await (await fetch(`${server.baseUrl}/v1/file/upload`, {
          method: "POST",
          body: form,
        })).body?.cancel();
      }
      for (const path of [`${dir}/up.bin`, `${dir}/none`, dir]) {
        await (await fetch(
          `${server.baseUrl}/v1/file/download?path=${encodeURIComponent(path)}`,
        )).body?.cancel();
      }
      for (
        const path of [
          "/v1/bash/exec",
          "/v1/bash/output",
          "/v1/bash/kill",
          "/v1/file/list",
          "/v1/file/read",
          "/v1/file/write",
        ]
      ) {
        const invalid = await post(server, path, { unexpected: true });
        assertEquals(invalid.status, 422, path);
      }
      await (await fetch(`${server.baseUrl}/v1/file/download`)).body?.cancel();
      assertGreater(server.requests.length, 30);
      assertEquals(server.contractViolations, []);
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...sharedTest(
    AIO_SPEC,
    "aio server: the contract check does catch an answer outside the spec",
  ),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "aio_contract_" });
    const server = startAioServer({
      home: dir,
      contract: (await loadAioContract())!,
    });
    try {
      const response = await fetch(`${server.baseUrl}/v1/nowhere`);
      assertEquals(response.status, 404);
      await response.body?.cancel();
      assertEquals(server.contractViolations.length, 1);
      assertStringIncludes(server.contractViolations[0]!, "/v1/nowhere 404");
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
