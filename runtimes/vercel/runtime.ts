/**
 * The Vercel Sandbox runtime: skills uploaded into a Vercel sandbox and
 * commands run there, spoken to with `fetch` only.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import { checkRemoteEgress } from "../../network/remote.ts";
import { toVercelNetworkPolicy } from "./network.ts";
import {
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceRuntime,
  type ServiceCreateOptions,
} from "../remote/sandbox_service.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import {
  helperShell,
  shellList,
  shellStat,
  shellStatMany,
} from "../remote/shell_files.ts";
import { httpOptionsOf, retryOnceAfter } from "../remote/service_calls.ts";
import type { ExecuteResult } from "../types.ts";
import {
  VercelApiClient,
  type VercelSandbox,
  type VercelSandboxSpec,
} from "./api.ts";

/**
 * Options of {@linkcode VercelSandboxSkillRuntime}.
 * Defaults: `cwd` `/vercel/sandbox`, `skillsRoot` `/vercel/sandbox/skills`,
 * `conversationsRoot` `/vercel/sandbox/conversations`; `sandboxId` names
 * the sandbox; `readyTimeoutMs` waits for the session to run.
 */
export interface VercelSandboxSkillRuntimeOptions extends SandboxKindOptions {
  /** The API key (the access token, `VERCEL_TOKEN`); never shown in errors. */
  readonly apiKey?: string;
  /** The team (`VERCEL_TEAM_ID`). */
  readonly teamId?: string;
  /** The project (`VERCEL_PROJECT_ID`). */
  readonly projectId?: string;
  /** The API. Default `https://vercel.com/api` (a test server, a proxy). */
  readonly baseUrl?: string;
  /** What a sandbox the runtime creates is made of. */
  readonly sandbox?: VercelSandboxSpec;
  /**
   * The egress policy of a sandbox the runtime creates, in the shape every
   * runtime shares: sent as Vercel's `networkPolicy` (`custom` with the
   * allowed hosts in `allowedDomains`, the rest denied; `deny-all` when
   * nothing is allowed; `allow-all` for `*`), which Vercel's firewall
   * enforces by host name. Ports and IP addresses cannot be expressed, nor a
   * deny pattern an allowed one reaches (Vercel denies address ranges only):
   * refused. Not with `sandbox.networkPolicy`, nor with `sandboxId` (an
   * existing sandbox keeps its own).
   */
  readonly network?: NetworkPolicy;
  /**
   * Refused: secrets at the egress (placeholders replaced by a proxy) are the
   * isolated local runtime's.
   */
  readonly secrets?: SecretsOption;
}

/**
 * The Vercel Sandbox runtime (`name: "vercel"`).
 *
 * **Plain**: on first real use it creates a sandbox (runtime image, vCPUs,
 * timeout, network policy, environment) or attaches to `sandboxId`, then
 * runs commands (`bash -c`, NDJSON logs) and writes files (one gzipped tar
 * per upload). `close()` deletes only a sandbox it created.
 *
 * **Conversation** (`conversationId`): the sandbox is created `persistent`
 * and recorded in the store (insert-if-absent: the loser of a creation race
 * deletes its own). `close()` stops its session (Vercel snapshots a
 * persistent sandbox's files); the next runtime on the conversation resumes
 * it (`GET ?resume=true`, a new session from the snapshot) and finds its
 * files; {@linkcode destroy} removes the record and deletes the sandbox.
 *
 * No request is made before real use. Needs `--allow-net` for the API and
 * `--allow-read` of the skills it uploads.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { VercelSandboxSkillRuntime } from "@skillrun/skillrun/vercel";
 * const runtime = new VercelSandboxSkillRuntime({ apiKey: "t", teamId: "team_1", projectId: "prj_1" });
 * assertEquals(runtime.cwd, "/vercel/sandbox");
 * await runtime.close(); // never used: no request
 * ```
 */
export class VercelSandboxSkillRuntime
  extends SandboxServiceRuntime<VercelSandbox> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The API, the sandbox, the mode.
   * @throws {TypeError} A bad conversation id, path or variable,
   * `sandboxId` together with a conversation, `network` together with
   * `sandbox.networkPolicy` or `sandboxId`, or `secrets`.
   * @throws {RangeError} A `network` pattern Vercel cannot express.
   */
  constructor(options: VercelSandboxSkillRuntimeOptions) {
    const spec = withNetwork(options);
    super({
      ...options,
      cwd: options.cwd ?? "/vercel/sandbox",
      skillsRoot: options.skillsRoot ?? "/vercel/sandbox/skills",
      name: "vercel",
      service: new VercelService(options, spec),
      conversationsRoot: options.conversationsRoot ??
        "/vercel/sandbox/conversations",
      timeoutSeconds: spec.timeoutSeconds ?? 600,
      readinessName: "the sandbox session",
    });
  }
}

/** Vercel Sandbox as a sandbox service. */
class VercelService implements SandboxService<VercelSandbox> {
  readonly serverUrl: string;
  readonly #api: VercelApiClient;
  readonly #spec: VercelSandboxSpec;
  readonly #persistent: boolean;
  /** The current session of each sandbox seen. */
  readonly #sessions = new Map<string, VercelSandbox>();

