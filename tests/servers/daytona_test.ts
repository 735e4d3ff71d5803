// The Daytona test server: its answers against the official descriptions
// (api.json, OpenAPI 3; toolbox.json, Swagger 2.0) and its behaviour as the
// real service's (../shared/specs/README.md, Daytona).
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { sharedData, sharedTest } from "../helpers/shared_data.ts";
import { OpenApiContract } from "./_contract.ts";
import { type DaytonaServer, startDaytonaServer } from "./daytona.ts";

const SPECS = sharedData("specs/daytona/", "the official Daytona descriptions");
const api = SPECS.present
  ? await OpenApiContract.load(new URL("api.json", SPECS.url))
  : new OpenApiContract({ paths: {} }, "absent");
const toolboxSpec = SPECS.present
  ? await OpenApiContract.load(new URL("toolbox.json", SPECS.url))
  : new OpenApiContract({ paths: {} }, "absent");
const KEY = "dtn-test-key";
const AUTH = { authorization: `Bearer ${KEY}` };

interface Client {
  server: DaytonaServer;
  /** An API call, answer checked against api.json when `check`. */
  api(method: string, path: string, body?: unknown): Promise<Response>;
  /** A toolbox call of `id`. */
  box(
    id: string,
    method: string,
    path: string,
    body?: BodyInit | object,
  ): Promise<Response>;
}

