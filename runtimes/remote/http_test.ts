import {
  assert,
  assertEquals,
  assertGreaterOrEqual,
  assertInstanceOf,
  assertLess,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { HttpClient } from "./http.ts";
import { RemoteHttpError } from "./errors.ts";
import { RuntimePermissionError } from "../../_internal/permissions.ts";
import {
  serve,
  serveRaw,
  writeAll,
} from "../../tests/helpers/remote_servers.ts";
import { delay } from "../../_internal/async.ts";

const SECRET_KEY = "sk-live-0123456789abcdef";
const SECRET_TOKEN = "eyJhbGciOi.bearer-token-value";
const SECRET_QUERY = "q-secret-7788";

function client(
  url: string,
  options: Partial<ConstructorParameters<typeof HttpClient>[0]> = {},
): HttpClient {
  return new HttpClient({ baseUrl: url, retryDelayMs: 1, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<RemoteHttpError> {
  try {
    await promise;
  } catch (error) {
    assertInstanceOf(error, RemoteHttpError);
    return error;
  }
  throw new Error("expected a RemoteHttpError");
}

function assertNoSecret(error: RemoteHttpError): void {
  const text = [
    error.message,
    error.url,
    error.serverMessage ?? "",
    error.code ?? "",
    String(error.stack),
    error.cause instanceof Error ? error.cause.message : String(error.cause),
  ].join("\n");
  for (const secret of [SECRET_KEY, SECRET_TOKEN, SECRET_QUERY]) {
    assert(!text.includes(secret), `secret leaked: ${text}`);
  }
}

Deno.test("HttpClient appends paths to a base URL that has one, and encodes queries", async () => {
  await using server = serve((request) => {
    const url = new URL(request.url);
    return Response.json({
      path: url.pathname,
      query: [...url.searchParams],
      agent: request.headers.get("user-agent"),
    });
  });
  const http = client(`${server.url}/proxy/44772/`);
  assertEquals(http.baseUrl, `${server.url}/proxy/44772`);
  const answer = await http.json<
    { path: string; query: string[][]; agent: string }
  >({
    method: "GET",
    path: "/files/info",
    query: { path: ["/a b", "/c&d"], depth: "2", none: undefined },
  });
  assertEquals(answer.path, "/proxy/44772/files/info");
  assertEquals(answer.query, [["path", "/a b"], ["path", "/c&d"], [
    "depth",
    "2",
  ]]);
  assertEquals(answer.agent, `skillrun/${denoJson.version}`);
});

Deno.test("HttpClient refuses bad base URLs without echoing credentials", () => {
  assertThrows(() => new HttpClient({ baseUrl: "ftp://h/x" }), TypeError);
  assertThrows(() => new HttpClient({ baseUrl: "not a url" }), TypeError);
  assertThrows(() => new HttpClient({ baseUrl: "http://h/?a=1" }), TypeError);
  const error = assertThrows(
    () => new HttpClient({ baseUrl: `http://user:${SECRET_KEY}@h/` }),
    TypeError,
  );
  assert(!error.message.includes(SECRET_KEY));
  assertThrows(
    () => new HttpClient({ baseUrl: "http://h", timeoutMs: 0 }),
    RangeError,
  );
  assertThrows(
    () => new HttpClient({ baseUrl: "http://h", retries: -1 }),
    RangeError,
  );
});

Deno.test("HttpClient retries a GET on 503 and 500 and counts the attempts", async () => {
  await using server = serve((_request, index) =>
    index < 2
      ? new Response("busy", { status: index === 0 ? 503 : 500 })
      : Response.json({ ok: true })
  );
  const answer = await client(server.url).json<{ ok: boolean }>({
    method: "GET",
    path: "/x",
  });
  assert(answer.ok);
  assertEquals(server.count(), 3);
});

Deno.test("HttpClient gives up after the retries with the last error", async () => {
  await using server = serve(() =>
    Response.json({ code: "UNAVAILABLE", message: "down" }, { status: 503 })
  );
  const error = await rejection(
    client(server.url, { retries: 2 }).request({
      method: "DELETE",
      path: "/x",
    }),
  );
  assertEquals(server.count(), 3);
  assertEquals(error.status, 503);
  assertEquals(error.code, "UNAVAILABLE");
  assertEquals(error.message, `DELETE ${server.url}/x: 503 UNAVAILABLE: down`);
});

Deno.test("HttpClient sends a POST exactly once on 503, 500 and 429", async () => {
  for (const status of [503, 500, 429]) {
    await using server = serve(() => new Response("no", { status }));
    const error = await rejection(
      client(server.url).request({
        method: "POST",
        path: "/command",
        json: { command: "echo hi" },
      }),
    );
    assertEquals(error.status, status);
    assertEquals(server.count(), 1);
  }
});

Deno.test("HttpClient sends a POST exactly once when the connection drops", async () => {
  await using server = serveRaw(async () => {}); // closes without answering
  const error = await rejection(
    client(server.url).request({ method: "POST", path: "/command", body: "x" }),
  );
  assertEquals(error.status, 0);
  assertEquals(server.count(), 1);
  assertStringIncludes(error.message, `POST ${server.url}/command: `);
});

Deno.test("HttpClient never retries a permission denial and names the flag", async () => {
  for (
    const denial of [
      new Deno.errors.NotCapable(
        'Requires net access to "127.0.0.1:9", run again with the --allow-net flag',
      ),
      new Deno.errors.PermissionDenied("Permission denied (os error 13)"),
    ]
  ) {
    let calls = 0;
    const started = performance.now();
    const error = await assertRejects(() =>
      new HttpClient({
        baseUrl: "http://127.0.0.1:9",
        fetch: () => {
          calls++;
          return Promise.reject(denial);
        },
      }).request({ method: "GET", path: "/x" })
    );
    assertEquals(calls, 1);
    assertLess(performance.now() - started, 200);
    assertInstanceOf(error, RuntimePermissionError);
    if (denial instanceof Deno.errors.NotCapable) {
      assertEquals(error.permission, "net");
      assertStringIncludes(error.message, "--allow-net=127.0.0.1:9");
    }
  }
});

Deno.test("HttpClient retries a GET after dropped connections, and a POST marked idempotent", async () => {
  await using server = serveRaw(async (_request, conn, index) => {
    if (index < 2) return; // drop
    await writeAll(
      conn,
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{"ok":true}',
    );
  });
  const answer = await client(server.url).json<{ ok: boolean }>({
    method: "GET",
    path: "/x",
  });
  assert(answer.ok);
  assertEquals(server.count(), 3);

  await using again = serve((_request, index) =>
    new Response(null, { status: index === 0 ? 502 : 204 })
  );
  const response = await client(again.url).request({
    method: "POST",
    path: "/renew",
    idempotent: true,
  });
  assertEquals(response.status, 204);
  assertEquals(again.count(), 2);
});

Deno.test("HttpClient never retries a streamed body, even for PUT", async () => {
  await using server = serve(async (request) => {
    await request.arrayBuffer();
    return new Response("busy", { status: 503 });
  });
  const error = await rejection(
    client(server.url).request({
      method: "PUT",
      path: "/upload",
      body: ReadableStream.from([new TextEncoder().encode("data")]),
    }),
  );
  assertEquals(error.status, 503);
  assertEquals(server.count(), 1);
});

Deno.test("HttpClient honours Retry-After within reason", async () => {
  await using server = serve((_request, index) =>
    index === 0
      ? new Response("slow down", {
        status: 429,
        headers: { "retry-after": "1" },
      })
      : new Response("ok")
  );
  const started = performance.now();
  const response = await client(server.url).request({
    method: "GET",
    path: "/x",
  });
  assertEquals(await response.text(), "ok");
  assertGreaterOrEqual(performance.now() - started, 900);
  assertEquals(server.count(), 2);

  await using far = serve(() =>
    new Response("later", { status: 503, headers: { "retry-after": "3600" } })
  );
  const quick = performance.now();
  const error = await rejection(
    client(far.url).request({ method: "GET", path: "/x" }),
  );
  assertEquals(error.status, 503);
  assertEquals(far.count(), 1);
  assertLess(performance.now() - quick, 1000);
});

Deno.test("HttpClient does not retry 4xx other than 429", async () => {
  await using server = serve(() =>
    Response.json({ code: "FILE_NOT_FOUND", message: "gone" }, { status: 404 })
  );
  const error = await rejection(
    client(server.url).request({ method: "GET", path: "/files" }),
  );
  assertEquals(error.code, "FILE_NOT_FOUND");
  assertEquals(server.count(), 1);
});

Deno.test("HttpClient times out a slow first byte", async () => {
  await using server = serve(async () => {
    await delay(1500);
    return new Response("late");
  });
  const started = performance.now();
  const error = await rejection(
    client(server.url, { timeoutMs: 150 }).request({
      method: "GET",
      path: "/",
    }),
  );
  assert(error.timedOut);
  assertEquals(error.status, 0);
  assertLess(performance.now() - started, 1200);
  assertStringIncludes(error.message, "timed out after 150 ms");
  assertEquals(server.count(), 1); // a timeout is not retried
});

function stallingBody(firstChunk: string, stallMs: number, rest = "}") {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(firstChunk));
      await delay(stallMs);
      try {
        controller.enqueue(new TextEncoder().encode(rest));
        controller.close();
      } catch {
        // cancelled meanwhile
      }
    },
  });
}

