/**
 * What the remote kinds' network-policy converters share (each converter
 * lives in its kind's folder: `runtimes/opensandbox/network.ts`,
 * `runtimes/e2b/network.ts`, `runtimes/vercel/network.ts`): the checks of
 * the `network` and `secrets` options, host rules, and the allow list of a
 * service with default deny. What a service cannot express is refused,
 * never dropped.
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

/**
 * A pattern as a service's host rule: a name or `*.suffix`, no port, no
 * address.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { hostTarget } from "./remote.ts";
 * assertEquals(hostTarget("PyPI.org.", "E2B"), "pypi.org");
 * ```
 *
 * @param source The pattern.
 * @param service The service's name, for the message.
 * @returns The host rule.
 * @throws {RangeError} An invalid pattern, a port or an IP address.
 */
export function hostTarget(source: string, service: string): string {
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
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { allowList } from "./remote.ts";
 * assertEquals(allowList({ allow: ["pypi.org"] }, "E2B"), {
 *   everything: false,
 *   hosts: ["pypi.org"],
 * });
 * ```
 *
 * @param network The shared policy.
 * @param service The service's name, for the messages.
 * @returns Whether everything is allowed, else the allowed hosts.
 * @throws {RangeError} A pattern the service cannot express.
 */
export function allowList(
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