function client(server: DaytonaServer): Client {
  return {
    server,
    api: (method, path, body) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { ...AUTH, "content-type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    box: (id, method, path, body) =>
      fetch(`${server.url.replace(/\/api$/, "/toolbox")}/${id}${path}`, {
        method,
        headers: {
          ...AUTH,
          ...(isPlain(body) ? { "content-type": "application/json" } : {}),
        },
        ...(body === undefined
          ? {}
          : { body: isPlain(body) ? JSON.stringify(body) : body as BodyInit }),
      }),
  };
}

function isPlain(body: unknown): body is object {
  return typeof body === "object" && body !== null &&
    Object.getPrototypeOf(body) === Object.prototype;
}

async function withServer(
  fn: (c: Client, id: string) => Promise<void>,
  create: Record<string, unknown> = { labels: { conversation: "c1" } },
): Promise<void> {
  await using server = startDaytonaServer({ apiKey: KEY });
  const c = client(server);
  const created = await c.api("POST", "/sandbox", create);
  assertEquals(created.status, 200);
  const sandbox = await created.json();
  await fn(c, sandbox.id);
}

async function checked(
  contract: OpenApiContract,
  response: Response,
  method: string,
  path: string,
): Promise<unknown> {
  return await contract.check(response, { method, path });
}

Deno.test(
  sharedTest(SPECS, "daytona: the API's answers match api.json"),
  async () => {
    await using server = startDaytonaServer({ apiKey: KEY });
    const c = client(server);
    const created = await checked(
      api,
      await c.api("POST", "/sandbox", { labels: { k: "v" }, env: { A: "1" } }),
      "POST",
      "/sandbox",
    ) as { id: string; toolboxProxyUrl: string; state: string };
    assertEquals(created.state, "started");
    assertEquals(
      created.toolboxProxyUrl,
      server.url.replace(/\/api$/, "/toolbox"),
    );
    const id = created.id;
    await checked(
      api,
      await c.api("GET", `/sandbox/${id}`),
      "GET",
      `/sandbox/${id}`,
    );
    const list = await checked(
      api,
      await c.api("GET", `/sandbox?labels=${encodeURIComponent('{"k":"v"}')}`),
      "GET",
      "/sandbox",
    ) as { items: unknown[] };
    assertEquals(list.items.length, 1);
    await checked(
      api,
      await c.api("POST", `/sandbox/${id}/autostop/0`),
      "POST",
      `/sandbox/${id}/autostop/0`,
    );
    await checked(
      api,
      await c.api("GET", `/sandbox/${id}/toolbox-proxy-url`),
      "GET",
      `/sandbox/${id}/toolbox-proxy-url`,
    );
    await checked(
      api,
      await c.api("POST", `/sandbox/${id}/stop`),
      "POST",
      `/sandbox/${id}/stop`,
    );
    await checked(
      api,
      await c.api("POST", `/sandbox/${id}/start`),
      "POST",
      `/sandbox/${id}/start`,
    );
    await checked(
      api,
      await c.api("DELETE", `/sandbox/${id}`),
      "DELETE",
      `/sandbox/${id}`,
    );
    const gone = await c.api("GET", `/sandbox/${id}`);
    assertEquals(gone.status, 404);
    const error = await gone.json();
    assertEquals(error.statusCode, 404);
    assertEquals(error.error, "Not Found");
  },
);

Deno.test(
  sharedTest(SPECS, "daytona: the toolbox's answers match toolbox.json"),
  async () => {
    await withServer(async (c, id) => {
      const run = await checked(
        toolboxSpec,
        await c.box(id, "POST", "/process/execute", { command: "echo hi" }),
        "POST",
        "/process/execute",
      );
      assertEquals(run, { exitCode: 0, result: "hi\n" });
      const form = new FormData();
      form.append("files[0].path", "/home/daytona/a/b.txt");
      form.append("files[0].file", new Blob(["abc"]), "b.txt");
      assertEquals(
        (await c.box(id, "POST", "/files/bulk-upload", form)).status,
        200,
      );
      const info = await checked(
        toolboxSpec,
        await c.box(id, "GET", "/files/info?path=/home/daytona/a/b.txt"),
        "GET",
        "/files/info",
      ) as Record<string, unknown>;
      assertEquals(info.size, 3);
      assertEquals(info.isDir, false);
      assertMatch(String(info.mode), /^-rw/);
      const list = await checked(
        toolboxSpec,
        await c.box(id, "GET", "/files?path=/home/daytona/a"),
        "GET",
        "/files",
      ) as { name: string }[];
      assertEquals(list.map((f) => f.name), ["b.txt"]);
      const missing = await checked(
        toolboxSpec,
        await c.box(id, "GET", "/files/info?path=/home/daytona/none"),
        "GET",
        "/files/info",
      ) as Record<string, unknown>;
      assertEquals(missing.code, "FILE_NOT_FOUND");
      assertEquals(
        (await c.box(id, "POST", "/process/session", { sessionId: "s1" }))
          .status,
        201,
      );
      const exec = await checked(
        toolboxSpec,
        await c.box(id, "POST", "/process/session/s1/exec", {
          command: "echo out; echo err >&2",
        }),
        "POST",
        "/process/session/s1/exec",
      ) as Record<string, unknown>;
      assertEquals([exec.stdout, exec.stderr, exec.exitCode], [
        "out\n",
        "err\n",
        0,
      ]);
      await checked(
        toolboxSpec,
        await c.box(id, "GET", "/process/session/s1"),
        "GET",
        "/process/session/s1",
      );
      await checked(
        toolboxSpec,
        await c.box(id, "GET", `/process/session/s1/command/${exec.cmdId}`),
        "GET",
        `/process/session/s1/command/${exec.cmdId}`,
      );
    });
  },
);

Deno.test("daytona: execute joins stdout and stderr, runs in cwd with envs, keeps creation env", async () => {
  await withServer(async (c, id) => {
    await c.box(id, "POST", "/files/folder?path=/home/daytona/w&mode=755");
    const run = await (await c.box(id, "POST", "/process/execute", {
      command: 'echo "$PWD $A $B"; echo oops >&2; exit 3',
      cwd: "/home/daytona/w",
      envs: { B: "two" },
    })).json();
    assertEquals(run, {
      exitCode: 3,
      result: "/home/daytona/w one two\noops\n",
    });
    const bad = await c.box(id, "POST", "/process/execute", {
      command: "true",
      envs: { "1X": "a" },
    });
    assertEquals(bad.status, 400);
    await bad.body?.cancel();
    const noDir = await (await c.box(id, "POST", "/process/execute", {
      command: "true",
      cwd: "/home/daytona/none",
    })).json();
    assertEquals(noDir.exitCode, -1);
    assertMatch(noDir.result, /chdir \/home\/daytona\/none: no such file/);
  }, { env: { A: "one" } });
});

Deno.test("daytona: a timeout kills the group and answers 408", async () => {
  await withServer(async (c, id) => {
    const started = Date.now();
    const answer = await c.box(id, "POST", "/process/execute", {
      command: "sleep 30 & sleep 30",
      timeout: 1,
    });
    assertEquals(answer.status, 408);
    assertEquals((await answer.json()).code, "REQUEST_TIMEOUT");
    assert(Date.now() - started < 10_000);
  });
});

Deno.test("daytona: file calls and commands see one file system per sandbox", async () => {
  await using server = startDaytonaServer({ apiKey: KEY });
  const c = client(server);
  const a = (await (await c.api("POST", "/sandbox", {})).json()).id;
  const b = (await (await c.api("POST", "/sandbox", {})).json()).id;
  await c.box(a, "POST", "/process/execute", {
    command: "echo from-a > /home/daytona/f; echo t > /tmp/t",
  });
  const down = await c.box(a, "GET", "/files/download?path=/home/daytona/f");
  assertEquals(await down.text(), "from-a\n");
  const inB = await c.box(b, "GET", "/files/download?path=/home/daytona/f");
  assertEquals(inB.status, 404);
  await inB.body?.cancel();
  const upload = await c.box(
    b,
    "POST",
    "/files/upload-v2?path=/home/daytona/g",
    "from-b",
  );
  assertEquals((await upload.json()).size, 6);
  const cat = await (await c.box(b, "POST", "/process/execute", {
    command: "cat g; ls /tmp",
  })).json();
  assertEquals(cat.result, "from-b");
  const outside = await c.box(b, "POST", "/files/upload-v2?path=/etc/x", "no");
  assertEquals(outside.status, 403);
  await outside.body?.cancel();
});

Deno.test("daytona: bulk download names each part by its exact path", async () => {
  await withServer(async (c, id) => {
    await c.box(
      id,
      "POST",
      "/files/upload-v2?path=/home/daytona/é x.txt",
      "one",
    );
    const answer = await c.box(id, "POST", "/files/bulk-download", {
      paths: ["/home/daytona/é x.txt", "/home/daytona/none", "/home/daytona"],
    });
    assertEquals(
      answer.headers.get("content-type"),
      "multipart/form-data; boundary=DAYTONA-FILE-BOUNDARY",
    );
    const text = await answer.text();
    assert(
      text.includes("filename*=utf-8''%2Fhome%2Fdaytona%2F%C3%A9%20x.txt"),
    );
    const form = await new Response(text, {
      headers: { "content-type": answer.headers.get("content-type")! },
    }).formData();
    const file = form.getAll("file")[0] as File;
    assertEquals(await file.text(), "one");
    const errors = form.getAll("error").map((e) =>
      JSON.parse(typeof e === "string" ? e : "{}").code ?? "file"
    );
    assertEquals(errors.length, 2);
  });
});

Deno.test("daytona: sessions keep cd and export, run in the background and die on delete", async () => {
  await withServer(async (c, id) => {
    await c.box(id, "POST", "/process/session", { sessionId: "s" });
    const twice = await c.box(id, "POST", "/process/session", {
      sessionId: "s",
    });
    assertEquals(twice.status, 409);
    await twice.body?.cancel();
    await (await c.box(id, "POST", "/process/session/s/exec", {
      command: "mkdir -p d && cd d && export X=42",
    })).json();
    const next = await (await c.box(id, "POST", "/process/session/s/exec", {
      command: 'echo "$PWD $X"',
    })).json();
    assertEquals(next.stdout, "/home/daytona/d 42\n");
    const started = await c.box(id, "POST", "/process/session/s/exec", {
      command: "echo begun; sleep 30",
      runAsync: true,
    });
    assertEquals(started.status, 202);
    const { cmdId } = await started.json();
    let logs = { stdout: "" };
    for (let i = 0; i < 50 && logs.stdout === ""; i++) {
      await new Promise((r) => setTimeout(r, 100));
      logs = await (await c.box(
        id,
        "GET",
        `/process/session/s/command/${cmdId}/logs`,
      )).json();
    }
    assertEquals(logs.stdout, "begun\n");
    const running =
      await (await c.box(id, "GET", `/process/session/s/command/${cmdId}`))
        .json();
    assertEquals(running.exitCode, undefined);
    const killed = await c.box(id, "DELETE", "/process/session/s");
    assertEquals(killed.status, 204);
    const after = await c.box(id, "GET", `/process/session/s/command/${cmdId}`);
    assertEquals(after.status, 404);
    await after.body?.cancel();
  });
});

Deno.test("daytona: delete without recursive refuses a folder; a wrong key is 401", async () => {
  await withServer(async (c, id) => {
    await c.box(id, "POST", "/files/folder?path=/home/daytona/x/y&mode=700");
    const refused = await c.box(id, "DELETE", "/files?path=/home/daytona/x");
    assertEquals(refused.status, 400);
    await refused.body?.cancel();
    const info =
      await (await c.box(id, "GET", "/files/info?path=/home/daytona/x/y"))
        .json();
    assertEquals(info.permissions, "0700");
    const removed = await c.box(
      id,
      "DELETE",
      "/files?path=/home/daytona/x&recursive=true",
    );
    assertEquals(removed.status, 204);
    const wrong = await fetch(`${c.server.url}/sandbox`, {
      headers: { authorization: "Bearer nope" },
    });
    assertEquals(wrong.status, 401);
    await wrong.body?.cancel();
  });
});

Deno.test("daytona: networkBlockAll gives commands no network", async () => {
  await using server = startDaytonaServer({ apiKey: KEY });
  const c = client(server);
  const port = new URL(server.url).port;
  const probe =
    `(echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo open || echo closed`;
  for (
    const [block, expected] of [[false, "open"], [true, "closed"]] as const
  ) {
    const { id } =
      await (await c.api("POST", "/sandbox", { networkBlockAll: block }))
        .json();
    const run =
      await (await c.box(id, "POST", "/process/execute", { command: probe }))
        .json();
    assertEquals(run.result, `${expected}\n`);
  }
});

Deno.test("daytona: starts by hand and prints its API URL first", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./daytona.ts", import.meta.url).pathname,
      "--port",
      "0",
      "--api-key",
      KEY,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) text += (await reader.read()).value ?? "";
  const url = text.split("\n")[0]!;
  assertMatch(url, /^http:\/\/127\.0\.0\.1:\d+\/api$/);
  const answer = await fetch(`${url}/sandbox`, { headers: AUTH });
  assertEquals((await answer.json()).items, []);
  child.kill();
  await reader.cancel();
  await child.status;
});