Deno.test("HttpClient's deadline covers reading the body of json()", async () => {
  await using server = serve(() =>
    new Response(stallingBody('{"a":', 1500, "1}"), {
      headers: { "content-type": "application/json" },
    })
  );
  const started = performance.now();
  const error = await rejection(
    client(server.url, { timeoutMs: 200 }).json({ method: "GET", path: "/" }),
  );
  assert(error.timedOut);
  assertStringIncludes(error.message, "while reading the answer");
  assertLess(performance.now() - started, 1200);
});

Deno.test("HttpClient with timeoutMs null lets a long body run past the client's timeout", async () => {
  await using server = serve(() => new Response(stallingBody("{", 400)));
  const response = await client(server.url, { timeoutMs: 150 }).request({
    method: "GET",
    path: "/",
    timeoutMs: null,
  });
  assertEquals(await response.text(), "{}");
});

Deno.test("HttpClient's idle timeout stops a stalled stream", async () => {
  await using server = serve(() => new Response(stallingBody("{", 5000)));
  const response = await client(server.url).request({
    method: "GET",
    path: "/",
    timeoutMs: null,
    idleTimeoutMs: 150,
  });
  const error = await rejection(response.text());
  assert(error.timedOut);
  assertStringIncludes(error.message, "stalled");
});

