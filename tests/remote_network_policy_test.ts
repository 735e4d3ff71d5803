import { assertEquals, assertThrows } from "./helpers/assert.ts";
import { toE2BNetworkConfig } from "../runtimes/e2b/network.ts";
import { toVercelNetworkPolicy } from "../runtimes/vercel/network.ts";

Deno.test("remote: the shared policy becomes E2B's allowOut/denyOut and Vercel's networkPolicy; deny patterns an allow pattern reaches are refused", () => {
  const network = {
    allow: ["PyPI.org.", "*.github.com", "pypi.org"],
    deny: ["evil.example.com"], // not reached by any allow: default deny
  };
  assertEquals(toE2BNetworkConfig(network), {
    allowOut: ["pypi.org", "*.github.com"],
    denyOut: ["0.0.0.0/0"],
  });
  assertEquals(toVercelNetworkPolicy(network), {
    mode: "custom",
    allowedDomains: ["pypi.org", "*.github.com"],
  });
  assertEquals(toE2BNetworkConfig({ allow: [] }), {
    allowOut: [],
    denyOut: ["0.0.0.0/0"],
  });
  assertEquals(toVercelNetworkPolicy({ allow: ["*"], deny: ["*"] }), {
    mode: "deny-all",
  });
  for (const translate of [toE2BNetworkConfig, toVercelNetworkPolicy]) {
    for (
      const [deny, allowed] of [
        ["api.github.com", "*.github.com"],
        ["*.x.github.com", "*.github.com"],
        ["*.org", "pypi.org"],
        ["pypi.org", "pypi.org"],
      ] as const
    ) {
      assertThrows(
        () => translate({ allow: ["pypi.org", "*.github.com"], deny: [deny] }),
        RangeError,
        `"${allowed}" is allowed`,
      );
    }
    assertThrows(
      () => translate({ allow: ["a.com:443"] }),
      RangeError,
      "not ports",
    );
    assertThrows(
      () => translate({ allow: ["192.0.2.1"] }),
      RangeError,
      "not IP addresses",
    );
    assertThrows(
      () => translate({ allow: "a.com" } as never),
      RangeError,
      "{ allow: string[]; deny?: string[] }",
    );
  }
});
