import {
  assert,
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { AioClient, AioOperationError } from "./client.ts";
import { startAioTestServer, TEST_TOKEN } from "../../tests/helpers/aio.ts";

Deno.test("aio client: each file call's success false is an AioOperationError with the server's message and error_type", async () => {
  await using aio = await startAioTestServer();
  const client = new AioClient({
    baseUrl: aio.server.baseUrl,
    apiKey: TEST_TOKEN,
  });
  const dir = aio.dir;
  await Deno.writeTextFile(`${dir}/file`, "x");
  const cases: [string, () => Promise<unknown>, string][] = [
    ["read", () => client.read(`${dir}/none`), "not_found"],
    ["read", () => client.read(`${dir}`), "invalid_target"],
    ["write", () => client.write("relative.txt", "x"), "invalid_path"],
    ["list", () => client.list({ path: `${dir}/none` }), "not_found"],
    ["list", () => client.list({ path: `${dir}/file` }), "invalid_target"],
    ["upload", () => client.upload(`${dir}/file/child`, "x"), "already_exists"],
  ];
  for (const [operation, call, errorType] of cases) {
    const error = await assertRejects(call, AioOperationError);
    assertEquals(error.status, 200, operation);
    assertEquals(error.errorType, errorType, operation);
    assertEquals(error.code, errorType, operation);
    assertEquals(error.operation, operation);
    assertStringIncludes(error.message, errorType);
    assert(error.serverMessage && error.serverMessage.length > 0);
    assertInstanceOf(error, RemoteHttpError);
  }
  // The bash calls answer success: false too (no error_type).
  assertFalse(await client.kill("no-such-session"));
  const output = await assertRejects(
    () => client.output({ session_id: "no-such-session" }),
    AioOperationError,
  );
  assertEquals(output.errorType, undefined);
  assertStringIncludes(output.message, "no-such-session");
  // A failed download is an HTTP status instead.
  const download = await assertRejects(
    () => client.download(`${dir}/none`),
    RemoteHttpError,
  );
  assertEquals(download.status, 404);
  assertStringIncludes(download.message, "File not found");
});

Deno.test("aio client: a 422 names the refused fields; a non-JSON 200 and a 200 without data are errors", async () => {
  await using aio = await startAioTestServer();
  const client = new AioClient({
    baseUrl: aio.server.baseUrl,
    apiKey: TEST_TOKEN,
  });
  const invalid = await assertRejects(
    () => client.exec({ command: 42 as unknown as string }),
    RemoteHttpError,
  );
  assertEquals(invalid.status, 422);
  assertEquals(invalid.code, "validation_error");
  assertStringIncludes(
    invalid.message,
    "422 invalid request: body.command: Input should be a valid string",
  );
  assertEquals(aio.server.requestCount("/v1/bash/exec"), 1);
  aio.server.faults.add({
    path: "/v1/file/list",
    fault: { kind: "invalid-json" },
    times: 1,
  });
  const notJson = await assertRejects(
    () => client.list({ path: aio.dir }),
    RemoteHttpError,
  );
  assertEquals(notJson.status, 200);
  assertStringIncludes(notJson.message, "the answer is not JSON");
  aio.server.faults.add({
    path: "/v1/file/read",
    fault: {
      kind: "status",
      status: 200,
      body: '{"success":true,"data":null}',
    },
    times: 1,
  });
  await Deno.writeTextFile(`${aio.dir}/a.txt`, "a");
  await assertRejects(
    () => client.read(`${aio.dir}/a.txt`),
    RemoteHttpError,
    "the answer has no data",
  );
  assertEquals(await client.read(`${aio.dir}/a.txt`), "a");
});

Deno.test("aio client: exec is sent once even when the server fails; reads are retried", async () => {
  await using aio = await startAioTestServer();
  const client = new AioClient({
    baseUrl: aio.server.baseUrl,
    apiKey: TEST_TOKEN,
  });
  for (const status of [500, 502, 503, 429, 408]) {
    aio.server.faults.add({
      path: "/v1/bash/exec",
      fault: { kind: "status", status },
      times: 1,
    });
    const before = aio.server.requestCount("/v1/bash/exec");
    const error = await assertRejects(
      () => client.exec({ command: "echo x >> sent.log" }),
      RemoteHttpError,
    );
    assertEquals(error.status, status);
    assertEquals(aio.server.requestCount("/v1/bash/exec"), before + 1);
  }
  assertEquals(
    await Deno.readTextFile(`${aio.dir}/sent.log`).catch(() => ""),
    "",
  );
  aio.server.faults.add({
    path: "/v1/file/read",
    fault: { kind: "status", status: 503 },
    times: 1,
  });
  await Deno.writeTextFile(`${aio.dir}/b.txt`, "b");
  assertEquals(await client.read(`${aio.dir}/b.txt`), "b");
  assertEquals(aio.server.requestCount("/v1/file/read"), 2);
});

Deno.test("aio client: bytes written through /v1/file/write come back identical", async () => {
  await using aio = await startAioTestServer();
  const client = new AioClient({
    baseUrl: aio.server.baseUrl,
    apiKey: TEST_TOKEN,
  });
  const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 13) % 256);
  assertEquals(await client.write(`${aio.dir}/bin/x.bin`, bytes), bytes.length);
  assertEquals(await Deno.readFile(`${aio.dir}/bin/x.bin`), bytes);
  const response = await client.download(`${aio.dir}/bin/x.bin`);
  assertEquals(new Uint8Array(await response.arrayBuffer()), bytes);
});

Deno.test("aio client: a 422 that echoes the refused input never shows it", async () => {
  await using aio = await startAioTestServer();
  const client = new AioClient({
    baseUrl: aio.server.baseUrl,
    apiKey: TEST_TOKEN,
  });
  aio.server.faults.add({
    path: "/v1/bash/exec",
    fault: {
      kind: "status",
      status: 422,
      body: JSON.stringify({
        detail: [{
          type: "string_type",
          loc: ["body", "env", "API_KEY"],
          msg: "Input should be a valid string",
          input: "sk-very-secret-value",
        }],
      }),
    },
    times: 1,
  });
  const error = await assertRejects(
    () =>
      client.exec({
        command: "true",
        env: { API_KEY: "sk-very-secret-value" },
      }),
    RemoteHttpError,
  );
  assertStringIncludes(
    error.message,
    "body.env.API_KEY: Input should be a valid string",
  );
  const everything = `${error.message} ${error.serverMessage} ${error.stack} ${
    String(error.cause)
  }`;
  assertFalse(everything.includes("sk-very-secret-value"));
});
