/**
 * The network policy shared by every runtime: which hosts (and ports) a
 * command may reach, which secrets the egress injects for which hosts, and
 * which names the egress resolves to fixed addresses. Checked when a runtime
 * is made; invalid patterns are refused then, never at the first request.
 *
 * @module
 */

/**
 * Which hosts commands may reach. Patterns are host names (`api.example.com`),
 * `*.suffix` wildcards (`*.example.com`: any name below `example.com`, not
 * `example.com` itself), `*` (any host), or literal IP addresses
 * (`203.0.113.7`, `[2001:db8::1]`), each with an optional `:port` (a number,
 * or `*` for any port); without one, ports 80 and 443. Matching ignores case
 * and a trailing dot. `deny` wins over `allow`; what neither lists is refused.
 */
export interface NetworkPolicy {
  /** The patterns that may be reached. */
  readonly allow: readonly string[];
  /** The patterns that may never be reached, even if `allow` lists them. */
  readonly deny?: readonly string[];
}

/**
 * A secret the egress injects: the sandbox sees only a random placeholder in
 * its environment variable of the same name; requests to `hosts` (over HTTPS,
 * intercepted) carry the real value in place of the placeholder in their
 * headers. The hosts are patterns as in {@linkcode NetworkPolicy} (a port is
 * refused) and are allowed unless `deny` lists them.
 */
export interface SecretSpec {
  /** The host patterns the value is sent to. */
  readonly hosts: readonly string[];
  /** The real value; never inside the sandbox, never in a report or event. */
  readonly value: string;
}

/** The secrets by environment variable name. */
export type SecretsOption = Readonly<Record<string, SecretSpec>>;

/**
 * Checks that a `network` option has its shape (`{ allow: string[]; deny?:
 * string[] }`), for callers who got it from plain JavaScript.
 *
 * @param network The option.
 * @throws {RangeError} When it has another shape.
 */
export function checkNetworkShape(network: NetworkPolicy): void {
  if (
    typeof network !== "object" || network === null ||
    !Array.isArray(network.allow) ||
    (network.deny !== undefined && !Array.isArray(network.deny))
  ) {
    throw new RangeError(
      "Cannot use the network option: it must be { allow: string[]; deny?: string[] }",
    );
  }
}

/**
 * Names the egress resolves to fixed addresses instead of asking DNS (like
 * curl's `--resolve`). A name mapped here may reach a loopback or private
 * address: the user mapped it on purpose.
 */
export type ResolveOption = Readonly<Record<string, string>>;

/** One compiled host pattern. */
export interface HostPattern {
  /** The pattern as given. */
  readonly source: string;
  /** The host part, lower case, without a trailing dot (`*` or `*.x` for wildcards). */
  readonly host: string;
  /** The port, `*` for any, or `undefined` for 80 and 443. */
  readonly port: number | "*" | undefined;
}

/** What the policy says about one host and port. */
export interface PolicyDecision {
  /** Whether the connection may go out. */
  readonly allowed: boolean;
  /** Why, on one line (names the pattern that decided). */
  readonly reason: string;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The ports a pattern without `:port` allows. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

/**
 * Whether a string is a literal IPv4 address.
 *
 * @param text The string.
 * @returns `true` for four decimal octets of at most 255.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isIPv4 } from "./policy.ts";
 * assert(isIPv4("10.0.0.1") && !isIPv4("2130706433") && !isIPv4("1.2.3.256"));
 * ```
 */
export function isIPv4(text: string): boolean {
  const m = IPV4.exec(text);
  return m !== null && m.slice(1).every((o) => Number(o) <= 255);
}

/**
 * Whether a string is a literal IPv6 address (without brackets).
 *
 * @param text The string.
 * @returns `true` when it parses as IPv6.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isIPv6 } from "./policy.ts";
 * assert(isIPv6("fd00:ec2::254") && !isIPv6("example.com"));
 * ```
 */
export function isIPv6(text: string): boolean {
  if (!text.includes(":") || !/^[0-9a-fA-F:.]+$/.test(text)) return false;
  try {
    return new URL(`http://[${text}]/`).hostname.length > 2;
  } catch {
    return false;
  }
}

/**
 * Normalizes a host name or address: lower case, no trailing dot, IPv6
 * without brackets.
 *
 * @param host The host.
 * @returns The normal form.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { normalizeHost } from "./policy.ts";
 * assert(normalizeHost("PyPI.org.") === "pypi.org");
 * assert(normalizeHost("[::1]") === "::1");
 * ```
 */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

function checkHostName(host: string, source: string, what: string): void {
  if (host === "*" || isIPv4(host) || isIPv6(host)) return;
  const name = host.startsWith("*.") ? host.slice(2) : host;
  if (name.includes("*")) {
    throw new RangeError(
      `Cannot use the ${what} "${source}": a wildcard may only be "*" or lead as "*.suffix"`,
    );
  }
  if (name.length > 253 || !name.split(".").every((l) => LABEL.test(l))) {
    throw new RangeError(
      `Cannot use the ${what} "${source}": "${name}" is not a host name (letters, digits, "-" and "_" in dot-separated labels)`,
    );
  }
}

/**
 * Parses one host pattern.
 *
 * @param source The pattern, e.g. `*.example.com:8443`.
 * @param what What it is, for the message (`network pattern`).
 * @returns The compiled pattern.
 * @throws {RangeError} A pattern that is not a host, a wildcard or an
 * address, or a bad port.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseHostPattern } from "./policy.ts";
 * const p = parseHostPattern("*.Example.com:8443");
 * assert(p.host === "*.example.com" && p.port === 8443);
 * ```
 */
export function parseHostPattern(
  source: string,
  what = "network pattern",
): HostPattern {
  if (typeof source !== "string" || source.trim() === "") {
    throw new RangeError(`Cannot use the ${what} "${source}": it is empty`);
  }
  let text = source.trim().toLowerCase();
  let port: number | "*" | undefined;
  let host: string;
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end === -1) {
      throw new RangeError(
        `Cannot use the ${what} "${source}": "[" without "]"`,
      );
    }
    host = text.slice(1, end);
    text = text.slice(end + 1);
    if (!isIPv6(host)) {
      throw new RangeError(
        `Cannot use the ${what} "${source}": "${host}" is not an IPv6 address`,
      );
    }
    if (text !== "" && !text.startsWith(":")) {
      throw new RangeError(
        `Cannot use the ${what} "${source}": unexpected "${text}" after "]"`,
      );
    }
    if (text.startsWith(":")) port = parsePort(text.slice(1), source, what);
  } else if (isIPv6(text)) {
    host = text;
  } else {
    const colon = text.lastIndexOf(":");
    if (colon !== -1) {
      port = parsePort(text.slice(colon + 1), source, what);
      text = text.slice(0, colon);
    }
    host = text.endsWith(".") ? text.slice(0, -1) : text;
  }
  checkHostName(host, source, what);
  return { source, host, port };
}

