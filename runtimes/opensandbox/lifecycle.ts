/**
 * OpenSandbox as the kit's sandbox service: the lifecycle server's calls
 * (create, get, renew, delete) and each sandbox's session on its execd.
 *
 * @module
 */
import type { OpenSandboxNetworkPolicy } from "./network.ts";
import { toOpenSandboxNetworkPolicy } from "./network.ts";
import { checkRemoteEgress } from "../../network/remote.ts";
import type { HttpClient } from "../remote/http.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import type {
  SandboxService,
  ServiceCreateOptions,
} from "../remote/sandbox_service.ts";
import { createTagged } from "../remote/service_calls.ts";
import {
  dateOrNull,
  goneStates,
  sandboxCalls,
  serviceBaseUrl,
  serviceClient,
} from "../remote/service_answers.ts";
import { execdSession } from "./execd.ts";
import type { OpenSandboxSkillRuntimeOptions } from "./runtime.ts";

/** The port of execd inside every sandbox. */
export const EXECD_PORT = 44772;

/** What a new sandbox is made of. */
export interface SandboxSpec {
  /** The container image. Default `ubuntu:24.04`. */
  readonly image?: string;
  /** The entry process. Default `["tail", "-f", "/dev/null"]`. */
  readonly entrypoint?: readonly string[];
  /**
   * Seconds until the server removes the sandbox (at least 60), renewed while
   * the runtime is used; `null` for no expiry. Default 600.
   */
  readonly timeoutSeconds?: number | null;
  /** Resource limits. Default `{ cpu: "500m", memory: "512Mi" }`. */
  readonly resourceLimits?: Readonly<Record<string, string>>;
  /** Variables of the sandbox's own environment (its entry process and execd). */
  readonly env?: Readonly<Record<string, string>>;
  /** Metadata for listing and filtering. */
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * The egress policy of the creation request (`networkPolicy`: rules in
   * order, then the default action). The runtime's `network` option fills
   * it from the shape every runtime shares.
   */
  readonly networkPolicy?: OpenSandboxNetworkPolicy;
}

/** A sandbox as the lifecycle server describes it. */
export interface SandboxInfo {
  /** Its id. */
  readonly id: string;
  /** `Pending`, `Running`, `Failed`, `Terminated`, ... */
  readonly state: string;
  /** The server's reason and message for the state, when given. */
  readonly detail: string | undefined;
  /** When it expires, when it does. */
  readonly expiresAt: Date | null;
  /** Its metadata. */
  readonly metadata: Readonly<Record<string, string>>;
}

interface RawSandbox {
  id: string;
  status?: { state?: string; reason?: string; message?: string };
  expiresAt?: string | null;
  metadata?: Record<string, string>;
}

/**
 * The lifecycle API and each sandbox's execd, as the kit's
 * `SandboxService`. The API key never appears in an error.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assert } from "@std/assert";
 * import { LifecycleClient } from "./lifecycle.ts";
 * const client = new LifecycleClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
 * assert(client.baseUrl === "http://127.0.0.1:1/v1");
 * ```
 */
export class LifecycleClient implements SandboxService<SandboxInfo> {
  /** The API's base URL, ending with `/v1` (it keys conversations). */
  readonly baseUrl: string;
  /** The same: the base URL without credentials. */
  readonly serverUrl: string;
  /** What a sandbox the runtime creates is made of, `network` included. */
  readonly spec: SandboxSpec;
  readonly #http: HttpClient;
  readonly #options: OpenSandboxSkillRuntimeOptions;

