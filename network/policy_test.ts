import {
  assert,
  assertEquals,
  assertFalse,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { forbiddenAddress } from "./addresses.ts";
import { EgressPolicy, parseHostPattern } from "./policy.ts";

Deno.test("policy: patterns match names, wildcards, ports; deny wins; default ports 80 and 443", () => {
  const policy = EgressPolicy.create({
    network: {
      allow: ["pypi.org", "*.github.com", "api.test:8443", "any.test:*"],
      deny: ["gist.github.com"],
    },
  });
  const allowed = (host: string, port: number) =>
    policy.decide(host, port).allowed;
  assert(allowed("pypi.org", 443));
  assert(allowed("PyPI.org.", 80));
  assertFalse(allowed("pypi.org", 8080));
  assertFalse(allowed("files.pypi.org", 443));
  assert(allowed("api.github.com", 443));
  assertFalse(allowed("github.com", 443));
  assertFalse(allowed("gist.github.com", 443));
  assertEquals(
    policy.decide("gist.github.com", 443).reason,
    'gist.github.com:443 is denied by the pattern "gist.github.com"',
  );
  assert(allowed("api.test", 8443));
  assertFalse(allowed("api.test", 443));
  assert(allowed("any.test", 22));
  assertEquals(
    policy.decide("pypi.org", 22).reason,
    'pypi.org: port 22 is not allowed (the pattern "pypi.org" allows 80 and 443)',
  );
  assertEquals(
    policy.decide("example.com", 443).reason,
    "example.com is not in the allowed hosts",
  );
  const none = EgressPolicy.create({ network: { allow: [] } });
  assert(none.empty);
  assertFalse(none.decide("example.com", 443).allowed);
  assert(EgressPolicy.create({ allowNet: true }).decide("x.y", 5).allowed);
});

Deno.test("policy: IP literals and IPv6 patterns parse; bad ones are refused with the pattern named", () => {
  assertEquals(parseHostPattern("[2001:db8::1]:443").host, "2001:db8::1");
  assertEquals(parseHostPattern("203.0.113.7").port, undefined);
  for (
    const bad of [
      "",
      "a b",
      "*.*.x",
      "x*.com",
      "host:0",
      "host:abc",
      "[::1",
      "[nope]:80",
      "-bad.com",
    ]
  ) {
    assertThrows(() => parseHostPattern(bad), RangeError);
  }
});

Deno.test("policy: secrets need a name, hosts without ports and a value; the value is never in a message or description", () => {
  const value = "super-secret-value";
  assertThrows(
    () =>
      EgressPolicy.create({ secrets: { "1BAD": { hosts: ["a.com"], value } } }),
    RangeError,
    "environment variable name",
  );
  assertThrows(
    () => EgressPolicy.create({ secrets: { K: { hosts: [], value } } }),
    RangeError,
    "no host",
  );
  assertThrows(
    () => EgressPolicy.create({ secrets: { K: { hosts: ["*"], value } } }),
    RangeError,
  );
  assertThrows(
    () =>
      EgressPolicy.create({
        secrets: { K: { hosts: ["a.com"], value: "a\r\nb" } },
      }),
    RangeError,
    "line break",
  );
  assertThrows(
    () => EgressPolicy.create({ resolve: { "a.com": "not-an-ip" } }),
    RangeError,
    "not an IP address",
  );
  const policy = EgressPolicy.create({
    secrets: { K: { hosts: ["api.example.com"], value } },
    resolve: { "api.example.com": "127.0.0.1" },
  });
  assert(policy.decide("api.example.com", 443).allowed);
  assertFalse(policy.decide("api.example.com", 80).allowed);
  assertEquals(policy.secretsFor("API.example.com").map((s) => s.name), ["K"]);
  assertFalse(JSON.stringify(policy.describe()).includes(value));
});

Deno.test("addresses: loopback, private, shared, link-local, metadata, ULA and embedded IPv4 are refused; public ones pass", () => {
  for (
    const address of [
      "127.0.0.1",
      "127.8.9.10",
      "10.0.0.1",
      "172.16.5.4",
      "172.31.255.255",
      "192.168.1.1",
      "100.64.0.1",
      "100.100.100.200",
      "169.254.169.254",
      "169.254.1.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fd00:ec2::254",
      "fc00::1",
      "fe80::1",
      "[::1]",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:169.254.169.254",
      "64:ff9b::a9fe:a9fe",
      "2002:a00:1::",
    ]
  ) {
    assert(forbiddenAddress(address) !== undefined, address);
  }
  for (
    const address of [
      "93.184.216.34",
      "8.8.8.8",
      "172.32.0.1",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
    ]
  ) {
    assertEquals(forbiddenAddress(address), undefined, address);
  }
  assertEquals(
    forbiddenAddress("169.254.169.254"),
    "the cloud metadata address",
  );
});
