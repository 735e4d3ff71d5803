/**
 * The egress of one isolated launcher: the {@linkcode EgressProxy} on a Unix
 * socket in a private folder of the host, that folder bound read-only inside
 * each sandbox at {@linkcode INSIDE_DIR}, and a small bridge started inside
 * before the command: it listens on `127.0.0.1:3128` of the sandbox's own
 * loopback (the sandbox has no other network) and carries each connection to
 * the socket. `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (and lower case)
 * point at it; with secrets, each secret's variable holds a placeholder and
 * the CA variables name a bundle of the system's roots plus the runtime's
 * authority.
 *
 * The bridge is `deno` (the running binary, mounted read-only) running
 * {@linkcode INSIDE_DIR}`/bridge.js`, started by the sandbox's shell before
 * the command, as a grandchild of that shell (not a job of it). It makes a
 * Unix socket to `INSIDE_DIR/proxy.sock` for every proxied connection, so
 * the sandbox's seccomp filter lets Unix sockets be made, and the isolated
 * launcher starts the command itself under a nested bwrap step whose filter
 * refuses them: the command's whole process tree can reach neither that
 * socket nor any other (see `runtimes/local/isolated.ts`).
 *
 * @module
 */
import type { CertificateAuthority } from "./ca.ts";
import {
  EgressPolicy,
  type NetworkPolicy,
  type ResolveOption,
  type SecretsOption,
} from "./policy.ts";
import { EgressProxy, type NetworkEvent } from "./proxy.ts";

/** Where the egress folder (socket, bridge, CA bundle) is inside the sandbox. */
export const INSIDE_DIR = "/run/skillrun/egress";

/** The port of the bridge on the sandbox's loopback. */
export const INSIDE_PROXY_PORT = 3128;

/** Where the system's trusted roots usually are (the first readable is used). */
const SYSTEM_BUNDLES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/cert.pem",
  "/etc/ssl/ca-bundle.pem",
];

/** The CA variables set inside when secrets are intercepted. */
export const CA_VARIABLES: readonly string[] = [
  "SSL_CERT_FILE",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "DENO_CERT",
  "CURL_CA_BUNDLE",
];

/** The bridge run inside the sandbox (plain JavaScript for `deno run`). */
const BRIDGE_SOURCE =
  `// skillrun egress bridge: 127.0.0.1:${INSIDE_PROXY_PORT} -> ${INSIDE_DIR}/proxy.sock
const SOCKET = "${INSIDE_DIR}/proxy.sock";
let listener;
try {
  listener = Deno.listen({ hostname: "127.0.0.1", port: ${INSIDE_PROXY_PORT} });
} catch (error) {
  console.log("cannot listen on 127.0.0.1:${INSIDE_PROXY_PORT}: " + error.message);
  Deno.exit(1);
}
console.log("ready");
async function pump(from, to) {
  let buf = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      let o = 0;
      while (o < n) o += await to.write(buf.subarray(o, n));
      if (n === buf.length && n < 256 * 1024) buf = new Uint8Array(256 * 1024);
    }
    await to.closeWrite();
    return true;
  } catch {
    return false;
  }
}
async function handle(conn) {
  conn.setNoDelay(true);
  let up;
  try {
    up = await Deno.connect({ transport: "unix", path: SOCKET });
  } catch {
    try { conn.close(); } catch {}
    return;
  }
  const close = () => {
    try { conn.close(); } catch {}
    try { up.close(); } catch {}
  };
  await Promise.all([
    pump(conn, up).then((ok) => ok || close()),
    pump(up, conn).then((ok) => ok || close()),
  ]);
  close();
}
for await (const conn of listener) handle(conn);
`;

/**
 * The egress options of an isolated runtime (beside `allowNet`): the policy,
 * secrets, fixed resolutions, and the callback told of every decision.
 */
