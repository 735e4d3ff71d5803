/**
 * The shared `network` option turned into what remote services take: an
 * OpenSandbox `networkPolicy` (egress rules evaluated in order, default
 * deny), E2B's `network` (`allowOut` and `denyOut`) and Vercel's
 * `networkPolicy` (`allow-all`, `deny-all` or `custom` with
 * `allowedDomains`). What a service cannot express is refused, never
 * dropped.
 *
 * @module
 */
import {
  checkNetworkShape,
  type NetworkPolicy,
  parseHostPattern,
  type SecretsOption,
} from "./policy.ts";

/** The options of a remote runtime that bear on its sandbox's egress. */
export interface RemoteEgressOptions {
  /** The `network` option. */
  readonly network?: NetworkPolicy;
  /** The `secrets` option (the isolated local runtime's only). */
  readonly secrets?: SecretsOption;
  /** An existing sandbox to attach to. */
  readonly sandboxId?: string;
}

/**
 * The checks every remote kind makes before its `network` option goes into
 * the creation request: `secrets` refused (secrets at the egress are the
 * isolated local runtime's; `secretsHint` says where the service keeps
 * them), and `network` refused beside `conflict` (the spec's own field for
 * it, when set) or with `sandboxId` (an existing sandbox keeps its policy).
 *
 * @param service The service's name, for the messages.
 * @param options The runtime's options.
 * @param conflict The name of the spec's own network field when it is set.
 * @param secretsHint Said after the refusal of `secrets`.
 * @returns The `network` option to convert, `undefined` without one.
 * @throws {TypeError} For a refused combination.
 *
 * @example Only `network` given
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { checkRemoteEgress } from "./remote.ts";
 * assertEquals(
 *   checkRemoteEgress("E2B", { network: { allow: ["pypi.org"] } }, undefined),
 *   { allow: ["pypi.org"] },
 * );
 * ```
 */
export function checkRemoteEgress(
  service: string,
  options: RemoteEgressOptions,
  conflict: string | undefined,
  secretsHint = "",
): NetworkPolicy | undefined {
  if (options.secrets !== undefined) {
    throw new TypeError(
      `Cannot use the secrets option with ${service}: secrets at the egress are the isolated local runtime's${secretsHint}`,
    );
  }
  if (options.network === undefined) return undefined;
  if (conflict !== undefined) {
    throw new TypeError(
      `Cannot use network together with sandbox.${conflict}: give one`,
    );
  }
  if (options.sandboxId !== undefined) {
    throw new TypeError(
      "Cannot use network with sandboxId: an existing sandbox keeps the policy it was created with",
    );
  }
  return options.network;
}

/** One egress rule of OpenSandbox (`NetworkRule`). */
export interface OpenSandboxNetworkRule {
  /** `allow` or `deny`. */
  readonly action: "allow" | "deny";
  /** A host name or `*.suffix`. */
  readonly target: string;
}

/** OpenSandbox's `networkPolicy` of the creation request. */
export interface OpenSandboxNetworkPolicy {
  /** What happens when no rule matches. */
  readonly defaultAction: "allow" | "deny";
  /** The rules, evaluated in order. */
  readonly egress: readonly OpenSandboxNetworkRule[];
}

/** E2B's `network` of the creation request (`SandboxNetworkConfig`). */
export interface E2BNetworkConfig {
  /** Allowed destinations (host names, `*.suffix`); they win over `denyOut`. */
  readonly allowOut: readonly string[];
  /** Denied address ranges (`0.0.0.0/0`: everything not allowed). */
  readonly denyOut: readonly string[];
}

/** Vercel's `networkPolicy` of the creation request. */
export type VercelNetworkPolicy =
  | { readonly mode: "allow-all" }
  | { readonly mode: "deny-all" }
  | { readonly mode: "custom"; readonly allowedDomains: readonly string[] };

/** A pattern as a service's host rule: a name or `*.suffix`, no port, no address. */
function hostTarget(source: string, service: string): string {
  const pattern = parseHostPattern(source);
  if (pattern.port !== undefined) {
    throw new RangeError(
      `Cannot give the network pattern "${source}" to ${service}: its egress rules name hosts, not ports`,
    );
  }
  if (!/[a-z]/.test(pattern.host) || pattern.host.includes(":")) {
    throw new RangeError(
      `Cannot give the network pattern "${source}" to ${service}: its egress rules take host names and "*.suffix", not IP addresses`,
    );
  }
  return pattern.host;
}

/** Whether some name matches both host rules (`*.x` covers names below x). */
function overlaps(a: string, b: string): boolean {
  const covers = (wild: string, other: string) =>
    wild.startsWith("*.") &&
    (other.endsWith(wild.slice(1)) || other === wild);
  return a === b || covers(a, b) || covers(b, a);
}

/**
 * The allow list of a service whose egress is an allow list over default
 * deny, with no host-name deny rule (E2B, Vercel): `everything` for `*`,
 * else the allowed hosts. A deny pattern is expressible only when no allow
 * pattern reaches it (default deny already refuses it); `deny: ["*"]`
 * allows nothing.
 */
