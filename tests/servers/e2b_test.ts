// Contract tests of the E2B test server: control-plane answers against
// openapi.yml, envd's /files and /health against envd.yaml, and the Connect
// messages against the .proto messages in their JSON form (field names in
// lowerCamelCase, enums by name, int64 as strings).
import { assert, assertEquals } from "../helpers/assert.ts";
import { sharedData, sharedTest } from "../helpers/shared_data.ts";
import { OpenApiContract } from "./_contract.ts";
import { type E2BServer, startE2BServer } from "./e2b.ts";

const E2B_SPECS = sharedData(
  "specs/e2b/",
  "the official E2B OpenAPI and .proto descriptions",
);
const SPECS = E2B_SPECS.url;
// Only read when present: every test of this file checks against them.
const api = E2B_SPECS.present
  ? await OpenApiContract.load(new URL("openapi.yml", SPECS))
  : new OpenApiContract({ paths: {} }, "absent");
const envdSpec = E2B_SPECS.present
  ? await OpenApiContract.load(new URL("envd/envd.yaml", SPECS))
  : new OpenApiContract({ paths: {} }, "absent");
const KEY = "contract-key";

/**
 * Qualified message name (`ProcessEvent.StartEvent`) -> field (JSON name) ->
 * qualified type, from a .proto file.
 */
async function protoMessages(
  file: string,
): Promise<Map<string, Map<string, string>>> {
  const text = (await Deno.readTextFile(new URL(file, SPECS)))
    .replace(/\/\/.*$/gm, "");
  const raw = new Map<string, Map<string, string>>();
  const stack: string[] = [];
  for (const line of text.split("\n")) {
    const open = /^\s*(message|oneof|enum|service)\s+(\w+)\s*\{/.exec(line);
    if (open) {
      stack.push(open[1] === "message" ? open[2]! : `(${open[1]})`);
      if (open[1] === "message") raw.set(scope(stack), new Map());
      if (/\}\s*$/.test(line)) stack.pop(); // `message Empty {}`
      continue;
    }
    if (/^\s*\}/.test(line)) {
      stack.pop();
      continue;
    }
    const field =
      /^\s*(?:optional\s+|repeated\s+)?([\w.<>, ]+?)\s+(\w+)\s*=\s*\d+/.exec(
        line,
      );
    if (field && stack.length > 0 && !stack.at(-1)!.startsWith("(enum")) {
      const json = field[2]!.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
      raw.get(scope(stack))!.set(json, field[1]!);
    }
  }
  // Resolve each field's type from the innermost scope outwards.
  for (const [name, fields] of raw) {
    for (const [key, type] of fields) {
      const parts = name.split(".");
      for (let i = parts.length; i >= 0; i--) {
        const candidate = [...parts.slice(0, i), type].join(".");
        if (raw.has(candidate)) {
          fields.set(key, candidate);
          break;
        }
      }
    }
  }
  return raw;
}

function scope(stack: readonly string[]): string {
  return stack.filter((s) => !s.startsWith("(")).join(".");
}

const fsMessages = E2B_SPECS.present
  ? await protoMessages("envd/filesystem/filesystem.proto")
  : new Map<string, Map<string, string>>();
const processMessages = E2B_SPECS.present
  ? await protoMessages("envd/process/process.proto")
  : new Map<string, Map<string, string>>();

function checkMessage(
  messages: Map<string, Map<string, string>>,
  name: string,
  value: unknown,
): void {
  const fields = messages.get(name);
  assert(fields, `no message ${name}`);
  assert(typeof value === "object" && value !== null, `${name} is an object`);
  for (const [key, child] of Object.entries(value)) {
    const type = fields.get(key);
    assert(type !== undefined, `${name} has no field ${key}`);
    if (messages.has(type) && !Array.isArray(child)) {
      checkMessage(messages, type, child);
    } else if (messages.has(type)) {
      for (const item of child as unknown[]) checkMessage(messages, type, item);
    } else if (type === "int64" || type === "sint64") {
      assertEquals(typeof child, "string", `${name}.${key} (int64)`);
    } else if (/int32|uint32/.test(type)) {
      assert(
        Number.isInteger(child) && (type !== "uint32" || Number(child) >= 0),
        `${name}.${key} is a ${type}: ${child}`,
      );
    }
  }
}

async function call(
  server: E2BServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { "x-api-key": KEY },
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const checked = await api.check(response, {
    method,
    path: path.split("?")[0]!,
  });
  return { status: response.status, body: checked };
}

function envdHeaders(server: E2BServer, id: string): Record<string, string> {
  return {
    "e2b-sandbox-id": id,
    "e2b-sandbox-port": "49983",
    "x-access-token": server.sandboxes.get(id)!.token,
  };
}

