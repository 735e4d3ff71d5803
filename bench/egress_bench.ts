/**
 * Benchmarks of the egress proxy of the isolated mode, each beside its
 * baseline: 100 sequential HTTP GETs from inside the sandbox through the
 * policy proxy against the same loop on the unisolated host; a 1 GiB download
 * through the proxy (a plain CONNECT tunnel) against curl straight to the
 * server; an intercepted HTTPS request carrying a secret against a tunnelled
 * one. The servers run in their own process (`_egress_server.ts`).
 *
 * @module
 */
import { type BenchCase, runChild, startServerProcess } from "./_harness.ts";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";

const DATA = new URL("./.data/egress/", import.meta.url).pathname;
const CA = `${DATA}upstream-ca.pem`;
const SERVER = new URL("./_egress_server.ts", import.meta.url).pathname;
const GETS = 100;
const TLS_REQUESTS = 20;

interface Ports {
  readonly http: number;
  readonly secret: number;
  readonly other: number;
}

let ports: Promise<Ports> | undefined;

/** Starts the servers in a child process (once per process). */
function servers(): Promise<Ports> {
  return ports ??= (async () => {
    await Deno.mkdir(DATA, { recursive: true });
    const { firstLine } = await startServerProcess(
      ["run", "-A", SERVER, `${CA}.${Deno.pid}`],
      // The server ends when this process does (its stdin closes), even
      // after an uncaught error.
      { what: "The egress bench servers", stdin: "piped" },
    );
    return JSON.parse(firstLine) as Ports;
  })();
}

let isolated: Promise<LocalSkillRuntime> | undefined;
/** An isolated runtime whose proxy allows the bench hosts (mapped to loopback). */
function egressRuntime(): Promise<LocalSkillRuntime> {
  return isolated ??= servers().then(async (p) =>
    await LocalSkillRuntime.create({
      isolate: {
        network: {
          allow: [
            `api.test:${p.http}`,
            `secret.test:${p.secret}`,
            `other.test:${p.other}`,
          ],
        },
        secrets: { BENCH_KEY: { hosts: ["secret.test"], value: "bench-v" } },
        resolve: {
          "api.test": "127.0.0.1",
          "secret.test": "127.0.0.1",
          "other.test": "127.0.0.1",
        },
        upstreamCaCerts: [await Deno.readTextFile(`${CA}.${Deno.pid}`)],
      },
    })
  );
}

let plain: LocalSkillRuntime | undefined;
let relayPort: number | undefined;

/**
 * A bare TCP relay in Deno (one hop, no policy, no bridge) to the HTTP
 * server: the floor of any user-space proxy written in Deno.
 */
async function relay(): Promise<number> {
  if (relayPort !== undefined) return relayPort;
  const target = (await servers()).http;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pump = async (a: Deno.Conn, b: Deno.Conn) => {
    const buf = new Uint8Array(256 * 1024);
    try {
      for (;;) {
        const n = await a.read(buf);
        if (n === null) break;
        let o = 0;
        while (o < n) o += await b.write(buf.subarray(o, n));
      }
      await b.closeWrite();
    } catch { /* closed */ }
  };
  (async () => {
    for await (const conn of listener) {
      const up = await Deno.connect({ hostname: "127.0.0.1", port: target });
      Promise.all([pump(conn, up), pump(up, conn)]).finally(() => {
        try {
          conn.close();
        } catch { /* closed */ }
        try {
          up.close();
        } catch { /* closed */ }
      });
    }
  })();
  listener.unref();
  return relayPort = (listener.addr as Deno.NetAddr).port;
}
let shared: Promise<LocalSkillRuntime> | undefined;

async function run(runtime: LocalSkillRuntime, command: string): Promise<void> {
  const result = await runtime.execute({ command, timeoutMs: 300_000 });
  if (result.exitCode !== 0) {
    throw new Error(
      `"${command}" failed (${result.exitCode}): ${result.stderr.slice(-500)}`,
    );
  }
}

const loop = (url: string, extra = "") =>
  `for i in $(seq ${GETS}); do curl -sf ${extra} -o /dev/null ${url} || exit 1; done`;

/** The cases, each with its baseline. */
export const cases: BenchCase[] = [
  {
    id: "egress-100-gets",
    title:
      "100 sequential HTTP GETs (curl) to a loopback server: isolated, through the policy proxy, vs the unisolated host",
    module: import.meta.url,
    maxRatio: 1.5,
    ours: {
      label: "isolated execute, curl through the bridge and the proxy",
      fn: async () =>
        await run(
          await egressRuntime(),
          loop(`http://api.test:${(await servers()).http}/small`),
        ),
    },
    baseline: {
      label: "plain execute, curl straight to 127.0.0.1",
      fn: async () =>
        await run(
          plain ??= new LocalSkillRuntime(),
          loop(`http://127.0.0.1:${(await servers()).http}/small`),
        ),
    },
    extra: [{
      label: "isolated execute with the host's network (allowNet), straight",
      fn: async () =>
        await run(
          await (shared ??= LocalSkillRuntime.create({
            isolate: { allowNet: true },
          })),
          loop(`http://127.0.0.1:${(await servers()).http}/small`),
        ),
    }],
  },
  {
    id: "egress-download-1gib",
    title:
      "1 GiB download (curl -o /dev/null): isolated, through the proxy as a plain CONNECT tunnel, vs curl straight from the host",
    module: import.meta.url,
    iterations: 3,
    rounds: 2,
    maxRatio: 1.3,
    maxRssMiB: 100,
    ours: {
      label: "isolated execute, curl -p through the bridge and the proxy",
      fn: async () =>
        await run(
          await egressRuntime(),
          `curl -sf -p -o /dev/null http://api.test:${
            (await servers()).http
          }/big`,
        ),
    },
    baseline: {
      label: "curl straight to 127.0.0.1 (plain execute)",
      fn: async () =>
        await run(
          plain ??= new LocalSkillRuntime(),
          `curl -sf -o /dev/null http://127.0.0.1:${
            (await servers()).http
          }/big`,
        ),
    },
    extra: [{
      label: "curl through a bare Deno TCP relay (one hop, plain execute)",
      fn: async () =>
        await run(
          plain ??= new LocalSkillRuntime(),
          `curl -sf -o /dev/null http://127.0.0.1:${await relay()}/big`,
        ),
    }],
  },
  {
    id: "egress-intercepted-secret",
    title:
      `${TLS_REQUESTS} HTTPS requests in the sandbox: intercepted with a secret injected vs tunnelled untouched`,
    module: import.meta.url,
    ours: {
      label: "intercepted (the runtime's CA, secret in the header)",
      fn: async () =>
        await run(
          await egressRuntime(),
          `for i in $(seq ${TLS_REQUESTS}); do curl -sf -o /dev/null -H "Authorization: Bearer $BENCH_KEY" https://secret.test:${
            (await servers()).secret
          }/small || exit 1; done`,
        ),
    },
    baseline: {
      label: "tunnelled (CONNECT, the server's own certificate)",
      fn: async () => {
        const p = await servers();
        await run(
          await egressRuntime(),
          `for i in $(seq ${TLS_REQUESTS}); do curl -sf -o /dev/null --cacert ${CA}.${Deno.pid} -H "Authorization: Bearer $BENCH_KEY" https://other.test:${p.other}/small || exit 1; done`,
        );
      },
    },
  },
];

await runChild(cases);
