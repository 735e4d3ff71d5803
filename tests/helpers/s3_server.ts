/**
 * Test servers for the package tests: a real S3-compatible server (`s3rver`,
 * run by Node as its own process on loopback) behind a proxy that checks
 * every request's AWS Signature V4 with `@smithy/signature-v4` (the AWS SDK's
 * own signer; s3rver 3.7.1 accepts any signature), and can cut a download
 * mid-stream.
 *
 * s3rver is installed outside the project by `.ci/run`:
 * `npm install --prefix ~/.cache/skillrun-test/s3rver s3rver@3.7.1`.
 *
 * @module
 */
import { SignatureV4 } from "@smithy/signature-v4";
import { AwsClient } from "aws4fetch";
import { Hash } from "@smithy/hash-node";
import { createHash } from "node:crypto";
import { hostPath } from "../../_internal/std.ts";

/** Where `.ci/run` installs s3rver. */
export const S3RVER_DIR: string = Deno.env.get("SKILLRUN_S3RVER_DIR") ??
  hostPath.join(
    Deno.env.get("XDG_CACHE_HOME") ??
      hostPath.join(Deno.env.get("HOME") ?? "/root", ".cache"),
    "skillrun-test",
    "s3rver",
  );

/** The credentials the proxy accepts. */
export const S3_CREDENTIALS = Object.freeze({
  accessKeyId: "AKIDSKILLRUNTEST",
  secretAccessKey: "skillrun-test-secret-0123456789abcdef",
});

/** A running S3 server behind the verifying proxy. */
export interface S3TestServer extends AsyncDisposable {
  /** The proxy's endpoint, for the store. */
  readonly endpoint: string;
  /** The bucket made at start. */
  readonly bucket: string;
  /** Requests the proxy refused for a bad signature. */
  readonly refused: number;
  /** Cuts the next GET of an object after this many bytes (a network failure). */
  cutNextDownloadAfter(bytes: number): void;
  /** Stops the proxy and the server, removes the data. */
  close(): Promise<void>;
}

/**
 * Starts s3rver (Node, its own process) and the verifying proxy.
 *
 * @throws {Error} s3rver is not installed (the message says how to install it).
 */