Deno.test("HttpClient's idle timeout counts only the wait for the server", async () => {
  // Sixteen chunks 100 ms apart (each wait far under the 500 ms limit, the
  // whole body over three times it), read by a consumer that pauses 700 ms
  // before its first read: the limit runs from each wait, not the first.
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i < 16; i++) {
            controller.enqueue(new TextEncoder().encode(String(i % 10)));
            await delay(100);
          }
          controller.close();
        },
      }),
    )
  );
  const response = await client(server.url).request({
    method: "GET",
    path: "/",
    timeoutMs: null,
    idleTimeoutMs: 500,
  });
  await delay(700);
  assertEquals(await response.text(), "0123456789012345");
});

Deno.test("HttpClient reports a connection dropped in the middle of a body", async () => {
  await using server = serveRaw(async (_request, conn) => {
    await writeAll(
      conn,
      "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n" +
        "x".repeat(100),
    );
  });
  const response = await client(server.url).request({
    method: "GET",
    path: "/file",
  });
  const error = await rejection(response.arrayBuffer());
  assertEquals(error.status, 0);
  assertStringIncludes(error.message, "while reading the answer");
});

Deno.test("HttpClient aborts with the caller's reason, before and during the body", async () => {
  await using server = serve(() => new Response(stallingBody("{", 1500)));
  const http = client(server.url);
  const early = new AbortController();
  early.abort(new DOMException("stop", "AbortError"));
  await assertRejects(
    () => http.request({ method: "GET", path: "/", signal: early.signal }),
    DOMException,
    "stop",
  );
  const late = new AbortController();
  const response = await http.request({
    method: "GET",
    path: "/",
    signal: late.signal,
  });
  setTimeout(() => late.abort(new DOMException("later", "AbortError")), 50);
  await assertRejects(() => response.text(), DOMException, "later");
  // Without an overall deadline too (long downloads).
  const streamed = new AbortController();
  const long = await http.request({
    method: "GET",
    path: "/",
    timeoutMs: null,
    signal: streamed.signal,
  });
  setTimeout(() => streamed.abort(new DOMException("long", "AbortError")), 50);
  await assertRejects(() => long.text(), DOMException, "long");
});

