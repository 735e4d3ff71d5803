/**
 * The E2B runtime: skills uploaded into an E2B sandbox and commands run there
 * through its envd, spoken to with `fetch` only.
 *
 * @module
 */
import { HttpClient } from "../remote/http.ts";
import {
  answers,
  boundFileOps,
  httpOptionsOf,
  retryOnceAfter,
  wrapSessionCalls,
} from "../remote/service_calls.ts";
import {
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceRuntime,
  type ServiceCreateOptions,
} from "../remote/sandbox_service.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import { checkRemoteEgress } from "../../network/remote.ts";
import { toE2BNetworkConfig } from "./network.ts";
import { E2BApiClient, type E2BSandbox, type E2BSandboxSpec } from "./api.ts";
import { ENVD_PORT, EnvdClient } from "./envd.ts";

/**
 * Options of {@linkcode E2BSkillRuntime}.
 * Defaults: `cwd` `/home/user`, `skillsRoot` `/home/user/skills`,
 * `conversationsRoot` `/home/user/conversations`; `readyTimeoutMs` waits
 * for envd.
 */
export interface E2BSkillRuntimeOptions extends SandboxKindOptions {
  /** The API key (`X-API-Key`; the SDK's `E2B_API_KEY`); never shown in errors. */
  readonly apiKey?: string;
  /** The control plane. Default `https://api.e2b.app` (the SDK's `E2B_API_URL`). */
  readonly baseUrl?: string;
  /**
   * One URL for envd of every sandbox, routed by the `E2b-Sandbox-Id` and
   * `E2b-Sandbox-Port` headers (the SDK's `sandboxUrl`; a test server, a
   * proxy). Default `https://49983-<id>.<domain>`.
   */
  readonly sandboxUrl?: string;
  /** What a sandbox the runtime creates is made of. */
  readonly sandbox?: E2BSandboxSpec;
  /**
   * The egress policy of a sandbox the runtime creates, in the shape every
   * runtime shares: sent as E2B's `network` (the allowed hosts in
   * `allowOut`, everything else denied by `denyOut: ["0.0.0.0/0"]`), which
   * E2B enforces by host name. Ports and IP addresses cannot be expressed,
   * nor a deny pattern an allowed one reaches (E2B denies address ranges
   * only, and its allowed entries win): refused. Not with `sandbox.network`
   * or `sandbox.allowInternetAccess`, nor with `sandboxId` (an existing
   * sandbox keeps its own).
   */
  readonly network?: NetworkPolicy;
  /**
   * Refused: secrets at the egress (placeholders replaced by a proxy) are the
   * isolated local runtime's.
   */
  readonly secrets?: SecretsOption;
  /**
   * Conversation mode: pause the sandbox on `close()` (E2B keeps its files
   * and memory) and resume it on the next attach. Default `true`.
   */
  readonly pauseOnClose?: boolean;
}

/**
 * The E2B runtime (`name: "e2b"`).
 *
 * **Plain**: on first real use it creates a sandbox from the template (with
 * timeout, metadata, environment and network settings) or attaches to
 * `sandboxId`, then runs commands (`process.Process/Start`, streamed) and
 * moves files (`/files`, `filesystem.Filesystem`) through envd. `close()`
 * kills only a sandbox it created.
 *
 * **Conversation** (`conversationId`): the store maps the conversation to
 * its sandbox (insert-if-absent: the loser of a creation race kills its own
 * sandbox and attaches to the winner's). `close()` pauses the sandbox (files
 * and memory are kept) and the next runtime on the conversation resumes it
 * through `connect`; {@linkcode destroy} removes the record and kills it.
 *
 * No request is made before real use. Needs `--allow-net` for the control
 * plane and envd, `--allow-read` of the skills it uploads.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { E2BSkillRuntime } from "@skillrun/skillrun/e2b";
 * const runtime = new E2BSkillRuntime({ apiKey: "e2b_test", conversationId: "t1" });
 * assertEquals(runtime.cwd, "/home/user/conversations/t1");
 * await runtime.close(); // never used: no request
 * ```
 */
export class E2BSkillRuntime extends SandboxServiceRuntime<E2BSandbox> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The service, the sandbox, the mode.
   * @throws {TypeError} A bad URL, conversation id, path or variable,
   * `sandboxId` together with a conversation, `network` together with the
   * raw network settings or `sandboxId`, or `secrets`.
   * @throws {RangeError} A `network` pattern E2B cannot express.
   */
  constructor(options: E2BSkillRuntimeOptions) {
    const spec = withNetwork(options);
    super({
      ...options,
      cwd: options.cwd ?? "/home/user",
      skillsRoot: options.skillsRoot ?? "/home/user/skills",
      name: "e2b",
      service: new E2BService(options, spec),
      conversationsRoot: options.conversationsRoot ??
        "/home/user/conversations",
      timeoutSeconds: spec.timeoutSeconds ?? 600,
      readinessName: "envd",
    });
  }
}