function parsePort(text: string, source: string, what: string): number | "*" {
  if (text === "*") return "*";
  const n = Number(text);
  if (!/^\d{1,5}$/.test(text) || n < 1 || n > 65535) {
    throw new RangeError(
      `Cannot use the ${what} "${source}": the port "${text}" is not a number from 1 to 65535 or "*"`,
    );
  }
  return n;
}

function hostMatches(pattern: HostPattern, host: string): boolean {
  if (pattern.host === "*") return true;
  if (pattern.host.startsWith("*.")) {
    return host.endsWith(pattern.host.slice(1));
  }
  return pattern.host === host;
}

function portMatches(pattern: HostPattern, port: number): boolean {
  return pattern.port === "*" ||
    (pattern.port === undefined
      ? DEFAULT_PORTS.includes(port)
      : pattern.port === port);
}

/** One secret as the egress uses it. */
export interface CompiledSecret {
  /** The environment variable's name. */
  readonly name: string;
  /** Its hosts. */
  readonly hosts: readonly HostPattern[];
  /** The real value. */
  readonly value: string;
}

/** Options of {@linkcode EgressPolicy.create}. */
export interface EgressPolicyOptions {
  /** The hosts commands may reach; default nothing. */
  readonly network?: NetworkPolicy;
  /** `true`: any host (`*:*`), as the shorthand of old. */
  readonly allowNet?: boolean;
  /** Secrets injected at the egress. */
  readonly secrets?: SecretsOption;
  /** Names resolved to fixed addresses. */
  readonly resolve?: ResolveOption;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A checked network policy: allow and deny patterns, secrets and fixed
 * resolutions. Made once when a runtime is made (bad input throws then).
 *
 * @example Deciding
 * ```ts
 * import { assert } from "@std/assert";
 * import { EgressPolicy } from "./policy.ts";
 * const policy = EgressPolicy.create({
 *   network: { allow: ["*.example.com", "pypi.org"], deny: ["evil.example.com"] },
 * });
 * assert(policy.decide("api.example.com", 443).allowed);
 * assert(!policy.decide("evil.example.com", 443).allowed);
 * assert(!policy.decide("pypi.org", 22).allowed);
 * assert(!policy.decide("example.org", 443).allowed);
 * ```
 */
export class EgressPolicy {
  /** The allow patterns. */
  readonly allow: readonly HostPattern[];
  /** The deny patterns. */
  readonly deny: readonly HostPattern[];
  /** The secrets. */
  readonly secrets: readonly CompiledSecret[];
  /** Fixed resolutions, by normal host name. */
  readonly resolve: ReadonlyMap<string, string>;

  private constructor(
    allow: HostPattern[],
    deny: HostPattern[],
    secrets: CompiledSecret[],
    resolve: Map<string, string>,
  ) {
    this.allow = allow;
    this.deny = deny;
    this.secrets = secrets;
    this.resolve = resolve;
  }

