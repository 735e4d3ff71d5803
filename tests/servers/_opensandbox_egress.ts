/**
 * The OpenSandbox test server's egress: a sandbox created with a
 * `networkPolicy` gets an {@linkcode EgressProxy} of its own (on a loopback
 * port of the host) enforcing the policy's rules as the real egress sidecar
 * does (host names and `*.suffix`, evaluated in order, then the default
 * action), and its commands get `HTTP_PROXY`/`HTTPS_PROXY` pointing at it.
 * The real sidecar also blocks what ignores the proxy; the test server runs
 * commands on the host and does not (a test checks the policy, not the fence).
 *
 * @module
 */
import { EgressPolicy } from "../../network/policy.ts";
import { EgressProxy } from "../../network/proxy.ts";

/** What the server keeps of one sandbox's egress. */
export interface SandboxEgressRecord {
  /** The policy as the creation request gave it. */
  readonly networkPolicy: unknown;
  /** Stops the proxy enforcing it. */
  close(): Promise<void>;
  /** The variables its commands get. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Checks a creation request's `networkPolicy` as the real server does.
 *
 * @param value The field.
 * @returns The error message, or `undefined` when valid.
 */
export function networkPolicyProblem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) {
    return "networkPolicy must be an object";
  }
  const policy = value as Record<string, unknown>;
  for (const key of Object.keys(policy)) {
    if (key !== "defaultAction" && key !== "egress") {
      return `networkPolicy: unknown field ${key}`;
    }
  }
  if (
    policy.defaultAction !== undefined &&
    policy.defaultAction !== "allow" && policy.defaultAction !== "deny"
  ) {
    return "networkPolicy.defaultAction must be allow or deny";
  }
  if (policy.egress !== undefined && !Array.isArray(policy.egress)) {
    return "networkPolicy.egress must be a list";
  }
  for (const rule of (policy.egress ?? []) as unknown[]) {
    const r = rule as Record<string, unknown>;
    if (
      typeof r !== "object" || r === null ||
      (r.action !== "allow" && r.action !== "deny") ||
      typeof r.target !== "string" || r.target === ""
    ) {
      return "networkPolicy.egress: each rule needs action (allow or deny) and target";
    }
  }
  return undefined;
}

/**
 * Starts the egress of one sandbox.
 *
 * @param networkPolicy The checked `networkPolicy` of the creation request.
 * @param resolve Names the proxy resolves to fixed addresses (the tests'
 * own loopback servers).
 * @returns The record, or `undefined` for an empty policy (allow-all, as
 * the real sidecar starts).
 */
export async function startSandboxEgress(
  networkPolicy: unknown,
  resolve: Readonly<Record<string, string>>,
): Promise<SandboxEgressRecord | undefined> {
  const policy = networkPolicy as
    | {
      defaultAction?: "allow" | "deny";
      egress?: { action: "allow" | "deny"; target: string }[];
    }
    | null
    | undefined;
  if (
    policy === undefined || policy === null ||
    (policy.defaultAction === undefined && policy.egress === undefined)
  ) return undefined;
  // Rules in order, first match wins: a rule after one of the same host
  // never applies, so only the first of each target is kept.
  const seen = new Set<string>();
  const allow: string[] = [];
  const deny: string[] = [];
  for (const rule of policy.egress ?? []) {
    if (seen.has(rule.target)) continue;
    seen.add(rule.target);
    (rule.action === "allow" ? allow : deny).push(rule.target);
  }
  const egress = await startHostEgress({
    allow,
    deny,
    defaultAllow: (policy.defaultAction ?? "deny") === "allow",
    resolve,
  });
  return { networkPolicy, ...egress };
}

/** What {@linkcode startHostEgress} enforces: host rules of a service's egress. */
export interface HostEgressRules {
  /** Host names and `*.suffix` let out (any port). */
  readonly allow: readonly string[];
  /** Host names and `*.suffix` refused (any port); they win over `allow`. */
  readonly deny?: readonly string[];
  /** Whether what no rule names goes out. */
  readonly defaultAllow?: boolean;
  /** Names the proxy resolves to fixed addresses (the tests' servers). */
  readonly resolve: Readonly<Record<string, string>>;
}

/**
 * Starts a proxy enforcing host rules, as the egress of a test server's
 * sandbox (OpenSandbox's `networkPolicy`, E2B's `allowOut`, Vercel's
 * `allowedDomains`): commands run with its variables.
 *
 * @param rules The rules.
 * @returns How to stop it and the variables of the commands.
 */
export async function startHostEgress(
  rules: HostEgressRules,
): Promise<Omit<SandboxEgressRecord, "networkPolicy">> {
  const allow = rules.allow.map((host) => `${host}:*`);
  if (rules.defaultAllow) allow.push("*:*");
  const socketDir = await Deno.makeTempDir({ prefix: "skillrun-os-egress-" });
  const proxy = await EgressProxy.start({
    policy: EgressPolicy.create({
      network: { allow, deny: (rules.deny ?? []).map((host) => `${host}:*`) },
      resolve: rules.resolve,
    }),
    socketPath: `${socketDir}/egress-${crypto.randomUUID()}.sock`,
    tcp: { hostname: "127.0.0.1", port: 0 },
  });
  const url = `http://127.0.0.1:${proxy.tcpAddress!.port}`;
  return {
    close: async () => {
      await proxy.close();
      await Deno.remove(socketDir, { recursive: true }).catch(() => {});
    },
    env: {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      http_proxy: url,
      https_proxy: url,
    },
  };
}
