import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { UsageError } from "./_args.ts";
import { EGRESS_FLAGS, egressOptions } from "./_egress.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));
const cli = hostPath.join(repo, "cli.ts");

Deno.test("cli egress flags: turned into options; mistakes are usage errors that never show a secret", () => {
  const env = (name: string) => name === "TOKEN" ? "v4lue-x" : undefined;
  assertEquals(
    egressOptions(
      {
        "allow-host": ["pypi.org", "*.github.com"],
        "deny-host": ["gist.github.com"],
        secret: ["TOKEN=api.example.com,api2.example.com"],
        resolve: ["api.test=127.0.0.1"],
      },
      { isolate: true },
      env,
    ),
    {
      network: {
        allow: ["pypi.org", "*.github.com"],
        deny: ["gist.github.com"],
      },
      secrets: {
        TOKEN: {
          hosts: ["api.example.com", "api2.example.com"],
          value: "v4lue-x",
        },
      },
      resolve: { "api.test": "127.0.0.1" },
    },
  );
  assertEquals(egressOptions({}, { isolate: true }, env), {});
  // --allow-net with a secret: every host, the secret's intercepted.
  assertEquals(
    Object.keys(
      egressOptions({ secret: ["TOKEN=a.com"] }, {
        isolate: true,
        "allow-net": true,
      }, env),
    ),
    ["secrets"],
  );
  const mistakes: [
    Record<string, string[]>,
    Record<string, boolean>,
    string,
  ][] = [
    [{ "allow-host": ["a.com"] }, {}, 'needs "--isolate"'],
    [
      { "allow-host": ["a.com"] },
      { isolate: true, "allow-net": true },
      "not both",
    ],
    [{ "allow-host": ["a b"] }, { isolate: true }, "is not a host name"],
    [{ secret: ["TOKEN"] }, { isolate: true }, "must be NAME=HOST"],
    [{ secret: ["MISSING=a.com"] }, { isolate: true }, "MISSING is not set"],
    [{ secret: ["TOKEN=a.com:99"] }, { isolate: true }, "without a port"],
    [{ resolve: ["a.com"] }, { isolate: true }, "must be HOST=IP"],
    [{ resolve: ["a.com=nope"] }, { isolate: true }, "not an IP address"],
  ];
  for (const [lists, flags, message] of mistakes) {
    const error = assertThrows(
      () => egressOptions(lists, flags, env),
      UsageError,
    );
    assertStringIncludes(error.message, message);
    assertFalse(error.message.includes("v4lue-x"));
  }
});

Deno.test("cli: run --isolate --allow-host reaches the allowed host through the proxy, 403 for others; --secret leaves only a placeholder inside", async () => {
  const seen: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      seen.push(new URL(request.url).pathname);
      return new Response("hello from the host\n");
    },
  );
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    const skills = hostPath.join(temp, "skills");
    await Deno.mkdir(hostPath.join(skills, "probe"), { recursive: true });
    await Deno.writeTextFile(
      hostPath.join(skills, "probe", "SKILL.md"),
      "---\nname: probe\ndescription: A skill for the CLI tests.\n---\nRun things.\n",
    );
    const port = server.addr.port;
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "-A",
        cli,
        "run",
        "--isolate",
        "--allow-host",
        `api.test:${port}`,
        "--resolve",
        "api.test=127.0.0.1",
        "--secret",
        "CLI_TOKEN=api.test",
        skills,
        "probe",
        "--",
        `curl -sS http://api.test:${port}/ok; curl -sS http://other.test/; echo "token=$CLI_TOKEN"`,
      ],
      cwd: temp,
      env: { NO_COLOR: "1", CLI_TOKEN: "cli-secret-value-1" },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    assertStringIncludes(stdout, "hello from the host\n");
    assertStringIncludes(
      stdout,
      "skillrun egress: other.test is not in the allowed hosts\n",
    );
    assert(/token=skillrun_placeholder_[0-9a-f]{32}\n/.test(stdout), stdout);
    assertFalse(stdout.includes("cli-secret-value-1"));
    assertFalse(stderr.includes("cli-secret-value-1"));
    assertEquals(seen, ["/ok"]);
  } finally {
    await server.shutdown();
    await Deno.remove(temp, { recursive: true });
  }
});

const EGRESS_FLAGS_AND_ISOLATE = {
  ...EGRESS_FLAGS,
  isolate: "boolean",
} as const;

Deno.test("cli args: a repeatable flag keeps every value in order, others stay single", async () => {
  const { parseArgs } = await import("./_args.ts");
  const parsed = parseArgs(
    ["--allow-host", "a.com", "--isolate", "--allow-host=b.com", "x"],
    { "allow-host": "list", isolate: "boolean" },
  );
  assertEquals(parsed.lists["allow-host"], ["a.com", "b.com"]);
  // The CLI's one list rule splits at commas; a secret's hosts stay together.
  const secrets = parseArgs(
    [
      "--secret",
      "A=h1.com,h2.com",
      "--secret=B=h3.com",
      "--isolate",
      "--allow-host",
      "h1.com,h3.com",
    ],
    EGRESS_FLAGS_AND_ISOLATE,
  );
  assertEquals(
    egressOptions(secrets.lists, secrets.flags, (name) => `value-of-${name}`),
    {
      network: { allow: ["h1.com", "h3.com"] },
      secrets: {
        A: { hosts: ["h1.com", "h2.com"], value: "value-of-A" },
        B: { hosts: ["h3.com"], value: "value-of-B" },
      },
    },
  );
  assertEquals(parsed.flags.isolate, true);
  assertEquals(parsed.positionals, ["x"]);
  assertThrows(
    () => parseArgs(["--isolate", "--isolate"], { isolate: "boolean" }),
    UsageError,
    "more than once",
  );
});

Deno.test("cli: doctor --isolate with egress flags reports the policy and where it is enforced, never a secret value", async () => {
  const run = (json: boolean) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "-A",
        cli,
        "doctor",
        "--isolate",
        "--allow-host",
        "pypi.org",
        "--deny-host",
        "evil.pypi.org",
        "--secret",
        "DOCTOR_TOKEN=api.example.com",
        ...(json ? ["--json"] : []),
      ],
      env: { NO_COLOR: "1", DOCTOR_TOKEN: "doctor-secret-value-7" },
      stdin: "null",
    }).output();
  const json = await run(true);
  const text = new TextDecoder().decode(json.stdout);
  const report = JSON.parse(text);
  assertEquals(report.commands.network, "proxy");
  assertEquals(report.commands.egress.allow, ["pypi.org"]);
  assertEquals(report.commands.egress.deny, ["evil.pypi.org"]);
  assertEquals(report.commands.egress.secrets, {
    DOCTOR_TOKEN: ["api.example.com"],
  });
  assertStringIncludes(report.commands.egress.enforcedBy, "Unix socket");
  assertFalse(text.includes("doctor-secret-value-7"));
  const human = await run(false);
  const lines = new TextDecoder().decode(human.stdout);
  assertStringIncludes(
    lines,
    "network: only through the egress proxy, by policy",
  );
  assertStringIncludes(lines, "allow: pypi.org");
  assertStringIncludes(lines, "secret DOCTOR_TOKEN: a placeholder inside");
  assertFalse(lines.includes("doctor-secret-value-7"));
});