  /**
   * Checks and compiles the options.
   *
   * @param options The policy, secrets and resolutions.
   * @returns The policy.
   * @throws {RangeError} An invalid pattern, secret name, secret without
   * hosts or value, a resolution that is not an IP address, or `allowNet`
   * together with `network`.
   */
  static create(options: EgressPolicyOptions): EgressPolicy {
    const { network, allowNet, secrets, resolve } = options;
    if (allowNet === true && network !== undefined) {
      throw new RangeError(
        'Cannot use allowNet together with network: allowNet is the shorthand of network: { allow: ["*:*"] }; give one',
      );
    }
    if (network !== undefined) checkNetworkShape(network);
    const allow = allowNet === true
      ? [parseHostPattern("*:*")]
      : (network?.allow ?? []).map((p) => parseHostPattern(p));
    const deny = (network?.deny ?? []).map((p) => parseHostPattern(p));
    const compiled: CompiledSecret[] = [];
    for (const [name, spec] of Object.entries(secrets ?? {})) {
      if (!ENV_NAME.test(name)) {
        throw new RangeError(
          `Cannot use the secret "${name}": its name must be an environment variable name (letters, digits, "_")`,
        );
      }
      if (
        typeof spec !== "object" || spec === null || !Array.isArray(spec.hosts)
      ) {
        throw new RangeError(
          `Cannot use the secret "${name}": it must be { hosts: string[]; value: string }`,
        );
      }
      if (spec.hosts.length === 0) {
        throw new RangeError(
          `Cannot use the secret "${name}": it names no host to send it to`,
        );
      }
      if (typeof spec.value !== "string" || spec.value === "") {
        throw new RangeError(
          `Cannot use the secret "${name}": its value is empty`,
        );
      }
      if (/[\r\n\0]/.test(spec.value)) {
        throw new RangeError(
          `Cannot use the secret "${name}": its value holds a line break or NUL, which cannot go in a header`,
        );
      }
      const hosts = spec.hosts.map((h) => {
        const p = parseHostPattern(h, `host of the secret "${name}"`);
        if (p.port !== undefined || p.host === "*") {
          throw new RangeError(
            `Cannot use the host "${h}" of the secret "${name}": give a host name or "*.suffix" without a port (it is sent over HTTPS, port 443)`,
          );
        }
        return p;
      });
      compiled.push({ name, hosts, value: spec.value });
    }
    const fixed = new Map<string, string>();
    for (const [host, address] of Object.entries(resolve ?? {})) {
      const name = normalizeHost(host);
      checkHostName(name, host, "name to resolve");
      if (name.includes("*")) {
        throw new RangeError(
          `Cannot resolve "${host}": give one host name, not a wildcard`,
        );
      }
      const ip = normalizeHost(address);
      if (!isIPv4(ip) && !isIPv6(ip)) {
        throw new RangeError(
          `Cannot resolve "${host}" to "${address}": it is not an IP address`,
        );
      }
      fixed.set(name, ip);
    }
    return new EgressPolicy(allow, deny, compiled, fixed);
  }

  /** Whether the policy lets nothing out (no allow pattern, no secret). */
  get empty(): boolean {
    return this.allow.length === 0 && this.secrets.length === 0;
  }

  /**
   * Decides one connection.
   *
   * @param host The host name or address asked for.
   * @param port The port.
   * @returns Allowed or not, and why on one line.
   */
  decide(host: string, port: number): PolicyDecision {
    const name = normalizeHost(host);
    const denied = this.deny.find((p) =>
      hostMatches(p, name) && portMatches(p, port)
    );
    if (denied) {
      return {
        allowed: false,
        reason: `${name}:${port} is denied by the pattern "${denied.source}"`,
      };
    }
    const allowed = this.allow.find((p) =>
      hostMatches(p, name) && portMatches(p, port)
    );
    if (allowed) {
      return {
        allowed: true,
        reason: `${name}:${port} is allowed by the pattern "${allowed.source}"`,
      };
    }
    const secret = port === 443 ? this.secretsFor(name)[0] : undefined;
    if (secret) {
      return {
        allowed: true,
        reason: `${name}:443 is a host of the secret ${secret.name}`,
      };
    }
    const hostOnly = this.allow.find((p) => hostMatches(p, name));
    if (hostOnly) {
      return {
        allowed: false,
        reason:
          `${name}: port ${port} is not allowed (the pattern "${hostOnly.source}" allows ${
            hostOnly.port === undefined ? "80 and 443" : hostOnly.port
          })`,
      };
    }
    return {
      allowed: false,
      reason: `${name} is not in the allowed hosts`,
    };
  }

  /**
   * The secrets sent to a host.
   *
   * @param host The host name.
   * @returns The secrets whose hosts match it.
   */
  secretsFor(host: string): CompiledSecret[] {
    const name = normalizeHost(host);
    return this.secrets.filter((s) =>
      s.hosts.some((p) => hostMatches(p, name))
    );
  }

  /** A description without secret values, for reports. */
  describe(): {
    allow: string[];
    deny: string[];
    secrets: Record<string, string[]>;
    resolve: Record<string, string>;
  } {
    return {
      allow: this.allow.map((p) => p.source),
      deny: this.deny.map((p) => p.source),
      secrets: Object.fromEntries(
        this.secrets.map((s) => [s.name, s.hosts.map((p) => p.source)]),
      ),
      resolve: Object.fromEntries(this.resolve),
    };
  }
}