async function unary(
  server: E2BServer,
  id: string,
  method: string,
  message: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/${method}`, {
    method: "POST",
    headers: {
      ...envdHeaders(server, id),
      "content-type": "application/json",
      "connect-protocol-version": "1",
    },
    body: JSON.stringify(message),
  });
  assertEquals(response.headers.get("content-type"), "application/json");
  return { status: response.status, body: await response.json() };
}

Deno.test({
  ...sharedTest(
    E2B_SPECS,
    "contract: the control plane's answers match openapi.yml (create, get, list, timeout, pause, connect, kill, errors)",
  ),
  async fn() {
    await using server = startE2BServer({ apiKey: KEY });
    const created = await call(server, "POST", "/sandboxes", {
      templateID: "base",
      timeout: 60,
      metadata: { k: "v" },
    });
    assertEquals(created.status, 201);
    const id = (created.body as { sandboxID: string }).sandboxID;
    // The SDK's newer path (not in the spec file) answers the same shape.
    const v2 = await fetch(`${server.url}/v2/sandboxes`, {
      method: "POST",
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base", metadata: { other: "1" } }),
    });
    assertEquals(v2.status, 201);
    const result = api.validate(
      { method: "POST", path: "/sandboxes", status: 201 },
      await v2.json(),
    );
    assert(result.valid, result.errors.join("; "));
    assertEquals((await call(server, "GET", `/sandboxes/${id}`)).status, 200);
    assertEquals(
      (await call(server, "GET", "/v2/sandboxes?metadata=k%3Dv", undefined))
        .body,
      [
        (({ envdAccessToken: _, ...rest }) => rest)(
          (await call(server, "GET", `/sandboxes/${id}`)).body as Record<
            string,
            unknown
          >,
        ),
      ],
    );
    assertEquals(
      (await call(server, "POST", `/sandboxes/${id}/timeout`, { timeout: 30 }))
        .status,
      204,
    );
    assertEquals(
      (await call(server, "POST", `/sandboxes/${id}/pause`)).status,
      204,
    );
    assertEquals(
      (await call(server, "POST", `/sandboxes/${id}/pause`)).status,
      409,
    );
    assertEquals(
      (await call(server, "POST", `/sandboxes/${id}/connect`, { timeout: 30 }))
        .status,
      201,
    );
    assertEquals(
      (await call(server, "POST", `/sandboxes/${id}/connect`, { timeout: 30 }))
        .status,
      200,
    );
    assertEquals(
      (await call(server, "DELETE", `/sandboxes/${id}`)).status,
      204,
    );
    assertEquals(
      (await call(server, "DELETE", `/sandboxes/${id}`)).status,
      404,
    );
    assertEquals((await call(server, "GET", `/sandboxes/${id}`)).status, 404);
    const denied = await call(server, "POST", "/sandboxes", {
      templateID: "base",
    }, { "x-api-key": "wrong" });
    assertEquals(denied.status, 401);
  },
});

Deno.test({
  ...sharedTest(
    E2B_SPECS,
    "contract: envd's /files and /health match envd.yaml; Filesystem answers match filesystem.proto",
  ),
  async fn() {
    await using server = startE2BServer({ apiKey: KEY });
    const dir = await Deno.makeTempDir();
    try {
      const id = ((await call(server, "POST", "/sandboxes", {
        templateID: "base",
      })).body as { sandboxID: string }).sandboxID;
      const headers = envdHeaders(server, id);
      const health = await fetch(`${server.url}/health`, { headers });
      await envdSpec.check(health, { method: "GET", path: "/health" });
      assertEquals(health.status, 204);
      const form = new FormData();
      form.append("file", new File(["hello"], "x.txt"));
      const path = `/files?path=${encodeURIComponent(`${dir}/a/x.txt`)}`;
      const uploaded = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers,
        body: form,
      });
      assertEquals(uploaded.status, 200);
      await envdSpec.check(uploaded, { method: "POST", path: "/files" });
      const got = await fetch(`${server.url}${path}`, { headers });
      assertEquals(await got.text(), "hello");
      const missing = await fetch(
        `${server.url}/files?path=${encodeURIComponent(`${dir}/none`)}`,
        { headers },
      );
      assertEquals(missing.status, 404);
      await envdSpec.check(missing, { method: "GET", path: "/files" });
      const wrong = await fetch(`${server.url}${path}`, {
        headers: { ...headers, "x-access-token": "wrong" },
      });
      assertEquals(wrong.status, 401);
      await envdSpec.check(wrong, { method: "GET", path: "/files" });

      const stat = await unary(server, id, "filesystem.Filesystem/Stat", {
        path: `${dir}/a/x.txt`,
      });
      checkMessage(fsMessages, "StatResponse", stat.body);
      const list = await unary(server, id, "filesystem.Filesystem/ListDir", {
        path: dir,
        depth: 2,
      });
      checkMessage(fsMessages, "ListDirResponse", list.body);
      assertEquals(
        (list.body.entries as { type: string }[]).map((e) => e.type),
        ["FILE_TYPE_DIRECTORY", "FILE_TYPE_FILE"],
      );
      const made = await unary(server, id, "filesystem.Filesystem/MakeDir", {
        path: `${dir}/b/c`,
      });
      checkMessage(fsMessages, "MakeDirResponse", made.body);
      const again = await unary(server, id, "filesystem.Filesystem/MakeDir", {
        path: `${dir}/b/c`,
      });
      assertEquals([again.status, again.body.code], [409, "already_exists"]);
      const gone = await unary(server, id, "filesystem.Filesystem/Stat", {
        path: `${dir}/none`,
      });
      assertEquals([gone.status, gone.body.code], [404, "not_found"]);
      const removed = await unary(server, id, "filesystem.Filesystem/Remove", {
        path: `${dir}/none`,
      });
      assertEquals([removed.status, removed.body], [200, {}]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...sharedTest(
    E2B_SPECS,
    "contract: process.Process/Start streams enveloped ProcessEvents (start, data, end) and an end-stream message",
  ),
  async fn() {
    await using server = startE2BServer({ apiKey: KEY });
    const id = ((await call(server, "POST", "/sandboxes", {
      templateID: "base",
    })).body as { sandboxID: string }).sandboxID;
    const json = new TextEncoder().encode(JSON.stringify({
      process: {
        cmd: "/bin/bash",
        args: ["-c", "echo out; echo err >&2; exit 3"],
      },
    }));
    const frame = new Uint8Array(5 + json.length);
    new DataView(frame.buffer).setUint32(1, json.length);
    frame.set(json, 5);
    const response = await fetch(`${server.url}/process.Process/Start`, {
      method: "POST",
      headers: {
        ...envdHeaders(server, id),
        "content-type": "application/connect+json",
        "connect-protocol-version": "1",
      },
      body: frame,
    });
    assertEquals(response.status, 200);
    assertEquals(
      response.headers.get("content-type"),
      "application/connect+json",
    );
    const bytes = new Uint8Array(await response.arrayBuffer());
    const messages: { flags: number; message: Record<string, unknown> }[] = [];
    for (let at = 0; at < bytes.length;) {
      const length = new DataView(bytes.buffer, at + 1).getUint32(0);
      messages.push({
        flags: bytes[at]!,
        message: JSON.parse(
          new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + length)),
        ),
      });
      at += 5 + length;
    }
    const last = messages.pop()!;
    assertEquals([last.flags, last.message], [2, {}]);
    for (const { flags, message } of messages) {
      assertEquals(flags, 0);
      checkMessage(processMessages, "StartResponse", message);
    }
    // deno-lint-ignore no-explicit-any
    const events = messages.map((m) => m.message.event as Record<string, any>);
    assert(events[0]!.start.pid > 0);
    const end = events.at(-1)!.end;
    assertEquals(end, { exitCode: 3, exited: true, status: "exit status 3" });
    const out = events.filter((e) => e.data?.stdout).map((e) =>
      atob(e.data.stdout)
    );
    assertEquals(out.join(""), "out\n");
  },
});

Deno.test({
  ...sharedTest(
    E2B_SPECS,
    "contract: process.Process/List returns each process with its command, arguments and variables as started",
  ),
  async fn() {
    await using server = startE2BServer({ apiKey: KEY });
    const id = ((await call(server, "POST", "/sandboxes", {
      templateID: "base",
    })).body as { sandboxID: string }).sandboxID;
    const json = new TextEncoder().encode(JSON.stringify({
      process: { cmd: "/bin/sleep", args: ["30"], envs: { MARK: "listed" } },
    }));
    const frame = new Uint8Array(5 + json.length);
    new DataView(frame.buffer).setUint32(1, json.length);
    frame.set(json, 5);
    const response = await fetch(`${server.url}/process.Process/Start`, {
      method: "POST",
      headers: {
        ...envdHeaders(server, id),
        "content-type": "application/connect+json",
        "connect-protocol-version": "1",
      },
      body: frame,
    });
    const reader = response.body!.getReader();
    let head = new Uint8Array(0);
    while (head.length < 5) {
      const { value } = await reader.read();
      head = new Uint8Array([...head, ...value!]);
    }
    const length = new DataView(head.buffer).getUint32(1);
    while (head.length < 5 + length) {
      const { value } = await reader.read();
      head = new Uint8Array([...head, ...value!]);
    }
    const pid = JSON.parse(
      new TextDecoder().decode(head.subarray(5, 5 + length)),
    ).event.start.pid;
    try {
      const listed = await unary(server, id, "process.Process/List", {});
      assertEquals(listed.status, 200);
      checkMessage(processMessages, "ListResponse", listed.body);
      const mine = (listed.body.processes as {
        pid: number;
        config: Record<string, unknown>;
      }[]).find((p) => p.pid === pid);
      assertEquals(
        [mine?.config.cmd, mine?.config.args, mine?.config.envs],
        ["/bin/sleep", ["30"], { MARK: "listed" }],
      );
    } finally {
      await unary(server, id, "process.Process/SendSignal", {
        process: { pid },
        signal: "SIGNAL_SIGKILL",
      });
      await reader.cancel().catch(() => {});
    }
  },
});
