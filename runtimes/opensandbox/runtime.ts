/**
 * The OpenSandbox runtime: skills uploaded into an OpenSandbox sandbox and
 * commands run there through its execd, spoken to with `fetch` only.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import { checkRemoteEgress } from "../../network/remote.ts";
import { toOpenSandboxNetworkPolicy } from "./network.ts";
import { HttpClient } from "../remote/http.ts";
import { answers, httpOptionsOf } from "../remote/service_calls.ts";
import { runRemoteCommand } from "../remote/command.ts";
import { helperShell } from "../remote/_shell_files.ts";
import { withShellPaths } from "../remote/shell_paths.ts";
import {
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceRuntime,
} from "../remote/sandbox_service.ts";
import { ExecdClient } from "./execd.ts";
import { attachExecdBackground, startExecdBackground } from "./_background.ts";
import {
  EXECD_PORT,
  LifecycleClient,
  type SandboxInfo,
  type SandboxSpec,
} from "./lifecycle.ts";

/** States after which a sandbox never runs again. */
const GONE_STATES = new Set(["Stopping", "Terminated", "Failed"]);

/**
 * Options of {@linkcode OpenSandboxSkillRuntime}.
 * Defaults: `cwd` `/workspace`, `skillsRoot` `/workspace/skills`,
 * `conversationsRoot` `/workspace/conversations`.
 */
export interface OpenSandboxSkillRuntimeOptions extends SandboxKindOptions {
  /**
   * The lifecycle server, e.g. `http://localhost:8080` (`/v1` is added when
   * missing). With the conversation id, it keys a conversation's record.
   */
  readonly baseUrl: string;
  /** The API key (`OPEN-SANDBOX-API-KEY`); never shown in errors. */
  readonly apiKey?: string;
  /** What a sandbox the runtime creates is made of. */
  readonly sandbox?: SandboxSpec;
  /**
   * The egress policy of a sandbox the runtime creates, in the shape every
   * runtime shares: sent as OpenSandbox's `networkPolicy` (deny rules, then
   * allow rules, default deny), which the server's egress sidecar enforces by
   * host name. Ports and IP addresses cannot be expressed there and are
   * refused. Not with `sandbox.networkPolicy`, nor with `sandboxId` (an
   * existing sandbox keeps its own).
   */
  readonly network?: NetworkPolicy;
  /**
   * Refused: secrets at the egress (placeholders replaced by a proxy) are the
   * isolated local mode's; OpenSandbox's credential vault is configured on
   * the server.
   */
  readonly secrets?: SecretsOption;
}

/**
 * The OpenSandbox runtime (`name: "opensandbox"`).
 *
 * **Plain**: on first real use it creates a sandbox through the lifecycle API
 * (image, timeout, resource limits, environment, metadata, entrypoint), or
 * attaches to `sandboxId`, waits until execd answers, then runs commands and
 * moves files through execd. Skills are uploaded into `skillsRoot`. `close()`
 * deletes the sandbox only when this runtime created it.
 *
 * **Conversation** (`conversationId`): the store maps the conversation (and
 * the server's base URL, not the API key) to its sandbox. The first runtime
 * creates the sandbox and records it (insert-if-absent: of two processes
 * racing, the loser deletes its own sandbox and attaches to the winner's);
 * later runtime objects attach to it and renew its expiry. A skill recorded
 * as prepared with the same digest is neither uploaded nor bootstrapped
 * again. The workspace is `<conversationsRoot>/<conversationId>`; file paths
 * and working directories are fenced inside it (lexically: the sandbox is
 * the boundary beyond). `close()` never deletes a conversation's sandbox;
 * {@linkcode destroy} removes its record and then the sandbox.
 *
 * No request is made before real use: constructing the runtime, `close()`
 * of a runtime never used, and a path refused by the fence make none. While
 * in use, the sandbox's expiry is renewed (when it has one) once half of its
 * timeout has passed since the last renewal.
 *
 * Needs `--allow-net` for the server and the sandbox's endpoints, and
 * `--allow-read` of the skills it uploads.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assert } from "@std/assert";
 * import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";
 * const runtime = new OpenSandboxSkillRuntime({
 *   baseUrl: "http://127.0.0.1:9", // nothing listens here
 *   conversationId: "thread-1",
 * });
 * assert(runtime.cwd === "/workspace/conversations/thread-1");
 * await runtime.close(); // never used: no request
 * ```
 */
export class OpenSandboxSkillRuntime
  extends SandboxServiceRuntime<SandboxInfo> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The server, the sandbox, the mode.
   * @throws {TypeError} A bad URL, conversation id, path or variable, or
   * `sandboxId` together with a conversation.
   */
  constructor(options: OpenSandboxSkillRuntimeOptions) {
    const lifecycle = new LifecycleClient(options);
    const spec = withNetwork(options);
    super({
      ...options,
      name: "opensandbox",
      service: openSandboxService(lifecycle, spec, options),
      conversationsRoot: options.conversationsRoot ??
        "/workspace/conversations",
      timeoutSeconds: spec.timeoutSeconds,
      readinessName: "execd",
    });
  }
}

/** OpenSandbox as a sandbox service: the lifecycle API and each sandbox's execd. */
function openSandboxService(
  lifecycle: LifecycleClient,
  spec: SandboxSpec,
  options: OpenSandboxSkillRuntimeOptions,
): SandboxService<SandboxInfo> {
  return {
    serverUrl: lifecycle.baseUrl,
    create: ({ metadata, signal }) =>
      lifecycle.create(
        { ...spec, metadata: { ...spec.metadata, ...metadata } },
        signal,
      ),
    get: (id, signal) => lifecycle.get(id, signal),
    gone: ({ state, detail }) =>
      GONE_STATES.has(state)
        ? `${state}${detail ? ` (${detail})` : ""}`
        : undefined,
    delete: (id, signal) => lifecycle.delete(id, signal),
    renew: (id, expiresAt, signal) => lifecycle.renew(id, expiresAt, signal),
    async open(sandbox, signal) {
      const endpoint = await lifecycle.endpoint(sandbox.id, EXECD_PORT, signal);
      const execd = new ExecdClient(
        new HttpClient({
          baseUrl: endpoint.url,
          headers: endpoint.headers,
          secretHeaders: Object.keys(endpoint.headers),
          ...httpOptionsOf(options),
          ...(options.onEvent ? { onEvent: options.onEvent } : {}),
        }),
      );
      // execd expands `$` in every path: such paths go through commands.
      const files = withShellPaths(
        execd,
        helperShell((command) => runRemoteCommand(execd.commands, command)),
      );
      return {
        files,
        commands: execd.commands,
        startBackground: (command) => startExecdBackground(execd, command),
        attachBackground: (id, sinks) =>
          attachExecdBackground(execd, id, sinks),
        isReady: (signal) => answers(execd.http, "/ping", signal),
        makeDirectories: files.makeDirectories,
      };
    },
  };
}

/** The sandbox spec with the `network` option as its `networkPolicy`. */
function withNetwork(options: OpenSandboxSkillRuntimeOptions): SandboxSpec {
  const spec = options.sandbox ?? {};
  const network = checkRemoteEgress(
    "OpenSandbox",
    options,
    spec.networkPolicy !== undefined ? "networkPolicy" : undefined,
    "; configure OpenSandbox's credential vault on its server",
  );
  if (network === undefined) return spec;
  return { ...spec, networkPolicy: toOpenSandboxNetworkPolicy(network) };
}
