/**
 * The shared `network` option as Vercel's `networkPolicy` (`allow-all`,
 * `deny-all` or `custom` with `allowedDomains`).
 *
 * @module
 */
import type { NetworkPolicy } from "../../network/policy.ts";
import { allowList } from "../../network/remote.ts";

/** Vercel's `networkPolicy` of the creation request. */
export type VercelNetworkPolicy =
  | { readonly mode: "allow-all" }
  | { readonly mode: "deny-all" }
  | { readonly mode: "custom"; readonly allowedDomains: readonly string[] };

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
 * import { toVercelNetworkPolicy } from "./network.ts";
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