export interface EgressOptions {
  /** The hosts commands may reach (through the proxy). Default: none. */
  readonly network?: NetworkPolicy;
  /** Secrets injected at the egress; the sandbox sees placeholders. */
  readonly secrets?: SecretsOption;
  /** Names the proxy resolves to fixed addresses (loopback allowed). */
  readonly resolve?: ResolveOption;
  /**
   * Resolves names instead of DNS; its answers are checked like DNS answers
   * (loopback, private and metadata addresses refused).
   */
  readonly lookup?: (host: string) => Promise<readonly string[]>;
  /** Told of every decision, without secret values. */
  readonly onNetwork?: (event: NetworkEvent) => void;
  /** Further roots trusted for the real hosts of intercepted tunnels. */
  readonly upstreamCaCerts?: readonly string[];
}

/** Options of {@linkcode SandboxEgress.start}. */
export interface SandboxEgressOptions extends EgressOptions {
  /** `true` with secrets: any other host is tunnelled. */
  readonly allowNet?: boolean;
}

/**
 * Whether options ask for the proxy-mediated network: a policy, secrets or
 * resolutions (`allowNet` alone keeps the host's network).
 *
 * @param options The options.
 * @returns `true` when an egress proxy is needed.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { wantsEgress } from "./sandbox.ts";
 * assert(wantsEgress({ network: { allow: [] } }));
 * assert(!wantsEgress({ allowNet: true }));
 * ```
 */
export function wantsEgress(options: SandboxEgressOptions): boolean {
  return options.network !== undefined || options.secrets !== undefined ||
    options.resolve !== undefined;
}

/** What the egress does, for reports (no secret value). */
export interface EgressReport {
  /** Where the policy is enforced. */
  readonly enforcedBy: string;
  /** The allow patterns. */
  readonly allow: readonly string[];
  /** The deny patterns. */
  readonly deny: readonly string[];
  /** The secrets' names and their hosts. */
  readonly secrets: Readonly<Record<string, readonly string[]>>;
  /** Fixed resolutions. */
  readonly resolve: Readonly<Record<string, string>>;
}

