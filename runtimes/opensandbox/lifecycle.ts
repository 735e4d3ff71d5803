/**
 * The client of the OpenSandbox lifecycle server: create, get, renew and
 * delete a sandbox, and resolve the endpoint of its execd.
 *
 * @module
 */
import type { OpenSandboxNetworkPolicy } from "./network.ts";
import type { SkillEventListener } from "../../observe/events.ts";
import { HttpClient } from "../remote/http.ts";
import {
  createTagged,
  httpOptionsOf,
  jsonOrNull,
  sendCall,
} from "../remote/service_calls.ts";

/** The port of execd inside every sandbox. */
export const EXECD_PORT = 44772;

/** The header carrying the lifecycle API key. */
export const API_KEY_HEADER = "OPEN-SANDBOX-API-KEY";

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

/** Options of {@linkcode LifecycleClient}: the runtime's own. */
export interface LifecycleClientOptions {
  /** The lifecycle server (`/v1` is added when missing). */
  readonly baseUrl: string;
  /** The API key, sent as `OPEN-SANDBOX-API-KEY`. */
  readonly apiKey?: string;
  /** The fetch to use. */
  readonly fetch?: typeof fetch;
  /** The timeout of one call, in ms. Default 30 000. */
  readonly requestTimeoutMs?: number;
  /** Receives an `http_request` event per call. */
  readonly onEvent?: SkillEventListener;
}

interface RawSandbox {
  id: string;
  status?: { state?: string; reason?: string; message?: string };
  expiresAt?: string | null;
  metadata?: Record<string, string>;
}

/**
 * The lifecycle API. The API key never appears in an error.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assert } from "@std/assert";
 * import { LifecycleClient } from "./lifecycle.ts";
 * const client = new LifecycleClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
 * assert(client.baseUrl === "http://127.0.0.1:1/v1");
 * ```
 */
export class LifecycleClient {
  /** The API's base URL, ending with `/v1`. */
  readonly baseUrl: string;
  readonly #http: HttpClient;

  /**
   * Makes the client.
   *
   * @param options The server, the key, the fetch.
   * @throws {TypeError} The base URL is not an http(s) URL.
   */
  constructor(options: LifecycleClientOptions) {
    this.baseUrl = lifecycleBase(options.baseUrl);
    this.#http = new HttpClient({
      baseUrl: this.baseUrl,
      headers: options.apiKey !== undefined
        ? { [API_KEY_HEADER]: options.apiKey }
        : {},
      secretHeaders: [API_KEY_HEADER],
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      ...httpOptionsOf(options),
    });
  }

  /**
   * Creates a sandbox (`POST /sandboxes`, 202), never retried, tagged so
   * that one made despite a lost answer is deleted (`createTagged`).
   *
   * @param spec The image, timeout, limits, env, metadata, entrypoint.
   * @param signal Stops the call.
   * @returns The new sandbox (often still `Pending`).
   */
  async create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxInfo> {
    const timeout = spec.timeoutSeconds === undefined
      ? 600
      : spec.timeoutSeconds;
    return await createTagged(
      async (tag) =>
        toInfo(
          await this.#http.json<RawSandbox>({
            method: "POST",
            path: "/sandboxes",
            json: {
              image: { uri: spec.image ?? "ubuntu:24.04" },
              entrypoint: spec.entrypoint ?? ["tail", "-f", "/dev/null"],
              timeout,
              resourceLimits: spec.resourceLimits ??
                { cpu: "500m", memory: "512Mi" },
              ...(spec.env ? { env: spec.env } : {}),
              ...(spec.networkPolicy
                ? { networkPolicy: spec.networkPolicy }
                : {}),
              metadata: { ...spec.metadata, ...tag },
            },
            idempotent: false,
            ...(signal ? { signal } : {}),
          }),
        ),
      (tag) => this.list(tag),
      (id) => this.delete(id),
    );
  }

  /** The sandboxes (first page of up to 100) whose metadata holds `metadata`. */
  async list(
    metadata: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<SandboxInfo[]> {
    const answer = await this.#http.json<{ items?: RawSandbox[] }>({
      method: "GET",
      path: "/sandboxes",
      query: {
        metadata: new URLSearchParams(metadata).toString(),
        pageSize: "100",
      },
      ...(signal ? { signal } : {}),
    });
    return (answer.items ?? []).map(toInfo);
  }

  /** Describes a sandbox, or `null` when the server does not know it (404). */
  async get(id: string, signal?: AbortSignal): Promise<SandboxInfo | null> {
    const raw = await jsonOrNull<RawSandbox>(this.#http, {
      method: "GET",
      path: `/sandboxes/${encodeURIComponent(id)}`,
      ...(signal ? { signal } : {}),
    });
    return raw && toInfo(raw);
  }

  /** Deletes a sandbox (204): `false` when it was already gone (404). */
  delete(id: string, signal?: AbortSignal): Promise<boolean> {
    return sendCall(this.#http, {
      method: "DELETE",
      path: `/sandboxes/${encodeURIComponent(id)}`,
      ...(signal ? { signal } : {}),
    }, [404]);
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
    const date = answer.expiresAt ? new Date(answer.expiresAt) : expiresAt;
    return Number.isNaN(date.getTime()) ? expiresAt : date;
  }

  /**
   * Resolves the endpoint of a port of a sandbox (it resolves while the
   * sandbox is still `Pending`). The answer has no scheme and may carry a
   * path; `http://` is added.
   *
   * @param id The sandbox id.
   * @param port The port inside the sandbox. Default execd's, 44772.
   * @param signal Stops the call.
   * @returns The endpoint's URL and the headers every call must carry.
   */
  async endpoint(
    id: string,
    port: number = EXECD_PORT,
    signal?: AbortSignal,
  ): Promise<{ url: string; headers: Record<string, string> }> {
    const answer = await this.#http.json<
      { endpoint?: string; headers?: Record<string, string> }
    >({
      method: "GET",
      path: `/sandboxes/${encodeURIComponent(id)}/endpoints/${port}`,
      ...(signal ? { signal } : {}),
    });
    const endpoint = answer.endpoint;
    if (typeof endpoint !== "string" || endpoint === "") {
      throw new Error(
        `Cannot reach sandbox "${id}": the server gave no endpoint for port ${port}`,
      );
    }
    const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)
      ? endpoint
      : `http://${endpoint}`;
    return {
      url: url.replace(/\/+$/, ""),
      headers: { ...(answer.headers ?? {}) },
    };
  }
}

function lifecycleBase(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(
      `Cannot use the OpenSandbox URL "${baseUrl}": it is not a URL`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(
      `Cannot use the OpenSandbox URL "${baseUrl}": it must be http or https`,
    );
  }
  const trimmed = `${url.origin}${url.pathname}`.replace(/\/+$/, "");
  return trimmed.endsWith("/v1") ? trimmed : `${trimmed}/v1`;
}

function toInfo(raw: RawSandbox): SandboxInfo {
  if (!raw || typeof raw.id !== "string") {
    throw new Error("Cannot read the sandbox: the server's answer has no id");
  }
  const detail = [raw.status?.reason, raw.status?.message].filter(Boolean)
    .join(": ");
  const expires = raw.expiresAt ? new Date(raw.expiresAt) : null;
  return {
    id: raw.id,
    state: raw.status?.state ?? "Unknown",
    detail: detail || undefined,
    expiresAt: expires && !Number.isNaN(expires.getTime()) ? expires : null,
    metadata: raw.metadata ?? {},
  };
}
