// A program that makes one intercepted request through the egress proxy and
// never closes it: it must still end (the proxy keeps nothing alive).
import { CertificateAuthority } from "../ca.ts";
import { EgressPolicy } from "../policy.ts";
import { EgressProxy } from "../proxy.ts";

const upstream = await CertificateAuthority.create("upstream");
const issued = await upstream.issue("secret.test");
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  cert: issued.cert,
  key: issued.key,
  onListen() {},
}, (request) => new Response(`saw ${request.headers.get("authorization")}`));
server.unref();
const authority = await CertificateAuthority.create();
const dir = await Deno.makeTempDir();
await Deno.writeTextFile(`${dir}/ca.pem`, authority.certificate);
const proxy = await EgressProxy.start({
  policy: EgressPolicy.create({
    network: { allow: [`secret.test:${server.addr.port}`] },
    secrets: { K: { hosts: ["secret.test"], value: "real" } },
    resolve: { "secret.test": "127.0.0.1" },
  }),
  socketPath: `${dir}/proxy.sock`,
  tcp: { hostname: "127.0.0.1", port: 0 },
  authority,
  placeholders: { K: "PLACEHOLDER" },
  upstreamCaCerts: [upstream.certificate],
});
const output = await new Deno.Command("curl", {
  args: [
    "-sS",
    "--cacert",
    `${dir}/ca.pem`,
    "-x",
    `http://127.0.0.1:${proxy.tcpAddress!.port}`,
    "-H",
    "Authorization: PLACEHOLDER",
    `https://secret.test:${server.addr.port}/`,
  ],
}).output();
await Deno.remove(dir, { recursive: true });
console.log(new TextDecoder().decode(output.stdout));