function placeholder(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `skillrun_placeholder_${
    Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

/**
 * The egress of an isolated launcher. The launcher starts one when given a
 * network policy or secrets.
 *
 * Permissions: `--allow-net`, `--allow-write` and `--allow-read` of the
 * temporary folder; with secrets, `--allow-read` of the system's CA bundle
 * (else the bundle holds only the runtime's authority).
 *
 * @example The environment a sandbox gets
 * ```ts
 * import { assert } from "@std/assert";
 * import { SandboxEgress } from "./sandbox.ts";
 * const egress = await SandboxEgress.start({
 *   network: { allow: ["pypi.org"] },
 *   secrets: { API_KEY: { hosts: ["api.example.com"], value: "s3cret" } },
 * });
 * const env = egress.environment;
 * assert(env.HTTPS_PROXY === "http://127.0.0.1:3128");
 * assert(env.API_KEY !== "s3cret" && env.API_KEY!.startsWith("skillrun_placeholder_"));
 * assert(!JSON.stringify(egress.report).includes("s3cret"));
 * await egress.close();
 * ```
 */
export class SandboxEgress {
  /** The host folder bound inside at {@linkcode INSIDE_DIR}. */
  readonly directory: string;
  /** The checked policy. */
  readonly policy: EgressPolicy;
  /** The proxy. */
  readonly proxy: EgressProxy;
  /** The variables each command gets (placeholders, never values). */
  readonly environment: Readonly<Record<string, string>>;
  #closed = false;

  private constructor(
    directory: string,
    policy: EgressPolicy,
    proxy: EgressProxy,
    environment: Record<string, string>,
  ) {
    this.directory = directory;
    this.policy = policy;
    this.proxy = proxy;
    this.environment = environment;
  }

  /**
   * Checks the policy, makes the folder, starts the proxy.
   *
   * @param options The policy, secrets, resolutions and the callback.
   * @returns The running egress.
   * @throws {RangeError} An invalid policy (nothing is started).
   */
  static async start(options: SandboxEgressOptions): Promise<SandboxEgress> {
    const policy = EgressPolicy.create(options);
    const directory = await Deno.makeTempDir({ prefix: "skillrun-egress-" });
    try {
      const proxyUrl = `http://127.0.0.1:${INSIDE_PROXY_PORT}`;
      const environment: Record<string, string> = {};
      for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
        environment[name] = proxyUrl;
        environment[name.toLowerCase()] = proxyUrl;
      }
      environment.NO_PROXY = environment.no_proxy = "localhost,127.0.0.1,::1";
      let authority: CertificateAuthority | undefined;
      const placeholders: Record<string, string> = {};
      if (policy.secrets.length > 0) {
        // Loaded only with secrets: the X.509 library is not small.
        const { CertificateAuthority } = await import("./ca.ts");
        authority = await CertificateAuthority.create();
        let bundle = "";
        for (const path of SYSTEM_BUNDLES) {
          try {
            bundle = await Deno.readTextFile(path);
            break;
          } catch {
            // Not here, or not readable: the next one.
          }
        }
        if (bundle && !bundle.endsWith("\n")) bundle += "\n";
        await Deno.writeTextFile(
          `${directory}/ca.pem`,
          bundle + authority.certificate,
        );
        for (const name of CA_VARIABLES) {
          environment[name] = `${INSIDE_DIR}/ca.pem`;
        }
        for (const secret of policy.secrets) {
          placeholders[secret.name] = placeholder();
          environment[secret.name] = placeholders[secret.name]!;
        }
      }
      await Deno.writeTextFile(`${directory}/bridge.js`, BRIDGE_SOURCE);
      const proxy = await EgressProxy.start({
        policy,
        socketPath: `${directory}/proxy.sock`,
        ...(options.onNetwork ? { onNetwork: options.onNetwork } : {}),
        ...(authority ? { authority, placeholders } : {}),
        ...(options.upstreamCaCerts
          ? { upstreamCaCerts: options.upstreamCaCerts }
          : {}),
        ...(options.lookup ? { lookup: options.lookup } : {}),
      });
      return new SandboxEgress(directory, policy, proxy, environment);
    } catch (error) {
      await Deno.remove(directory, { recursive: true }).catch(() => {});
      throw error;
    }
  }

  /** The `bwrap` arguments that bind the egress folder inside. */
  get bwrapArgs(): string[] {
    return ["--ro-bind", this.directory, INSIDE_DIR];
  }

  /**
   * The shell line that starts the bridge and waits until it listens (exit
   * 125 when it cannot). The bridge is a grandchild of the shell, so that
   * `wait` in the command never waits for it.
   *
   * @param deno The `deno` binary inside the sandbox.
   * @returns One line ending with `;`.
   */
  prelude(deno: string): string {
    const fifo = "/tmp/.skillrun-egress-ready";
    const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
    return `mkfifo ${fifo} && ( DENO_NO_UPDATE_CHECK=1 exec ${
      q(deno)
    } run --quiet --no-config --no-lock --no-prompt --allow-net=127.0.0.1:${INSIDE_PROXY_PORT},unix:${INSIDE_DIR}/proxy.sock --allow-read=${INSIDE_DIR}/proxy.sock --allow-write=${INSIDE_DIR}/proxy.sock ${INSIDE_DIR}/bridge.js </dev/null >${fifo} 2>&1 & ) && { read -r -t 20 __skillrun_bridge <${fifo}; rm -f ${fifo}; [ "$__skillrun_bridge" = ready ]; } || { echo "skillrun: the network bridge did not start: $__skillrun_bridge" >&2; exit 125; }; unset __skillrun_bridge;`;
  }

  /** The policy and where it is enforced, without secret values. */
  get report(): EgressReport {
    const described = this.policy.describe();
    return {
      enforcedBy:
        `a proxy on the host (Unix socket, bound into the sandbox with a bridge on 127.0.0.1:${INSIDE_PROXY_PORT}); the sandbox has no network but its own loopback`,
      ...described,
    };
  }

  /** Stops the proxy and removes the folder. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.proxy.close();
    await Deno.remove(this.directory, { recursive: true }).catch(() => {});
  }
}
