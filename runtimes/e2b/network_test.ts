import {
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { recordingWeb } from "../../tests/helpers/remote.ts";
import { startE2BTestServer, TEST_API_KEY } from "../../tests/helpers/e2b.ts";
import { E2BSkillRuntime } from "./runtime.ts";

Deno.test("e2b: the network option reaches the creation request as network allowOut/denyOut, and the test server enforces it on commands", async () => {
  await using web = recordingWeb();
  await using server = await startE2BTestServer({
    resolve: { "api.test": "127.0.0.1", "sub.api.test": "127.0.0.1" },
  });
  const runtime = server.runtime({
    network: { allow: ["api.test", "*.api.test"], deny: ["other.test"] },
  });
  const port = web.port;
  const result = await runtime.execute({
    command: [
      `curl -sS http://api.test:${port}/ok`,
      `curl -sS http://sub.api.test:${port}/sub`,
      `curl -sS http://other.test:${port}/no`,
    ].join("; "),
  });
  const [sandbox] = [...server.server.sandboxes.values()];
  assertEquals(sandbox!.network, {
    allowOut: ["api.test", "*.api.test"],
    denyOut: ["0.0.0.0/0"],
  });
  assertEquals(sandbox!.allowInternetAccess, null);
  assertStringIncludes(result.stdout, "allowed answer\nallowed answer\n");
  assertStringIncludes(
    result.stdout,
    "skillrun egress: other.test is not in the allowed hosts",
  );
  assertEquals(web.seen, ["/ok", "/sub"]);
  await runtime.close();
});

Deno.test("e2b: allow-all sends empty lists; what E2B cannot express, and the option beside the raw settings, are refused before any request", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime({ network: { allow: ["*"] } });
  await runtime.execute({ command: "true" });
  const [sandbox] = [...server.server.sandboxes.values()];
  assertEquals(sandbox!.network, { allowOut: [], denyOut: [] });
  await runtime.close();
  const calls = server.server.calls.length;
  for (
    const [options, message] of [
      [{ network: { allow: ["api.test:8443"] } }, "not ports"],
      [{ network: { allow: ["10.0.0.1"] } }, "not IP addresses"],
      [
        { network: { allow: ["*.a.com"], deny: ["evil.a.com"] } },
        'its egress denies no host names, and "*.a.com" is allowed',
      ],
      [
        { network: { allow: ["*"], deny: ["evil.a.com"] } },
        'allow "*" lets every host out',
      ],
      [{ network: { allow: ["a.com"] }, sandboxId: "x" }, "keeps the policy"],
      [
        { network: { allow: ["a.com"] }, sandbox: { network: {} } },
        "Cannot use network together with sandbox.network",
      ],
      [
        {
          network: { allow: ["a.com"] },
          sandbox: { allowInternetAccess: false },
        },
        "Cannot use network together with sandbox.allowInternetAccess",
      ],
      [
        { secrets: { K: { hosts: ["a.com"], value: "v-secret" } } },
        "Cannot use the secrets option with E2B",
      ],
    ] as const
  ) {
    const error = assertThrows(() =>
      new E2BSkillRuntime({
        apiKey: TEST_API_KEY,
        baseUrl: server.url,
        ...options,
      })
    );
    assertStringIncludes((error as Error).message, message);
  }
  assertEquals(server.server.calls.length, calls);
});