  /**
   * Makes the client; makes no request.
   *
   * @param options The runtime's options.
   * @throws {TypeError} The base URL is not an http(s) URL; `network` beside
   * `sandbox.networkPolicy` or `sandboxId`, or `secrets`.
   * @throws {RangeError} A `network` pattern OpenSandbox cannot express.
   */
  constructor(options: OpenSandboxSkillRuntimeOptions) {
    this.baseUrl = serviceBaseUrl(options.baseUrl, "/v1");
    this.serverUrl = this.baseUrl;
    const spec = options.sandbox ?? {};
    const network = checkRemoteEgress(
      "OpenSandbox",
      options,
      spec.networkPolicy !== undefined ? "networkPolicy" : undefined,
      "; configure OpenSandbox's credential vault on its server",
    );
    this.spec = network === undefined
      ? spec
      : { ...spec, networkPolicy: toOpenSandboxNetworkPolicy(network) };
    this.#options = options;
    this.#http = serviceClient(
      this.baseUrl,
      options.apiKey === undefined
        ? {}
        : { "OPEN-SANDBOX-API-KEY": options.apiKey },
      options,
    );
    ({ get: this.get, delete: this.delete } = sandboxCalls(
      this.#http,
      "/sandboxes",
      toInfo,
    ));
  }

  /** Why a sandbox never runs again (`Failed (reason)`), if it does not. */
  readonly gone = goneStates(["Stopping", "Terminated", "Failed"]);
  /** Describes a sandbox, or `null` when the server does not know it (404). */
  readonly get: SandboxService<SandboxInfo>["get"];
  /** Deletes a sandbox (204): `false` when it was already gone (404). */
  readonly delete: (id: string, signal?: AbortSignal) => Promise<boolean>;

  /**
   * Creates a sandbox of the spec (`POST /sandboxes`, 202; often still
   * `Pending`), never retried, tagged so that one made despite a lost answer
   * is deleted (`createTagged`).
   */
  async create(
    { metadata, signal }: ServiceCreateOptions,
  ): Promise<SandboxInfo> {
    const spec = this.spec;
    const body = {
      image: { uri: spec.image ?? "ubuntu:24.04" },
      entrypoint: spec.entrypoint ?? ["tail", "-f", "/dev/null"],
      timeout: spec.timeoutSeconds === undefined ? 600 : spec.timeoutSeconds,
      resourceLimits: spec.resourceLimits ?? { cpu: "500m", memory: "512Mi" },
      ...(spec.env ? { env: spec.env } : {}),
      ...(spec.networkPolicy ? { networkPolicy: spec.networkPolicy } : {}),
    };
    return await createTagged(
      async (tag) =>
        toInfo(
          await this.#http.json<RawSandbox>({
            method: "POST",
            path: "/sandboxes",
            json: {
              ...body,
              metadata: { ...spec.metadata, ...metadata, ...tag },
            },
            idempotent: false,
            ...(signal ? { signal } : {}),
          }),
        ),
      // The first page (up to 100) of the sandboxes carrying the tag.
      async (tag) => {
        const answer = await this.#http.json<{ items?: RawSandbox[] }>({
          method: "GET",
          path: "/sandboxes",
          query: {
            metadata: new URLSearchParams(tag).toString(),
            pageSize: "100",
          },
        });
        return (answer.items ?? []).map(toInfo);
      },
      (id) => this.delete(id),
    );
  }

  /** Moves a sandbox's expiry (later only) and answers the one the server set. */
  async renew(
    id: string,
    expiresAt: Date,
    signal?: AbortSignal,
  ): Promise<Date> {
    const answer = await this.#http.json<{ expiresAt?: string }>({
      method: "POST",
      path: `/sandboxes/${encodeURIComponent(id)}/renew-expiration`,
      json: { expiresAt: expiresAt.toISOString() },
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
    return dateOrNull(answer.expiresAt) ?? expiresAt;
  }

  /**
   * Opens a sandbox's session on its execd, whose endpoint resolves while
   * the sandbox is still `Pending` (no scheme, maybe a path, and headers).
   *
   * @param sandbox The sandbox.
   * @param signal Stops the call.
   * @returns The session.
   */
  async open(
    { id }: SandboxInfo,
    signal?: AbortSignal,
  ): Promise<RemoteSession> {
    const answer = await this.#http.json<
      { endpoint?: string; headers?: Record<string, string> }
    >({
      method: "GET",
      path: `/sandboxes/${encodeURIComponent(id)}/endpoints/${EXECD_PORT}`,
      ...(signal ? { signal } : {}),
    });
    if (typeof answer.endpoint !== "string" || answer.endpoint === "") {
      throw new Error(
        `Cannot reach sandbox "${id}": the server gave no endpoint for port ${EXECD_PORT}`,
      );
    }
    return execdSession(
      serviceClient(answer.endpoint, answer.headers ?? {}, this.#options),
    );
  }
}

function toInfo(raw: RawSandbox): SandboxInfo {
  if (!raw || typeof raw.id !== "string") {
    throw new Error("Cannot read the sandbox: the server's answer has no id");
  }
  const detail = [raw.status?.reason, raw.status?.message].filter(Boolean)
    .join(": ");
  return {
    id: raw.id,
    state: raw.status?.state ?? "Unknown",
    detail: detail || undefined,
    expiresAt: dateOrNull(raw.expiresAt),
    metadata: raw.metadata ?? {},
  };
}
