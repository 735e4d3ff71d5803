/**
 * The shared `network` option as E2B's `network` (`allowOut` and
 * `denyOut`).
 *
 * @module
 */
import type { NetworkPolicy } from "../../network/policy.ts";
import { allowList } from "../../network/remote.ts";

/** E2B's `network` of the creation request (`SandboxNetworkConfig`). */
export interface E2BNetworkConfig {
  /** Allowed destinations (host names, `*.suffix`); they win over `denyOut`. */
  readonly allowOut: readonly string[];
  /** Denied address ranges (`0.0.0.0/0`: everything not allowed). */
  readonly denyOut: readonly string[];
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
 * import { toE2BNetworkConfig } from "./network.ts";
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