Deno.test("HttpClient's abort stops an endless body even after garbage collection", async () => {
  // Deno 2.9.6 stops following the signal given to `fetch` once the request
  // is collected; a body whose chunks are always ready then runs to its end.
  const chunk = new Uint8Array(64 * 1024);
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(chunk) }),
    )
  );
  const http = client(server.url);
  const controller = new AbortController();
  const response = await http.request({
    method: "GET",
    path: "/",
    timeoutMs: null,
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  let bytes = 0;
  let garbage: unknown[] = [];
  const started = performance.now();
  const stopAt = 200;
  let aborted = false;
  const error = await (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        bytes += value.length;
        // Pressure for the young generation, so collections happen.
        garbage.push(new Array(256).fill(bytes));
        if (garbage.length > 4096) garbage = [];
        if (!aborted && performance.now() - started > stopAt) {
          aborted = true;
          controller.abort(new DOMException("enough", "AbortError"));
        }
        if (performance.now() - started > 10_000) return undefined;
      }
    } catch (error) {
      return error;
    }
  })();
  await reader.cancel().catch(() => {});
  assert(aborted, "the body ended before the abort");
  assertInstanceOf(error, DOMException, `read ${bytes} bytes without stopping`);
  assertEquals(error.message, "enough");
  assertLess(performance.now() - started, 5000);
});

Deno.test("HttpClient errors name the server's message in its usual shapes", async () => {
  const cases: [Response, string, string | undefined, string | undefined][] = [
    [
      Response.json({ code: "RUNTIME_ERROR", message: "boom" }, {
        status: 500,
      }),
      "500 RUNTIME_ERROR: boom",
      "RUNTIME_ERROR",
      "boom",
    ],
    [
      Response.json({ error: "invalid token" }, { status: 401 }),
      "401: invalid token",
      undefined,
      "invalid token",
    ],
    [
      Response.json({
        success: false,
        message: "File not found",
        data: null,
      }, { status: 400 }),
      "400: File not found",
      undefined,
      "File not found",
    ],
    [
      new Response("404 page not found\n", { status: 404 }),
      "404: 404 page not found",
      undefined,
      "404 page not found",
    ],
    [
      new Response(null, { status: 418 }),
      "418 I'm a teapot",
      undefined,
      undefined,
    ],
  ];
  for (const [answer, expected, code, message] of cases) {
    await using server = serve(() => answer.clone());
    const error = await rejection(
      client(server.url, { retries: 0 }).request({
        method: "GET",
        path: "/a",
      }),
    );
    assertEquals(error.message, `GET ${server.url}/a: ${expected}`);
    assertEquals(error.code, code);
    assertEquals(error.serverMessage, message);
  }
});

