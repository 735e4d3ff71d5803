/**
 * The proxy-mediated network of the isolated mode, end to end: real
 * sandboxes, real clients inside (curl, Python, Deno), real HTTP and HTTPS
 * servers on the host's loopback reached through the egress proxy.
 */
import {
  assert,
  assertEquals,
  assertFalse,
  assertRejects,
  assertStringIncludes,
} from "../helpers/assert.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
} from "../../runtimes/local/isolated.ts";
import { checkTimeoutMs } from "../../runtimes/command_core.ts";
import { LocalSkillRuntime } from "../../runtimes/local/runtime.ts";
import type { BubblewrapLauncherOptions } from "../../runtimes/local/isolated.ts";
import { CertificateAuthority } from "../../network/ca.ts";
import type { NetworkEvent } from "../../network/proxy.ts";

/** Why the sandbox cannot run here, or `null` when it can. */
const UNAVAILABLE: string | null = await BubblewrapLauncher.create().then(
  (launcher) => launcher.close().then(() => null),
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

/** Which clients exist inside the sandbox (the bind mounts decide). */
const TOOLS: Readonly<Record<string, boolean>> = UNAVAILABLE === null
  ? await (async () => {
    const launcher = await BubblewrapLauncher.create();
    const found = await launcher.launch({
      command:
        "for t in curl python3; do command -v $t >/dev/null && echo $t; done",
      cwd: "/",
      env: {},
      writablePaths: [],
      timeoutMs: checkTimeoutMs(10_000),
      maxOutputBytes: 1024,
    });
    await launcher.close();
    const names = found.stdout.split("\n");
    return { curl: names.includes("curl"), python3: names.includes("python3") };
  })()
  : {};

/**
 * A test that needs bubblewrap (and some clients): failing loudly, saying
 * why, when the machine lacks them (never silently skipped).
 */
function sandboxTest(
  name: string,
  needs: readonly string[],
  fn: () => Promise<void>,
): void {
  Deno.test({
    name,
    fn: async () => {
      if (UNAVAILABLE !== null) {
        throw new Error(`The isolated mode is unavailable: ${UNAVAILABLE}`);
      }
      const missing = needs.filter((t) => !TOOLS[t]);
      if (missing.length > 0) {
        throw new Error(
          `Missing inside the sandbox: ${
            missing.join(", ")
          } (install them under /usr/bin: apt-get install curl python3)`,
        );
      }
      await fn();
    },
  });
}

interface Seen {
  readonly host: string | null;
  readonly authorization: string | null;
  readonly path: string;
}

/** An HTTP server on the host's loopback that records what it sees. */
function httpServer(): { port: number; seen: Seen[] } & AsyncDisposable {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      seen.push({
        host: request.headers.get("host"),
        authorization: request.headers.get("authorization"),
        path: url.pathname,
      });
      return new Response(`answer from ${url.pathname}\n`);
    },
  );
  return {
    port: server.addr.port,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** An HTTPS server for one name, its certificate from a test authority. */
async function httpsServer(
  authority: CertificateAuthority,
  name: string,
): Promise<{ port: number; seen: Seen[] } & AsyncDisposable> {
  const issued = await authority.issue(name);
  const seen: Seen[] = [];
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      cert: issued.cert,
      key: issued.key,
      onListen() {},
    },
    (request) => {
      seen.push({
        host: request.headers.get("host"),
        authorization: request.headers.get("authorization"),
        path: new URL(request.url).pathname,
      });
      // Never echoes the header: the command must not see the value.
      return new Response(`tls answer from ${name}\n`);
    },
  );
  return {
    port: server.addr.port,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function runtimeWith(
  options: BubblewrapLauncherOptions,
): Promise<LocalSkillRuntime> {
  return await LocalSkillRuntime.create({ isolate: options });
}

sandboxTest(
  "egress: an allowed name answers curl, Python and Deno inside the sandbox",
  ["curl", "python3"],
  async () => {
    await using server = httpServer();
    const events: NetworkEvent[] = [];
    await using runtime = await runtimeWith({
      network: { allow: [`api.test:${server.port}`] },
      resolve: { "api.test": "127.0.0.1" },
      onNetwork: (e) => events.push(e),
    });
    const url = `http://api.test:${server.port}`;
    const curl = await runtime.execute({ command: `curl -sS ${url}/curl` });
    assertEquals(curl.stdout, "answer from /curl\n", curl.stderr);
    const python = await runtime.execute({
      command:
        `python3 -c "import urllib.request;print(urllib.request.urlopen('${url}/python').read().decode(), end='')"`,
    });
    assertEquals(python.stdout, "answer from /python\n", python.stderr);
    const deno = await runtime.execute({
      command:
        `deno eval --quiet 'console.log(await (await fetch("${url}/deno")).text())'`,
    });
    assertStringIncludes(deno.stdout, "answer from /deno", deno.stderr);
    assertEquals(server.seen.map((s) => s.path), ["/curl", "/python", "/deno"]);
    assertEquals(server.seen[0]!.host, `api.test:${server.port}`);
    assert(events.length >= 3);
    assert(events.every((e) => e.allowed && e.host === "api.test"));
    assertEquals(events[0]!.address, "127.0.0.1");
  },
);

sandboxTest(
  "egress: a denied name and an unlisted one get 403 with the reason",
  ["curl", "python3"],
  async () => {
    await using server = httpServer();
    const events: NetworkEvent[] = [];
    await using runtime = await runtimeWith({
      network: {
        allow: [`*.test:${server.port}`],
        deny: [`evil.test:${server.port}`],
      },
      resolve: {
        "good.test": "127.0.0.1",
        "evil.test": "127.0.0.1",
        "unlisted.example": "127.0.0.1",
      },
      onNetwork: (e) => events.push(e),
    });
    const denied = await runtime.execute({
      command: `curl -sS -w '%{http_code}' http://evil.test:${server.port}/x`,
    });
    assertEquals(
      denied.stdout,
      `skillrun egress: evil.test:${server.port} is denied by the pattern "evil.test:${server.port}"\n403`,
    );
    const unlisted = await runtime.execute({
      command:
        `curl -sS -w '%{http_code}' http://unlisted.example:${server.port}/x`,
    });
    assertEquals(
      unlisted.stdout,
      "skillrun egress: unlisted.example is not in the allowed hosts\n403",
    );
    // Over CONNECT the reason is in the status line, which Python shows.
    const tunnel = await runtime.execute({
      command:
        `python3 -c "import urllib.request;urllib.request.urlopen('https://unlisted.example/')" 2>&1 | tail -1`,
    });
    assertStringIncludes(tunnel.stdout, "403");
    assertStringIncludes(
      tunnel.stdout,
      "unlisted.example is not in the allowed hosts",
    );
    const good = await runtime.execute({
      command: `curl -sS http://good.test:${server.port}/ok`,
    });
    assertEquals(good.stdout, "answer from /ok\n");
    assertEquals(server.seen.map((s) => s.path), ["/ok"]);
    assertEquals(
      events.filter((e) => !e.allowed).map((e) => e.host),
      ["evil.test", "unlisted.example", "unlisted.example"],
    );
  },
);

sandboxTest(
  "egress: a name resolving to a loopback, private or metadata address is refused, even when allowed",
  ["curl"],
  async () => {
    await using server = httpServer();
    const answers: Record<string, string[]> = {
      "rebind.test": ["127.0.0.1"],
      "private.test": ["10.1.2.3"],
      "metadata.test": ["169.254.169.254"],
      "ula.test": ["fd00:ec2::254"],
      "mapped.test": ["::ffff:127.0.0.1"],
    };
    await using runtime = await runtimeWith({
      network: { allow: ["*.test:*", "127.0.0.1:*", "169.254.169.254"] },
      lookup: (host) => Promise.resolve(answers[host] ?? []),
    });
    for (const [name, [address]] of Object.entries(answers)) {
      const result = await runtime.execute({
        command: `curl -sS -w '%{http_code}' http://${name}:${server.port}/`,
      });
      assert(
        result.stdout.startsWith(
          `skillrun egress: ${name} resolves to ${address}, `,
        ) && result.stdout.endsWith("403"),
        `${name}: ${result.stdout} ${result.stderr}`,
      );
    }
    const literal = await runtime.execute({
      command:
        `curl -sS --noproxy '' -w '%{http_code}' http://127.0.0.1:${server.port}/`,
    });
    assertEquals(
      literal.stdout,
      "skillrun egress: 127.0.0.1 is a loopback address\n403",
    );
    const metadata = await runtime.execute({
      command:
        "curl -sS -w '%{http_code}' http://169.254.169.254/latest/meta-data/",
    });
    assertEquals(
      metadata.stdout,
      "skillrun egress: 169.254.169.254 is the cloud metadata address\n403",
    );
    assertEquals(server.seen.length, 0);
  },
);

sandboxTest(
  "egress: CONNECT to a port the pattern does not list is refused",
  ["curl"],
  async () => {
    await using server = httpServer();
    await using runtime = await runtimeWith({
      network: { allow: ["api.test"] },
      resolve: { "api.test": "127.0.0.1" },
    });
    const result = await runtime.execute({
      command:
        `curl -sS -v -p http://api.test:${server.port}/ 2>&1 | grep -i 'HTTP/1.1 403'`,
    });
    assertStringIncludes(
      result.stdout,
      `api.test: port ${server.port} is not allowed (the pattern "api.test" allows 80 and 443)`,
    );
    assertEquals(server.seen.length, 0);
  },
);

sandboxTest(
  "egress: a program that ignores the proxy variables reaches nothing",
  ["curl"],
  async () => {
    await using server = httpServer();
    await using runtime = await runtimeWith({
      network: { allow: ["*:*"] },
      resolve: { "api.test": "127.0.0.1" },
    });
    const direct = await runtime.execute({
      command: [
        `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${server.port}/direct; echo "loopback=$?"`,
        `curl -sS --noproxy '*' --max-time 5 http://1.1.1.1/; echo "public=$?"`,
        `(exec 3<>/dev/tcp/8.8.8.8/53) 2>/dev/null; echo "tcp=$?"`,
        "awk 'NR > 2 { print $1 }' /proc/net/dev",
      ].join("; "),
    });
    assertStringIncludes(direct.stdout, "loopback=7");
    assertStringIncludes(direct.stdout, "public=7");
    assertStringIncludes(direct.stdout, "tcp=1");
    assertEquals(direct.stdout.trim().split("\n").at(-1), "lo:");
    assertEquals(server.seen.length, 0);
    // The same server through the proxy answers: the refusal above is the
    // missing network, not a dead server.
    const proxied = await runtime.execute({
      command: `curl -sS http://api.test:${server.port}/proxied`,
    });
    assertEquals(proxied.stdout, "answer from /proxied\n");
  },
);

sandboxTest(
  "egress: a secret's placeholder becomes its value only for its hosts, over the sandbox's CA (curl, Deno, Python), and never appears inside",
  ["curl", "python3"],
  async () => {
    const upstreamCa = await CertificateAuthority.create("test upstream CA");
    await using secretHost = await httpsServer(upstreamCa, "secret.test");
    await using otherHost = await httpsServer(upstreamCa, "other.test");
    const value = `real-${crypto.randomUUID()}`;
    const events: NetworkEvent[] = [];
    await using runtime = await runtimeWith({
      network: {
        allow: [
          `secret.test:${secretHost.port}`,
          `other.test:${otherHost.port}`,
        ],
      },
      secrets: { API_KEY: { hosts: ["secret.test"], value } },
      resolve: { "secret.test": "127.0.0.1", "other.test": "127.0.0.1" },
      upstreamCaCerts: [upstreamCa.certificate],
      onNetwork: (e) => events.push(e),
    });
    const workspace = runtime.cwd;
    const caFile = await Deno.makeTempFile({ dir: workspace, suffix: ".pem" });
    await Deno.writeTextFile(caFile, upstreamCa.certificate);
    try {
      const secretUrl = `https://secret.test:${secretHost.port}`;
      const otherUrl = `https://other.test:${otherHost.port}`;
      const curl = await runtime.execute({
        command: [
          `curl -sS -H "Authorization: Bearer $API_KEY" ${secretUrl}/curl`,
          // Tunnelled untouched: its own certificate, checked against its CA.
          `curl -sS --cacert ${caFile} -H "Authorization: Bearer $API_KEY" ${otherUrl}/curl`,
        ].join(" && "),
      });
      assertEquals(
        curl.stdout,
        "tls answer from secret.test\ntls answer from other.test\n",
        curl.stderr,
      );
      const deno = await runtime.execute({
        command:
          `deno eval --quiet 'const r = await fetch("${secretUrl}/deno", { headers: { authorization: "Bearer " + Deno.env.get("API_KEY") } }); console.log(await r.text())'`,
      });
      assertStringIncludes(
        deno.stdout,
        "tls answer from secret.test",
        deno.stderr,
      );
      const python = await runtime.execute({
        command:
          `python3 -c "import os,urllib.request as u;print(u.urlopen(u.Request('${secretUrl}/python',headers={'Authorization':'Bearer '+os.environ['API_KEY']})).read().decode(),end='')"`,
      });
      assertEquals(
        python.stdout,
        "tls answer from secret.test\n",
        python.stderr,
      );
      assertEquals(
        secretHost.seen.map((s) => [s.path, s.authorization]),
        [
          ["/curl", `Bearer ${value}`],
          ["/deno", `Bearer ${value}`],
          ["/python", `Bearer ${value}`],
        ],
      );
      assertEquals(otherHost.seen.length, 1);
      const placeholder = otherHost.seen[0]!.authorization!.slice(7);
      assert(placeholder.startsWith("skillrun_placeholder_"));
      assertFalse(placeholder.includes(value));
      // Nowhere inside: environment, every process's environ and command
      // line, the files it can read, the output.
      const look = await runtime.execute({
        command: [
          "env",
          "cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'",
          "grep -rs . /run/skillrun /tmp 2>/dev/null | head -c 200000",
          `echo "API_KEY=$API_KEY"`,
        ].join("; "),
      });
      assertStringIncludes(look.stdout, `API_KEY=${placeholder}`);
      assertFalse(look.stdout.includes(value));
      assertFalse(look.stderr.includes(value));
      assertFalse(JSON.stringify(events).includes(value));
      assertFalse(
        JSON.stringify((runtime.launcher as BubblewrapLauncher).report)
          .includes(
            value,
          ),
      );
      const injected = events.filter((e) => e.secrets.length > 0);
      assertEquals(injected.length, 3);
      assert(injected.every((e) => e.host === "secret.test" && e.intercepted));
      assertEquals(injected[0]!.secrets, ["API_KEY"]);
    } finally {
      await Deno.remove(caFile);
    }
  },
);

Deno.test("egress: invalid patterns are refused when the runtime is made, and nothing starts", async () => {
  for (
    const [network, message] of [
      [{ allow: ["exa mple.com"] }, '"exa mple.com" is not a host name'],
      [{ allow: ["*.*.com"] }, "a wildcard may only be"],
      [{ allow: ["api.com:99999"] }, 'the port "99999" is not a number'],
      [{ allow: ["ok.com"], deny: ["foo*"] }, "a wildcard may only be"],
    ] as const
  ) {
    const error = await assertRejects(
      () => LocalSkillRuntime.create({ isolate: { network } }),
      RangeError,
    );
    assertStringIncludes(error.message, message);
  }
  await assertRejects(
    () =>
      LocalSkillRuntime.create({
        isolate: { allowNet: true, network: { allow: ["a.com"] } },
      }),
    RangeError,
    "give one",
  );
  const error = await assertRejects(
    () =>
      LocalSkillRuntime.create({
        isolate: { secrets: { KEY: { hosts: ["a.com:8443"], value: "v-1" } } },
      }),
    RangeError,
  );
  assertFalse(error.message.includes("v-1"));
});