function allowList(
  network: NetworkPolicy,
  service: string,
): { everything: boolean; hosts: string[] } {
  checkNetworkShape(network);
  const denyAll = (network.deny ?? []).includes("*");
  const deny = (network.deny ?? []).filter((p) => p !== "*")
    .map((p) => hostTarget(p, service));
  if (denyAll) return { everything: false, hosts: [] };
  if (network.allow.includes("*")) {
    if (deny.length > 0) {
      throw new RangeError(
        `Cannot give the network pattern "${
          network.deny![0]
        }" to ${service}: its egress denies no host names, and allow "*" lets every host out`,
      );
    }
    return { everything: true, hosts: [] };
  }
  const hosts = [...new Set(network.allow.map((p) => hostTarget(p, service)))];
  for (const d of deny) {
    const allowed = hosts.find((h) => overlaps(h, d));
    if (allowed !== undefined) {
      throw new RangeError(
        `Cannot give the network pattern "${d}" to ${service}: its egress denies no host names, and "${allowed}" is allowed`,
      );
    }
  }
  return { everything: false, hosts };
}

/**
 * Turns a {@linkcode NetworkPolicy} into OpenSandbox's `networkPolicy`:
 * deny rules first (deny wins), then allow rules, default deny; `*` in
 * `allow` becomes the default action `allow`.
 *
 * @param network The shared policy.
 * @returns The creation request's `networkPolicy`.
 * @throws {RangeError} An invalid pattern, or one OpenSandbox cannot
 * express (a port, an IP address: its egress rules take host names and
 * `*.suffix` only).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { toOpenSandboxNetworkPolicy } from "./remote.ts";
 * assertEquals(
 *   toOpenSandboxNetworkPolicy({ allow: ["pypi.org"], deny: ["evil.pypi.org"] }),
 *   {
 *     defaultAction: "deny",
 *     egress: [
 *       { action: "deny", target: "evil.pypi.org" },
 *       { action: "allow", target: "pypi.org" },
 *     ],
 *   },
 * );
 * ```
 */
export function toOpenSandboxNetworkPolicy(
  network: NetworkPolicy,
): OpenSandboxNetworkPolicy {
  checkNetworkShape(network);
  const rules = (action: "allow" | "deny", patterns: readonly string[]) =>
    patterns.map((source) => ({
      action,
      target: hostTarget(source, "OpenSandbox"),
    }));
  const deny = rules("deny", (network.deny ?? []).filter((p) => p !== "*"));
  if ((network.deny ?? []).includes("*")) {
    return { defaultAction: "deny", egress: deny };
  }
  const everything = network.allow.includes("*");
  return {
    defaultAction: everything ? "allow" : "deny",
    egress: [
      ...deny,
      ...(everything ? [] : rules("allow", network.allow)),
    ],
  };
}

/**
 * Turns a {@linkcode NetworkPolicy} into E2B's `network`: the allowed hosts
 * in `allowOut` and every address in `denyOut` (`0.0.0.0/0`; E2B's allowed
 * entries win over denied ones). `*` in `allow` sends empty lists (E2B's
 * default, everything out).
 *
 * @param network The shared policy.
 * @returns The creation request's `network`.
 * @throws {RangeError} An invalid pattern, a port, an IP address, or a deny
 * pattern an allow pattern reaches (E2B's `denyOut` takes address ranges
 * only).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { toE2BNetworkConfig } from "./remote.ts";
 * assertEquals(toE2BNetworkConfig({ allow: ["pypi.org", "*.github.com"] }), {
 *   allowOut: ["pypi.org", "*.github.com"],
 *   denyOut: ["0.0.0.0/0"],
 * });
 * ```
 */
export function toE2BNetworkConfig(network: NetworkPolicy): E2BNetworkConfig {
  const { everything, hosts } = allowList(network, "E2B");
  return everything
    ? { allowOut: [], denyOut: [] }
    : { allowOut: hosts, denyOut: ["0.0.0.0/0"] };
}

/**
 * Turns a {@linkcode NetworkPolicy} into Vercel's `networkPolicy`:
 * `custom` with the allowed hosts in `allowedDomains` (Vercel denies the
 * rest), `deny-all` when nothing is allowed, `allow-all` for `*`.
 *
 * @param network The shared policy.
 * @returns The creation request's `networkPolicy`.
 * @throws {RangeError} An invalid pattern, a port, an IP address, or a deny
 * pattern an allow pattern reaches (Vercel denies address ranges only).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { toVercelNetworkPolicy } from "./remote.ts";
 * assertEquals(toVercelNetworkPolicy({ allow: ["pypi.org"] }), {
 *   mode: "custom",
 *   allowedDomains: ["pypi.org"],
 * });
 * assertEquals(toVercelNetworkPolicy({ allow: [] }), { mode: "deny-all" });
 * ```
 */
export function toVercelNetworkPolicy(
  network: NetworkPolicy,
): VercelNetworkPolicy {
  const { everything, hosts } = allowList(network, "Vercel");
  if (everything) return { mode: "allow-all" };
  if (hosts.length === 0) return { mode: "deny-all" };
  return { mode: "custom", allowedDomains: hosts };
}
