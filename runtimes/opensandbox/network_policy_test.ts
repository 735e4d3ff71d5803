import { assertEquals, assertThrows } from "../../tests/helpers/assert.ts";
import { toOpenSandboxNetworkPolicy } from "./network.ts";

Deno.test("opensandbox: the shared policy becomes OpenSandbox's rules; what it cannot express is refused", () => {
  assertEquals(toOpenSandboxNetworkPolicy({ allow: [] }), {
    defaultAction: "deny",
    egress: [],
  });
  assertEquals(
    toOpenSandboxNetworkPolicy({ allow: ["*"], deny: ["*.evil.com"] }),
    {
      defaultAction: "allow",
      egress: [{ action: "deny", target: "*.evil.com" }],
    },
  );
  assertEquals(
    toOpenSandboxNetworkPolicy({ allow: ["PyPI.org.", "*.github.com"] }).egress,
    [
      { action: "allow", target: "pypi.org" },
      { action: "allow", target: "*.github.com" },
    ],
  );
  assertThrows(
    () => toOpenSandboxNetworkPolicy({ allow: ["pypi.org:443"] }),
    RangeError,
    "not ports",
  );
  assertThrows(
    () => toOpenSandboxNetworkPolicy({ allow: ["10.0.0.1"] }),
    RangeError,
    "not IP addresses",
  );
  assertThrows(
    () => toOpenSandboxNetworkPolicy({ allow: ["bad host"] }),
    RangeError,
  );
});