export async function startS3Server(): Promise<S3TestServer> {
  const script = hostPath.join(
    S3RVER_DIR,
    "node_modules",
    "s3rver",
    "bin",
    "s3rver.js",
  );
  try {
    await Deno.stat(script);
  } catch {
    throw new Error(
      `s3rver IS NOT INSTALLED (looked for ${script}): the S3 store tests need a real S3-compatible server. ` +
        `Install it with: npm install --prefix ${S3RVER_DIR} s3rver@3.7.1 (.ci/run does this)`,
    );
  }
  const data = await Deno.makeTempDir({ prefix: "s3rver-" });
  const bucket = "skills";
  const child = new Deno.Command("node", {
    args: [
      script,
      "-d",
      data,
      "-a",
      "127.0.0.1",
      "-p",
      "0",
      "--configure-bucket",
      bucket,
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let upstream: string | undefined;
  const deadline = Date.now() + 20_000;
  while (upstream === undefined && Date.now() < deadline) {
    const { value, done } = await lines.read();
    if (done) break;
    seen += value;
    const match = /listening on ([\d.]+):(\d+)/.exec(seen);
    if (match) upstream = `http://${match[1]}:${match[2]}`;
  }
  // Keep draining its output so it never blocks.
  (async () => {
    while (!(await lines.read()).done) { /* drain */ }
  })().catch(() => {});
  child.stderr.pipeTo(new WritableStream()).catch(() => {});
  if (upstream === undefined) {
    child.kill();
    throw new Error(`s3rver did not start: ${seen}`);
  }

  const signer = new SignatureV4({
    credentials: S3_CREDENTIALS,
    region: "us-east-1",
    service: "s3",
    sha256: Hash.bind(null, "sha256"),
    uriEscapePath: false,
    applyChecksum: false,
  });
  const upstreamClient = new AwsClient({
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    service: "s3",
    region: "us-east-1",
  });
  let refused = 0;
  let cutAfter: number | undefined;

  const proxy = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const body = request.body
        ? new Uint8Array(await request.arrayBuffer())
        : undefined;
      const problem = await checkSignature(signer, request, url, body);
      if (problem) {
        refused++;
        return new Response(
          `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${problem}</Code><Message>refused by the test proxy</Message></Error>`,
          { status: 403, headers: { "content-type": "application/xml" } },
        );
      }
      // Verified: forwarded to s3rver, signed again with its own key.
      const headers = new Headers();
      for (const name of ["content-type", "content-length"]) {
        const value = request.headers.get(name);
        if (value !== null) headers.set(name, value);
      }
      const answer = await upstreamClient.fetch(
        `${upstream}${url.pathname}${url.search}`,
        {
          method: request.method,
          headers,
          ...(body && body.length > 0 ? { body } : {}),
        },
      );
      if (request.method === "GET" && cutAfter !== undefined && answer.body) {
        const limit = cutAfter;
        cutAfter = undefined;
        let sent = 0;
        const reader = answer.body.getReader();
        const cut = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const { value, done } = await reader.read();
            if (done) return controller.close();
            if (sent + value.length >= limit) {
              controller.enqueue(value.subarray(0, limit - sent));
              await reader.cancel();
              controller.error(new Error("connection cut by the test proxy"));
              return;
            }
            sent += value.length;
            controller.enqueue(value);
          },
        });
        return new Response(cut, {
          status: answer.status,
          headers: answer.headers,
        });
      }
      return new Response(answer.body, {
        status: answer.status,
        headers: answer.headers,
      });
    },
  );
  const close = async () => {
    await proxy.shutdown();
    try {
      child.kill();
    } catch {
      // gone
    }
    await child.status;
    await Deno.remove(data, { recursive: true }).catch(() => {});
  };
  return {
    endpoint: `http://127.0.0.1:${proxy.addr.port}`,
    bucket,
    get refused() {
      return refused;
    },
    cutNextDownloadAfter(bytes: number) {
      cutAfter = bytes;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Checks a request's SigV4 signature and payload hash; returns the S3 error code, or undefined. */
async function checkSignature(
  signer: SignatureV4,
  request: Request,
  url: URL,
  body: Uint8Array | undefined,
): Promise<string | undefined> {
  const authorization = request.headers.get("authorization") ?? "";
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/[^/]+\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/
      .exec(authorization);
  if (!match) return "AccessDenied";
  if (match[1] !== S3_CREDENTIALS.accessKeyId) return "InvalidAccessKeyId";
  const amzDate = request.headers.get("x-amz-date") ?? "";
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!date) return "AccessDenied";
  const signingDate = new Date(
    Date.UTC(
      +date[1]!,
      +date[2]! - 1,
      +date[3]!,
      +date[4]!,
      +date[5]!,
      +date[6]!,
    ),
  );
  const headers: Record<string, string> = {};
  for (const name of match[2]!.split(";")) {
    headers[name] = request.headers.get(name) ?? "";
  }
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = value;
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: decodeURIComponent(url.pathname),
      query,
      headers,
    },
    { signingDate, signableHeaders: new Set(Object.keys(headers)) },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(
    signed.headers["authorization"] ?? signed.headers["Authorization"] ?? "",
  )?.[1];
  if (expected !== match[3]) return "SignatureDoesNotMatch";
  const claimed = request.headers.get("x-amz-content-sha256");
  if (claimed && claimed !== "UNSIGNED-PAYLOAD") {
    const actual = createHash("sha256").update(body ?? new Uint8Array(0))
      .digest("hex");
    if (actual !== claimed) return "XAmzContentSHA256Mismatch";
  }
  return undefined;
}
