/**
 * The OpenSandbox test server answers as the real execd binary does where it
 * differs from its spec and its source's first reading (facts measured on the
 * binary, `../shared/specs/README.md`, "Measured on the real execd binary"):
 * the 1000-part upload limit, Go's `os.Expand` on every path, file names
 * with line breaks, `/proc` files, an interrupt that waits for zombies, and
 * the sandbox's creation `env` in every command.
 *
 * @module
 */
import { assertEquals, assertLess } from "@std/assert";
import { OpenApiContract } from "./_contract.ts";
import {
  type OpenSandboxServer,
  type OpenSandboxServerOptions,
  startOpenSandboxServer,
} from "./opensandbox.ts";
import {
  multipartBody,
  type MultipartPart,
} from "../../runtimes/remote/upload.ts";

const SPECS = new URL("../../../shared/specs/opensandbox/", import.meta.url);
const execdSpec = await OpenApiContract.load(new URL("execd-api.yaml", SPECS));

interface Started extends AsyncDisposable {
  server: OpenSandboxServer;
  id: string;
  execd: string;
  dir: string;
}

async function start(
  options: OpenSandboxServerOptions = {},
  create?: Record<string, unknown>,
): Promise<Started> {
  const server = await startOpenSandboxServer({
    streamLingerMs: 20,
    ...options,
  });
  const sandbox = server.createSandbox(create);
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-osreal-" }),
  );
  return {
    server,
    id: sandbox.id,
    execd: server.execdUrl(sandbox.id),
    dir,
    async [Symbol.asyncDispose]() {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
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
  const checked = await execdSpec.check(response, { method, path });
  return { status: response.status, body: checked, headers: response.headers };
}

// deno-lint-ignore no-explicit-any
type Event = Record<string, any>;

/** Runs a command to its end and returns its events. */
async function run(
  base: string,
  body: Record<string, unknown>,
): Promise<{ status: number; events: Event[]; body: unknown }> {
  const response = await fetch(`${base}/command`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) {
    return {
      status: response.status,
      events: [],
      body: await execdSpec.check(response, {
        method: "POST",
        path: "/command",
      }),
    };
  }
  const text = await response.text();
  const events = text.split("\n\n").filter((f) => f !== "").map((f) =>
    JSON.parse(f)
  );
  return { status: 200, events, body: undefined };
}

function stdout(events: Event[]): string[] {
  return events.filter((e) => e.type === "stdout").map((e) => e.text);
}

/** `metadata`/`file` pairs for `POST /files/upload`. */
function uploadParts(
  files: readonly { path: string; content: string; mode?: number }[],
): MultipartPart[] {
  return files.flatMap((file) => [
    {
      name: "metadata",
      filename: "metadata",
      contentType: "application/json",
      content: JSON.stringify({
        path: file.path,
        ...(file.mode === undefined ? {} : { mode: file.mode }),
      }),
    },
    { name: "file", filename: "f", content: file.content },
  ]);
}

async function upload(
  base: string,
  files: readonly { path: string; content: string; mode?: number }[],
): Promise<{ status: number; body: unknown }> {
  const { body, contentType, length } = multipartBody(uploadParts(files));
  return await execd(base, "POST", "/files/upload", {
    headers: { "content-type": contentType, "content-length": String(length) },
    body,
  });
}

Deno.test("upload: at most 1000 multipart parts: 500 pairs are written, 501 pairs are 400 INVALID_FILE 'multipart form is empty'", async () => {
  await using started = await start();
  const files = (n: number, folder: string) =>
    Array.from({ length: n }, (_, i) => ({
      path: `${started.dir}/${folder}/f${i}.txt`,
      content: `file ${i}`,
    }));
  const ok = await upload(started.execd, files(500, "ok"));
  assertEquals(ok.status, 200);
  assertEquals(
    await Deno.readTextFile(`${started.dir}/ok/f499.txt`),
    "file 499",
  );
  const refused = await upload(started.execd, files(501, "refused"));
  assertEquals(refused.status, 400);
  assertEquals(refused.body, {
    code: "INVALID_FILE",
    message: "multipart form is empty",
  });
  let written = true;
  try {
    await Deno.stat(`${started.dir}/refused`);
  } catch {
    written = false;
  }
  assertEquals(written, false, "nothing of a refused form is written");
});