/** E2B as a sandbox service: the control plane and each sandbox's envd. */
class E2BService implements SandboxService<E2BSandbox> {
  readonly serverUrl: string;
  readonly #api: E2BApiClient;
  readonly #options: E2BSkillRuntimeOptions;
  readonly #spec: E2BSandboxSpec;
  /** envd tokens and domains of sandboxes seen (create, connect). */
  readonly #known = new Map<string, E2BSandbox>();
  /** Sandboxes found paused: renewing one resumes it. */
  readonly #paused = new Set<string>();

  constructor(options: E2BSkillRuntimeOptions, spec: E2BSandboxSpec) {
    this.#api = new E2BApiClient({
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...httpOptionsOf(options),
    });
    this.serverUrl = this.#api.baseUrl;
    this.#options = options;
    this.#spec = spec;
  }

  async create(options: ServiceCreateOptions): Promise<E2BSandbox> {
    const sandbox = await this.#api.create({
      ...this.#spec,
      metadata: { ...this.#spec.metadata, ...options.metadata },
    }, options.signal);
    this.#known.set(sandbox.id, sandbox);
    return sandbox;
  }

  async get(id: string, signal?: AbortSignal): Promise<E2BSandbox | null> {
    const found = await this.#api.get(id, signal);
    if (found?.state === "paused") this.#paused.add(id);
    return found;
  }

  gone(): string | undefined {
    // A paused sandbox resumes; one killed or expired is not found at all.
    return undefined;
  }

  delete(id: string, signal?: AbortSignal): Promise<boolean> {
    this.#known.delete(id);
    return this.#api.kill(id, signal);
  }

  async renew(
    id: string,
    expiresAt: Date,
    signal?: AbortSignal,
  ): Promise<Date> {
    const seconds = (expiresAt.getTime() - Date.now()) / 1000;
    if (this.#paused.has(id) || !this.#known.get(id)?.envdAccessToken) {
      return (await this.#connect(id, seconds, signal)).expiresAt!;
    }
    return await this.#api.setTimeout(id, seconds, signal);
  }

  async release(id: string, signal?: AbortSignal): Promise<void> {
    if (this.#options.pauseOnClose === false) return;
    await this.#api.pause(id, signal);
    this.#paused.add(id);
  }

  async #connect(
    id: string,
    seconds: number,
    signal?: AbortSignal,
  ): Promise<E2BSandbox> {
    const sandbox = await this.#api.connect(id, seconds, signal);
    this.#known.set(id, sandbox);
    this.#paused.delete(id);
    return sandbox;
  }

  /** Connects (resuming) when the token is not known yet; ready once `/health` answers. */
  async open(
    sandbox: E2BSandbox,
    signal?: AbortSignal,
  ): Promise<RemoteSession> {
    let known = this.#known.get(sandbox.id);
    if (!known?.envdAccessToken || this.#paused.has(sandbox.id)) {
      known = await this.#connect(
        sandbox.id,
        this.#spec.timeoutSeconds ?? 600,
        signal,
      );
    }
    const base = this.#options.sandboxUrl ??
      `https://${ENVD_PORT}-${sandbox.id}.${known.domain ?? "e2b.app"}`;
    const envd = new EnvdClient(
      new HttpClient({
        baseUrl: base.replace(/\/+$/, ""),
        headers: {
          "e2b-sandbox-id": sandbox.id,
          "e2b-sandbox-port": String(ENVD_PORT),
          ...(known.envdAccessToken
            ? { "x-access-token": known.envdAccessToken }
            : {}),
        },
        ...httpOptionsOf(this.#options),
      }),
    );
    // A sandbox paused behind our back (auto-pause, another runtime's
    // close) answers 502 from envd: resume it and call again once (nothing
    // ran while it was paused).
    const resumed = retryOnceAfter(
      [502],
      () => this.#connect(sandbox.id, this.#spec.timeoutSeconds ?? 600),
    );
    return {
      ...wrapSessionCalls(
        boundFileOps(envd),
        envd.commands,
        resumed,
      ),
      // Ready once envd answers `GET /health`.
      isReady: (signal) => answers(envd.http, "/health", signal),
      makeDirectories: (paths, signal) =>
        resumed(() => envd.makeDirectories(paths, signal)),
    };
  }
}

/** The sandbox spec with the `network` option as its `network`. */
function withNetwork(options: E2BSkillRuntimeOptions): E2BSandboxSpec {
  const spec = options.sandbox ?? {};
  const network = checkRemoteEgress(
    "E2B",
    options,
    spec.network !== undefined
      ? "network"
      : spec.allowInternetAccess !== undefined
      ? "allowInternetAccess"
      : undefined,
  );
  if (network === undefined) return spec;
  return { ...spec, network: { ...toE2BNetworkConfig(network) } };
}