Deno.test("HttpClient bounds an HTML error page and keeps the request id", async () => {
  await using server = serve(() =>
    new Response(`<html>${"<p>oops</p>\n".repeat(5000)}</html>`, {
      status: 502,
      headers: { "x-request-id": "req-42" },
    })
  );
  const error = await rejection(
    client(server.url, { retries: 0 }).request({ method: "GET", path: "/" }),
  );
  assertEquals(error.requestId, "req-42");
  assertLess(error.message.length, 500);
  assert(!error.message.includes("\n"));
});

Deno.test("HttpClient cancels an endless error body", async () => {
  let cancelled = false;
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(new Uint8Array(16 * 1024).fill(65));
        },
        cancel() {
          cancelled = true;
        },
      }),
      { status: 500 },
    )
  );
  const error = await rejection(
    client(server.url, { retries: 0 }).request({ method: "GET", path: "/" }),
  );
  assertEquals(error.status, 500);
  for (let i = 0; i < 50 && !cancelled; i++) await delay(20);
  assert(cancelled, "the server's body was not cancelled");
});

Deno.test("HttpClient never shows a secret header or query value", async () => {
  await using server = serve((request) => {
    const echo = [...request.headers].map(([k, v]) => `${k}=${v}`).join(" ");
    return Response.json({ code: "UNAUTHORIZED", message: `bad: ${echo}` }, {
      status: 401,
    });
  });
  const http = client(server.url, {
    headers: {
      "OPEN-SANDBOX-API-KEY": SECRET_KEY,
      "X-Routing": "plain-value",
    },
  }).withHeaders({ Authorization: `Bearer ${SECRET_TOKEN}` });
  const error = await rejection(
    http.request({
      method: "GET",
      path: "/v1/sandboxes",
      query: { access_token: SECRET_QUERY, state: "Running" },
    }),
  );
  assertNoSecret(error);
  assertStringIncludes(error.message, "plain-value");
  assertStringIncludes(error.message, "access_token=[redacted]");
  assertStringIncludes(error.message, "state=Running");
  assertStringIncludes(error.serverMessage ?? "", "[redacted]");

  // Network errors too (Deno's own message names the URL).
  const closed = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const refused = await rejection(
    client(`http://127.0.0.1:${port}`, {
      headers: { "x-api-key": SECRET_KEY },
      retries: 1,
    }).request({
      method: "GET",
      path: "/x",
      query: { token: SECRET_QUERY },
    }),
  );
  assertEquals(refused.status, 0);
  assertNoSecret(refused);
});

Deno.test("HttpClient does not follow redirects", async () => {
  await using target = serve((request) =>
    Response.json({ key: request.headers.get("x-api-key") })
  );
  await using server = serve(() =>
    new Response(null, { status: 302, headers: { location: target.url } })
  );
  const error = await rejection(
    client(server.url, { headers: { "x-api-key": SECRET_KEY } }).request({
      method: "GET",
      path: "/",
    }),
  );
  assertEquals(error.status, 302);
  assertStringIncludes(error.message, "redirects are not followed");
  assertEquals(target.count(), 0);
});

Deno.test("HttpClient json() refuses an answer that is not JSON and reads an empty one as undefined", async () => {
  await using server = serve((request) =>
    new URL(request.url).pathname === "/empty"
      ? new Response(null, { status: 204 })
      : new Response("{not json", { status: 200 })
  );
  const http = client(server.url);
  assertEquals(
    await http.json({ method: "DELETE", path: "/empty" }),
    undefined,
  );
  const error = await rejection(http.json({ method: "GET", path: "/bad" }));
  assertEquals(error.status, 200);
  assertStringIncludes(error.message, "not valid JSON: {not json");
});
