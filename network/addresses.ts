/**
 * Addresses the egress never connects to unless the user mapped the name on
 * purpose: loopback, private, shared (CGNAT), link-local (cloud metadata
 * included), unique local IPv6, multicast, reserved and unspecified, also
 * when embedded in an IPv6 address (IPv4-mapped, NAT64, 6to4).
 *
 * @module
 */
import { isIPv4, isIPv6 } from "./policy.ts";

const V4_RANGES: readonly [string, number, string][] = [
  ["0.0.0.0", 8, 'an unspecified ("this network") address'],
  ["10.0.0.0", 8, "a private address"],
  ["100.64.0.0", 10, "a shared (CGNAT) address"],
  ["127.0.0.0", 8, "a loopback address"],
  ["169.254.0.0", 16, "a link-local address (cloud metadata lives there)"],
  ["172.16.0.0", 12, "a private address"],
  ["192.0.0.0", 24, "a reserved (IETF protocol) address"],
  ["192.0.2.0", 24, "a documentation address"],
  ["192.168.0.0", 16, "a private address"],
  ["198.18.0.0", 15, "a benchmarking address"],
  ["198.51.100.0", 24, "a documentation address"],
  ["203.0.113.0", 24, "a documentation address"],
  ["224.0.0.0", 4, "a multicast address"],
  ["240.0.0.0", 4, "a reserved address"],
];

function v4Number(ip: string): number {
  return ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
}

function v4Reason(ip: string): string | undefined {
  const n = v4Number(ip);
  if (ip === "169.254.169.254") return "the cloud metadata address";
  for (const [base, bits, reason] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = v4Number(base);
    if (n >= start && n < start + size) return reason;
  }
  return undefined;
}

/** The 8 groups of an IPv6 address. */
function v6Groups(ip: string): number[] {
  let text = ip;
  // A trailing dotted IPv4 part becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4Number(dotted[1]!);
    text = text.slice(0, dotted.index) +
      `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = tail === undefined
    ? []
    : Array(8 - h.length - t.length).fill("0");
  return [...h, ...fill, ...t].map((g) => parseInt(g, 16));
}

function embeddedV4(groups: number[], at: number): string {
  const hi = groups[at]!, lo = groups[at + 1]!;
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function v6Reason(ip: string): string | undefined {
  const g = v6Groups(ip);
  if (g.length !== 8 || g.some((x) => !Number.isInteger(x))) {
    return "not a valid address";
  }
  const zeros = (from: number, to: number) =>
    g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return "the unspecified address";
  if (zeros(0, 7) && g[7] === 1) return "a loopback address";
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d.
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) {
    const inner = v4Reason(embeddedV4(g, 6));
    return inner ? `${inner} (IPv4 inside IPv6)` : undefined;
  }
  // NAT64 64:ff9b::/96.
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) {
    const inner = v4Reason(embeddedV4(g, 6));
    return inner ? `${inner} (through NAT64)` : undefined;
  }
  // 6to4 2002:a.b.c.d::/48.
  if (g[0] === 0x2002) {
    const inner = v4Reason(embeddedV4(g, 1));
    return inner ? `${inner} (through 6to4)` : undefined;
  }
  if ((g[0]! & 0xfe00) === 0xfc00) {
    return "a unique local address (fc00::/7, cloud metadata included)";
  }
  if ((g[0]! & 0xffc0) === 0xfe80) return "a link-local address";
  if ((g[0]! & 0xffc0) === 0xfec0) return "a site-local address";
  if ((g[0]! & 0xff00) === 0xff00) return "a multicast address";
  if (g[0] === 0x2001 && g[1] === 0xdb8) return "a documentation address";
  if (g[0] === 0x100 && zeros(1, 4)) return "a discard-only address";
  return undefined;
}

/**
 * Why the egress refuses an address, or `undefined` when it may be reached.
 *
 * @param address An IPv4 or IPv6 address (IPv6 with or without brackets).
 * @returns A phrase such as `"a loopback address"`, or `undefined`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { forbiddenAddress } from "./addresses.ts";
 * assert(forbiddenAddress("169.254.169.254") === "the cloud metadata address");
 * assert(forbiddenAddress("::ffff:127.0.0.1")?.startsWith("a loopback"));
 * assert(forbiddenAddress("fd00:ec2::254") !== undefined);
 * assert(forbiddenAddress("93.184.216.34") === undefined);
 * ```
 */
export function forbiddenAddress(address: string): string | undefined {
  const ip = address.startsWith("[") ? address.slice(1, -1) : address;
  if (isIPv4(ip)) return v4Reason(ip);
  if (isIPv6(ip)) return v6Reason(ip.toLowerCase());
  return "not an IP address";
}
