import {
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { recordingWeb } from "../../tests/helpers/remote.ts";
import {
  startTestServer,
  TEST_API_KEY,
} from "../../tests/helpers/opensandbox.ts";
import { OpenSandboxSkillRuntime } from "./runtime.ts";

Deno.test("opensandbox: the network option reaches the creation request as networkPolicy, and the test server enforces it on commands", async () => {
  await using web = recordingWeb();
  await using server = await startTestServer({
    resolve: { "api.test": "127.0.0.1", "evil.api.test": "127.0.0.1" },
  });
  const runtime = server.runtime({
    network: { allow: ["api.test", "*.api.test"], deny: ["evil.api.test"] },
  });
  const port = web.port;
  const result = await runtime.execute({
    command: [
      `curl -sS http://api.test:${port}/ok`,
      `curl -sS http://evil.api.test:${port}/no`,
      `curl -sS http://other.test:${port}/no`,
    ].join("; "),
  });
  const [sandbox] = [...server.server.sandboxes.values()];
  assertEquals(
    (sandbox!.request as Record<string, unknown>).networkPolicy,
    {
      defaultAction: "deny",
      egress: [
        { action: "deny", target: "evil.api.test" },
        { action: "allow", target: "api.test" },
        { action: "allow", target: "*.api.test" },
      ],
    },
  );
  assertStringIncludes(result.stdout, "allowed answer\n");
  assertStringIncludes(
    result.stdout,
    `skillrun egress: evil.api.test:${port} is denied by the pattern "evil.api.test:*"`,
  );
  assertStringIncludes(
    result.stdout,
    "skillrun egress: other.test is not in the allowed hosts",
  );
  assertEquals(web.seen, ["/ok"]);
});

Deno.test("opensandbox: a sandbox created without the option has no networkPolicy; what OpenSandbox cannot express is refused before any request", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  const [sandbox] = [...server.server.sandboxes.values()];
  assertEquals(
    (sandbox!.request as Record<string, unknown>).networkPolicy,
    undefined,
  );
  for (
    const [options, message] of [
      [{ network: { allow: ["api.test:8443"] } }, "not ports"],
      [{ network: { allow: ["10.0.0.1"] } }, "not IP addresses"],
      [{ network: { allow: ["a.com"] }, sandboxId: "x" }, "keeps the policy"],
      [
        { secrets: { K: { hosts: ["a.com"], value: "v-secret" } } },
        "Cannot use the secrets option with OpenSandbox",
      ],
    ] as const
  ) {
    const error = assertThrows(() =>
      new OpenSandboxSkillRuntime({
        baseUrl: server.url,
        apiKey: TEST_API_KEY,
        ...options,
      })
    );
    assertStringIncludes((error as Error).message, message);
  }
});
