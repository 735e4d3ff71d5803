/**
 * The servers of the egress benchmarks, in their own process (so their memory
 * is not counted): plain HTTP (`/small`, and `/big`: 1 GiB of zeros streamed
 * from one 1 MiB buffer) and HTTPS for `secret.test` and `other.test` with
 * certificates of a test authority whose certificate is written to the path
 * given. Prints `{"http":port,"https":port}` on one line when listening.
 *
 * @module
 */
import { CertificateAuthority } from "../network/ca.ts";

const ONE_MIB = new Uint8Array(1024 * 1024);
const caPath = Deno.args[0]!;

function big(): Response {
  let sent = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      type: "bytes",
      pull(controller) {
        if (sent === 1024) return controller.close();
        sent++;
        controller.enqueue(ONE_MIB.slice());
      },
    }),
    { headers: { "content-length": String(1024 ** 3) } },
  );
}

const handler = (request: Request): Response =>
  new URL(request.url).pathname === "/big" ? big() : new Response("ok\n");

const http = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  handler,
);
const ca = await CertificateAuthority.create("bench upstream CA");
await Deno.writeTextFile(caPath, ca.certificate);
// One certificate naming both hosts is not needed: curl names each host, and
// SNI-less Deno.serve takes one chain, so each name gets its own server.
const secret = await ca.issue("secret.test");
const other = await ca.issue("other.test");
const secretServer = Deno.serve(
  {
    hostname: "127.0.0.1",
    port: 0,
    cert: secret.cert,
    key: secret.key,
    onListen() {},
  },
  handler,
);
const otherServer = Deno.serve(
  {
    hostname: "127.0.0.1",
    port: 0,
    cert: other.cert,
    key: other.key,
    onListen() {},
  },
  handler,
);
console.log(JSON.stringify({
  http: http.addr.port,
  secret: secretServer.addr.port,
  other: otherServer.addr.port,
}));
// Ends with the bench: its standard input is the bench's pipe.
for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
Deno.exit(0);
