import {
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { recordingWeb } from "../../tests/helpers/remote.ts";
import {
  startVercelTestServer,
  TEST_TOKEN,
} from "../../tests/helpers/vercel.ts";
import { VercelSandboxSkillRuntime } from "./runtime.ts";

Deno.test("vercel: the network option reaches the creation request as a custom networkPolicy, and the test server enforces it on commands", async () => {
  await using web = recordingWeb();
  await using server = await startVercelTestServer({
    resolve: { "api.test": "127.0.0.1", "sub.api.test": "127.0.0.1" },
  });
  const runtime = server.runtime({
    network: { allow: ["api.test", "*.api.test"] },
  });
  const port = web.port;
  const result = await runtime.execute({
    command: [
      `curl -sS http://api.test:${port}/ok`,
      `curl -sS http://sub.api.test:${port}/sub`,
      `curl -sS http://other.test:${port}/no`,
    ].join("; "),
  });
  const sandbox = server.server.sandboxes.get(runtime.sandboxId!)!;
  assertEquals(sandbox.body.networkPolicy, {
    mode: "custom",
    allowedDomains: ["api.test", "*.api.test"],
  });
  assertStringIncludes(result.stdout, "allowed answer\nallowed answer\n");
  assertStringIncludes(
    result.stdout,
    "skillrun egress: other.test is not in the allowed hosts",
  );
  assertEquals(web.seen, ["/ok", "/sub"]);
  await runtime.close();
});

Deno.test("vercel: nothing allowed is deny-all, * is allow-all; what Vercel cannot express, and the option beside the raw setting, are refused before any request", async () => {
  await using server = await startVercelTestServer();
  for (
    const [network, policy] of [
      [{ allow: [] }, { mode: "deny-all" }],
      [{ allow: ["a.test"], deny: ["*"] }, { mode: "deny-all" }],
      [{ allow: ["*"] }, { mode: "allow-all" }],
    ] as const
  ) {
    const runtime = server.runtime({ network });
    await runtime.execute({ command: "true" });
    const sandbox = server.server.sandboxes.get(runtime.sandboxId!)!;
    assertEquals(sandbox.body.networkPolicy, policy);
    await runtime.close();
  }
  const calls = server.server.calls.length;
  for (
    const [options, message] of [
      [{ network: { allow: ["api.test:8443"] } }, "not ports"],
      [{ network: { allow: ["[::1]"] } }, "not IP addresses"],
      [
        { network: { allow: ["a.com", "*.b.com"], deny: ["*.x.b.com"] } },
        'its egress denies no host names, and "*.b.com" is allowed',
      ],
      [{ network: { allow: ["a.com"] }, sandboxId: "x" }, "keeps the policy"],
      [
        {
          network: { allow: ["a.com"] },
          sandbox: { networkPolicy: { mode: "deny-all" } },
        },
        "Cannot use network together with sandbox.networkPolicy",
      ],
      [
        { secrets: { K: { hosts: ["a.com"], value: "v-secret" } } },
        "Cannot use the secrets option with Vercel",
      ],
    ] as const
  ) {
    const error = assertThrows(() =>
      new VercelSandboxSkillRuntime({
        apiKey: TEST_TOKEN,
        teamId: "team_test",
        projectId: "prj_test",
        baseUrl: server.url,
        ...options,
      })
    );
    assertStringIncludes((error as Error).message, message);
  }
  assertEquals(server.server.calls.length, calls);
});
