/**
 * The shared `network` option as OpenSandbox's `networkPolicy` (egress
 * rules evaluated in order, default deny).
 *
 * @module
 */
import { checkNetworkShape, type NetworkPolicy } from "../../network/policy.ts";
import { hostTarget } from "../../network/remote.ts";

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

/**
 * Turns a {@linkcode NetworkPolicy} into OpenSandbox's `networkPolicy`:
 * deny rules first (deny wins), then allow rules, default deny; `*` in
 * `allow` becomes the default action `allow`.
 *
 * @param network The shared policy.
 * @returns The creation request's `networkPolicy`.
 * @throws {RangeError} An invalid pattern, or one OpenSandbox cannot
 * express (its egress rules take host names and `*.suffix` only).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { toOpenSandboxNetworkPolicy } from "./network.ts";
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
  // `*` is the default action, never a rule.
  const rules = (action: "allow" | "deny", patterns: readonly string[]) =>
    patterns.filter((p) => p !== "*")
      .map((p) => ({ action, target: hostTarget(p, "OpenSandbox") }));
  const deny = rules("deny", network.deny ?? []);
  if ((network.deny ?? []).includes("*")) {
    return { defaultAction: "deny", egress: deny };
  }
  const everything = network.allow.includes("*");
  const allow = everything ? [] : rules("allow", network.allow);
  return {
    defaultAction: everything ? "allow" : "deny",
    egress: [...deny, ...allow],
  };
}
