import { assertEquals, assertStringIncludes } from "./helpers/assert.ts";
import { PROJECT_CONFIG } from "./helpers/testing.ts";
import { startE2BServer } from "./servers/e2b.ts";
import { startVercelServer } from "./servers/vercel.ts";
import { startDaytonaServer } from "./servers/daytona.ts";
import { startDenoSandboxServer } from "./servers/deno_sandbox.ts";
import { startOpenSandboxServer } from "./servers/opensandbox.ts";
import { startAioServer } from "./servers/aio.ts";
import { remoteRuntime } from "../cli/_remote.ts";
import { UsageError } from "../cli/_args.ts";
import { assertThrows } from "./helpers/assert.ts";

const CLI = new URL("../cli.ts", import.meta.url).pathname;
const SKILLS = new URL("../examples/skills", import.meta.url).pathname;

async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `--config=${PROJECT_CONFIG}`, CLI, ...args],
    env,
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    code: output.code,
    stdout: decode(output.stdout),
    stderr: decode(output.stderr),
  };
}

Deno.test("cli run --runtime e2b prepares the skill in an E2B sandbox (options from the environment) and runs the command there", async () => {
  await using server = startE2BServer({ apiKey: "cli-key" });
  const dir = await Deno.makeTempDir();
  try {
    const result = await cli(
      [
        "run",
        "--runtime",
        "e2b",
        "--conversation",
        "cli-1",
        "--root",
        `${dir}/conversations`,
        SKILLS,
        "json-to-table",
        "--",
        "pwd; ls",
      ],
      {
        E2B_API_KEY: "cli-key",
        E2B_API_URL: server.url,
        E2B_SANDBOX_URL: server.url,
      },
    );
    assertEquals(result.code, 0, result.stderr);
    assertStringIncludes(result.stdout, `${dir}/conversations/cli-1/skills/`);
    assertStringIncludes(result.stdout, "SKILL.md");
    assertEquals(server.calls.includes("POST /sandboxes"), true);
    // Closing paused the conversation's sandbox.
    assertEquals([...server.sandboxes.values()][0]?.state, "paused");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli run --sandbox vercel runs in a Vercel sandbox; --runtime vercel with a missing token is a usage error naming the variable", async () => {
  await using server = startVercelServer({ token: "cli-token" });
  const dir = await Deno.makeTempDir();
  try {
    const result = await cli(
      [
        "run",
        "--sandbox",
        "vercel",
        "--conversation",
        "cli-2",
        "--root",
        `${dir}/conversations`,
        SKILLS,
        "json-to-table",
        "--",
        "ls",
      ],
      {
        VERCEL_TOKEN: "cli-token",
        VERCEL_TEAM_ID: "team_cli",
        VERCEL_PROJECT_ID: "prj_cli",
        VERCEL_API_URL: server.url,
      },
    );
    assertEquals(result.code, 0, result.stderr);
    assertStringIncludes(result.stdout, "SKILL.md");
    assertEquals(server.calls.includes("POST /v3/sandboxes"), true);
    const missing = await cli(
      ["run", "--runtime", "vercel", SKILLS, "json-to-table", "--", "ls"],
      {},
    );
    assertEquals(missing.code, 2);
    assertStringIncludes(missing.stderr, "VERCEL_TOKEN");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli run --sandbox daytona runs in a Daytona sandbox; --runtime daytona with a missing key is a usage error naming the variable", async () => {
  await using server = startDaytonaServer({ apiKey: "cli-key" });
  const result = await cli(
    [
      "run",
      "--sandbox",
      "daytona",
      "--conversation",
      "cli-3",
      SKILLS,
      "json-to-table",
      "--",
      "ls",
    ],
    { DAYTONA_API_KEY: "cli-key", DAYTONA_API_URL: server.url },
  );
  assertEquals(result.code, 0, result.stderr);
  assertStringIncludes(result.stdout, "SKILL.md");
  const [box] = [...server.sandboxes.values()];
  assertEquals(box?.labels["skillrun.conversation"], "cli-3");
  const missing = await cli(
    ["run", "--runtime", "daytona", SKILLS, "json-to-table", "--", "ls"],
    {},
  );
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, "DAYTONA_API_KEY");
});

Deno.test("cli run --sandbox deno-sandbox runs in a Deno Sandbox, doctor probes it; --runtime deno-sandbox without DENO_DEPLOY_TOKEN is a usage error naming it", async () => {
  await using server = startDenoSandboxServer({ token: "ddo_cli_token" });
  const result = await cli(
    [
      "run",
      "--sandbox",
      "deno-sandbox",
      "--conversation",
      "cli-4",
      SKILLS,
      "json-to-table",
      "--",
      "ls; pwd",
    ],
    {
      DENO_DEPLOY_TOKEN: "ddo_cli_token",
      DENO_SANDBOX_ENDPOINT: server.url,
      DENO_DEPLOY_ENDPOINT: server.url,
    },
  );
  assertEquals(result.code, 0, result.stderr);
  assertStringIncludes(result.stdout, "SKILL.md");
  assertStringIncludes(result.stdout, "/home/app/conversations/cli-4/skills/");
  const [box] = [...server.sandboxes.values()];
  assertEquals(box?.labels["skillrun.conversation"], "cli-4");
  // doctor's probe: `true` in a sandbox made as run makes it, then removed.
  const doctor = await cli(["doctor", "--sandbox", "deno-sandbox"], {
    DENO_DEPLOY_TOKEN: "ddo_cli_token",
    DENO_SANDBOX_ENDPOINT: server.url,
    DENO_DEPLOY_ENDPOINT: server.url,
  });
  assertEquals(doctor.code, 0, doctor.stderr);
  assertStringIncludes(doctor.stdout, "set     DENO_DEPLOY_TOKEN");
  assertStringIncludes(doctor.stdout, 'probe: "true" in a sandbox: exit 0');
  assertEquals(doctor.stdout.includes("ddo_cli_token"), false);
  assertEquals(
    [...server.sandboxes.values()].filter((b) => b.status === "running")
      .length,
    1,
  );
  const missing = await cli(
    ["run", "--runtime", "deno-sandbox", SKILLS, "json-to-table", "--", "ls"],
    {},
  );
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, "DENO_DEPLOY_TOKEN");
});