  constructor(
    options: VercelSandboxSkillRuntimeOptions,
    spec: VercelSandboxSpec,
  ) {
    this.#api = new VercelApiClient({
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.teamId !== undefined ? { teamId: options.teamId } : {}),
      ...(options.projectId !== undefined
        ? { projectId: options.projectId }
        : {}),
      ...httpOptionsOf(options),
    });
    // Conversations keep their files across stops (snapshots).
    this.#persistent = options.conversationId !== undefined;
    // The key of conversations: the API, the team and the project.
    this.serverUrl = this.#api.baseUrl +
      (options.teamId ? `/teams/${encodeURIComponent(options.teamId)}` : "") +
      (options.projectId
        ? `/projects/${encodeURIComponent(options.projectId)}`
        : "");
    this.#spec = spec;
  }

  async create(options: ServiceCreateOptions): Promise<VercelSandbox> {
    const tags = { ...this.#spec.tags, ...options.metadata };
    const sandbox = await this.#api.create(
      Object.keys(tags).length === 0 ? this.#spec : { ...this.#spec, tags },
      this.#persistent,
      options.signal,
    );
    this.#sessions.set(sandbox.id, sandbox);
    return sandbox;
  }

  get(id: string, signal?: AbortSignal): Promise<VercelSandbox | null> {
    return this.#api.get(id, false, signal);
  }

  gone(sandbox: VercelSandbox): string | undefined {
    if (sandbox.status === "failed" || sandbox.status === "aborted") {
      return sandbox.status;
    }
    if (sandbox.status === "stopped" && !sandbox.persistent) return "stopped";
    return undefined;
  }

  delete(id: string, signal?: AbortSignal): Promise<boolean> {
    this.#sessions.delete(id);
    return this.#api.delete(id, signal);
  }

  async renew(
    id: string,
    expiresAt: Date,
    signal?: AbortSignal,
  ): Promise<Date> {
    const current = await this.#current(id, signal);
    const end = current.expiresAt?.getTime() ?? Date.now();
    const extended = await this.#api.extendTimeout(
      current.sessionId,
      expiresAt.getTime() - end,
      signal,
    );
    return extended ?? expiresAt;
  }

  async release(id: string, signal?: AbortSignal): Promise<void> {
    const current = this.#sessions.get(id);
    if (!current) return;
    await this.#api.stop(current.sessionId, signal);
    this.#sessions.delete(id);
  }

  /** The running session of a sandbox, resuming a stopped one. */
  async #current(id: string, signal?: AbortSignal): Promise<VercelSandbox> {
    const known = this.#sessions.get(id);
    if (known && known.status === "running") return known;
    const resumed = await this.#api.get(id, true, signal);
    if (!resumed) {
      throw new Error(
        `Cannot use sandbox "${id}": the server does not know it`,
      );
    }
    this.#sessions.set(id, resumed);
    return resumed;
  }

  async open(
    sandbox: VercelSandbox,
    signal?: AbortSignal,
  ): Promise<RemoteSession> {
    if (sandbox.status === "running") this.#sessions.set(sandbox.id, sandbox);
    let current = await this.#current(sandbox.id, signal);
    const api = this.#api;
    // A session that stopped behind our back (its timeout passed while the
    // runtime was idle) answers 410: resume the sandbox and call again once
    // (nothing ran in the stopped session).
    const retry = retryOnceAfter([410], async () => {
      this.#sessions.delete(sandbox.id);
      current = await this.#current(sandbox.id);
    });
    const inSession = <T>(call: (id: string) => Promise<T>) =>
      retry(() => call(current.sessionId));
    const shell = helperShell((command) =>
      inSession((id) => api.run(id, command))
    );
    return {
      execute: (command): Promise<ExecuteResult> =>
        inSession((id) => api.run(id, command)),
      files: {
        stat: (path, signal) => shellStat(shell, path, signal),
        statMany: (paths, signal) => shellStatMany(shell, paths, signal),
        statsByCommand: true,
        list: (path, options) =>
          shellList(shell, path, options.depth, options.signal),
        open: (path, options) =>
          inSession((id) => api.read(id, path, options.signal)),
        upload: (files, signal) =>
          inSession((id) => api.write(id, files, signal)),
      },
      isReady: async (signal) => {
        if (current.status === "running") return true;
        current = await this.#current(sandbox.id, signal);
        return current.status === "running";
      },
    };
  }
}

/** The sandbox spec with the `network` option as its `networkPolicy`. */
function withNetwork(
  options: VercelSandboxSkillRuntimeOptions,
): VercelSandboxSpec {
  const spec = options.sandbox ?? {};
  const network = checkRemoteEgress(
    "Vercel",
    options,
    spec.networkPolicy !== undefined ? "networkPolicy" : undefined,
  );
  if (network === undefined) return spec;
  return { ...spec, networkPolicy: { ...toVercelNetworkPolicy(network) } };
}