Deno.test("cli run --runtime opensandbox|aio runs in that sandbox (a conversation under --root there); a missing URL is a usage error naming the variable", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using open = await startOpenSandboxServer({
      apiKey: "os-cli-key",
      cwd: root,
    });
    await using aio = startAioServer({ token: "aio-cli-token", home: root });
    for (
      const [kind, env] of [
        ["opensandbox", {
          OPEN_SANDBOX_URL: open.origin,
          OPEN_SANDBOX_API_KEY: "os-cli-key",
        }],
        ["aio", {
          AIO_SANDBOX_URL: aio.baseUrl,
          AIO_SANDBOX_TOKEN: "aio-cli-token",
        }],
      ] as const
    ) {
      const result = await cli(
        [
          "run",
          "--runtime",
          kind,
          "--conversation",
          `cli-${kind}`,
          "--root",
          `${root}/conversations`,
          SKILLS,
          "json-to-table",
          "--",
          "pwd",
        ],
        env,
      );
      assertEquals(result.code, 0, result.stderr);
      assertStringIncludes(result.stdout, `${root}/conversations/cli-${kind}`);
      assertEquals(result.stderr.includes(Object.values(env)[1]!), false);
    }
    assertEquals(open.sandboxes.size, 1);
    const missing = await cli(
      ["run", "--runtime", "aio", SKILLS, "json-to-table", "--", "ls"],
      {},
    );
    assertEquals(missing.code, 2);
    assertStringIncludes(missing.stderr, "AIO_SANDBOX_URL");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("--runtime and --sandbox refuse an unknown kind, each other when they disagree, and --isolate with a remote kind", () => {
  assertThrows(() => remoteRuntime({ runtime: "docker" }), UsageError);
  assertThrows(
    () => remoteRuntime({ sandbox: "local" }),
    UsageError,
    'Unknown sandbox "local"',
  );
  assertThrows(
    () => remoteRuntime({ sandbox: "e2b", runtime: "vercel" }),
    UsageError,
    "disagree",
  );
  assertThrows(
    () => remoteRuntime({ sandbox: "vercel", isolate: true }),
    UsageError,
  );
  assertEquals(
    remoteRuntime(
      { sandbox: "e2b", runtime: "e2b" },
      (name) => name === "E2B_API_KEY" ? "key" : undefined,
    )
      ?.constructor.name,
    "E2BSkillRuntime",
  );
  assertThrows(
    () => remoteRuntime({ runtime: "e2b", isolate: true }),
    UsageError,
  );
  assertEquals(remoteRuntime({ runtime: "local" }), undefined);
});

Deno.test("cli doctor --sandbox vercel: which variables are set (never their values), the network permission, a timed probe in a sandbox removed after; a wrong key is a clear failure", async () => {
  await using server = startVercelServer({ token: "doctor-key-77" });
  const vercelEnv = (token: string) => ({
    VERCEL_TOKEN: token,
    VERCEL_TEAM_ID: "team_doctor",
    VERCEL_PROJECT_ID: "prj_doctor",
    VERCEL_API_URL: server.url,
  });
  const ok = await cli(
    ["doctor", "--sandbox", "vercel", "--json"],
    vercelEnv("doctor-key-77"),
  );
  assertEquals(ok.code, 0, ok.stderr);
  const report = JSON.parse(ok.stdout);
  assertEquals(report.runtime, "vercel");
  assertEquals(report.variables, {
    VERCEL_TOKEN: "set",
    VERCEL_TEAM_ID: "set",
    VERCEL_PROJECT_ID: "set",
    VERCEL_API_URL: "set",
  });
  assertEquals(report.net, "granted");
  assertEquals(report.probe.exitCode, 0);
  assertEquals(report.errors, []);
  assertEquals(server.sandboxes.size, 0);
  const text = await cli(
    ["doctor", "--runtime", "vercel"],
    vercelEnv("doctor-key-77"),
  );
  assertEquals(text.code, 0, text.stderr);
  assertStringIncludes(text.stdout, "set     VERCEL_TOKEN");
  assertStringIncludes(text.stdout, 'probe: "true" in a sandbox: exit 0 in');
  const wrong = await cli(
    ["doctor", "--sandbox", "vercel"],
    vercelEnv("doctor-key-78"),
  );
  assertEquals(wrong.code, 1, wrong.stdout);
  assertStringIncludes(wrong.stdout, "error: ");
  const missing = await cli(["doctor", "--sandbox", "vercel"], {});
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, "VERCEL_TOKEN");
  for (const run of [ok, text, wrong, missing]) {
    for (const secret of ["doctor-key-77", "doctor-key-78", "doctor-key"]) {
      assertEquals(run.stdout.includes(secret), false, run.stdout);
      assertEquals(run.stderr.includes(secret), false, run.stderr);
    }
  }
});
