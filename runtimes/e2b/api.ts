/**
 * The client of E2B's control plane (`openapi.yml`): create, describe,
 * connect (resuming a paused sandbox), set the timeout, pause, kill.
 *
 * @module
 */
import { HttpClient } from "../remote/http.ts";
import {
  httpOptionsOf,
  jsonOrNull,
  sendCall,
} from "../remote/service_calls.ts";

/** E2B's control plane. */
export const E2B_API_URL = "https://api.e2b.app";

/** A sandbox as the control plane describes it. */
export interface E2BSandbox {
  /** Its id. */
  readonly id: string;
  /** When it expires (`endAt`), or `null` when unknown. */
  readonly expiresAt: Date | null;
  /** `running` or `paused` (a created or connected one is `running`). */
  readonly state: string;
  /** envd's access token, when the answer carried one. */
  readonly envdAccessToken?: string | undefined;
  /** The domain of its envd, when the answer carried one. */
  readonly domain?: string | undefined;
}

/** What a sandbox the runtime creates is made of. */
export interface E2BSandboxSpec {
  /** The template. Default `base`. */
  readonly template?: string;
  /** Lifetime in seconds, renewed while used. Default 600. */
  readonly timeoutSeconds?: number;
  /** Metadata (strings). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Environment of every command. */
  readonly envVars?: Readonly<Record<string, string>>;
  /** Whether the sandbox may reach the internet (`allow_internet_access`). */
  readonly allowInternetAccess?: boolean;
  /** The network settings (`allowOut`, `denyOut`, ...), sent as given. */
  readonly network?: Readonly<Record<string, unknown>>;
  /** Whether envd requires its access token (`secure`). Default `true`. */
  readonly secure?: boolean;
}

/** Options of {@linkcode E2BApiClient}. */
export interface E2BApiClientOptions {
  /** The control plane. Default {@linkcode E2B_API_URL}. */
  readonly baseUrl?: string;
  /** The API key (`X-API-Key`); never shown in errors. */
  readonly apiKey?: string;
  /** The `fetch` to use. */
  readonly fetch?: typeof fetch;
  /** The deadline of a call, in ms. */
  readonly timeoutMs?: number;
}

/**
 * E2B's control plane over `fetch`.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { E2BApiClient } from "./api.ts";
 * const api = new E2BApiClient({ apiKey: "e2b_123" });
 * assertEquals(api.baseUrl, "https://api.e2b.app");
 * ```
 */
export class E2BApiClient {
  /** The control plane's base URL. */
  readonly baseUrl: string;
  readonly #http: HttpClient;

  /**
   * Makes the client; makes no request.
   *
   * @param options The URL, the key, the fetch.
   */
  constructor(options: E2BApiClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? E2B_API_URL).replace(/\/+$/, "");
    this.#http = new HttpClient({
      baseUrl: this.baseUrl,
      headers: options.apiKey !== undefined
        ? { "x-api-key": options.apiKey }
        : {},
      ...httpOptionsOf(options),
    });
  }

  /**
   * Creates a sandbox (`POST /sandboxes`).
   *
   * @param spec What it is made of.
   * @param signal Stops the call.
   * @returns The sandbox (running, with its envd token).
   */
  async create(
    spec: E2BSandboxSpec,
    signal?: AbortSignal,
  ): Promise<E2BSandbox> {
    const timeout = spec.timeoutSeconds ?? 600;
    const answer = await this.#http.json<Record<string, unknown>>({
      method: "POST",
      path: "/sandboxes",
      json: {
        templateID: spec.template ?? "base",
        timeout,
        secure: spec.secure ?? true,
        ...(spec.metadata ? { metadata: spec.metadata } : {}),
        ...(spec.envVars ? { envVars: spec.envVars } : {}),
        ...(spec.allowInternetAccess !== undefined
          ? { allow_internet_access: spec.allowInternetAccess }
          : {}),
        ...(spec.network ? { network: spec.network } : {}),
      },
      idempotent: false,
      ...(signal ? { signal } : {}),
    });
    return sandboxOf(answer, new Date(Date.now() + timeout * 1000));
  }

  /**
   * Describes a sandbox (`GET /sandboxes/{id}`), or `null` when unknown.
   *
   * @param id The sandbox.
   * @param signal Stops the call.
   * @returns The sandbox.
   */
  async get(id: string, signal?: AbortSignal): Promise<E2BSandbox | null> {
    const answer = await jsonOrNull<Record<string, unknown>>(this.#http, {
      method: "GET",
      path: `/sandboxes/${encodeURIComponent(id)}`,
      ...(signal ? { signal } : {}),
    });
    return answer && sandboxOf(answer, null);
  }

  /**
   * Connects to a sandbox (`POST /sandboxes/{id}/connect`), resuming it when
   * paused, and sets its timeout.
   *
   * @param id The sandbox.
   * @param timeoutSeconds Its new lifetime from now.
   * @param signal Stops the call.
   * @returns The sandbox with its envd token.
   */
  async connect(
    id: string,
    timeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<E2BSandbox> {
    const answer = await this.#http.json<Record<string, unknown>>({
      method: "POST",
      path: `/sandboxes/${encodeURIComponent(id)}/connect`,
      json: { timeout: Math.ceil(timeoutSeconds) },
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
    return sandboxOf(
      answer,
      new Date(Date.now() + Math.ceil(timeoutSeconds) * 1000),
    );
  }

  /**
   * Sets a sandbox's lifetime from now (`POST /sandboxes/{id}/timeout`).
   *
   * @param id The sandbox.
   * @param timeoutSeconds Seconds from now.
   * @param signal Stops the call.
   * @returns The new expiry.
   */
  async setTimeout(
    id: string,
    timeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<Date> {
    const seconds = Math.max(1, Math.ceil(timeoutSeconds));
    await sendCall(this.#http, {
      method: "POST",
      path: `/sandboxes/${encodeURIComponent(id)}/timeout`,
      json: { timeout: seconds },
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
    return new Date(Date.now() + seconds * 1000);
  }

  /**
   * Pauses a sandbox (`POST /sandboxes/{id}/pause`); one already paused is
   * no error.
   *
   * @param id The sandbox.
   * @param signal Stops the call.
   * @returns When paused.
   */
  async pause(id: string, signal?: AbortSignal): Promise<void> {
    await sendCall(this.#http, {
      method: "POST",
      path: `/sandboxes/${encodeURIComponent(id)}/pause`,
      idempotent: true,
      timeoutMs: 120_000,
      ...(signal ? { signal } : {}),
    }, [409]);
  }

  /**
   * Kills a sandbox (`DELETE /sandboxes/{id}`); one already gone is no error.
   *
   * @param id The sandbox.
   * @param signal Stops the call.
   * @returns Whether it was there.
   */
  kill(id: string, signal?: AbortSignal): Promise<boolean> {
    return sendCall(this.#http, {
      method: "DELETE",
      path: `/sandboxes/${encodeURIComponent(id)}`,
      ...(signal ? { signal } : {}),
    }, [404]);
  }
}

function sandboxOf(
  answer: Record<string, unknown>,
  fallbackEnd: Date | null,
): E2BSandbox {
  const id = answer.sandboxID;
  if (typeof id !== "string" || id === "") {
    throw new Error("Cannot use the E2B answer: it names no sandboxID");
  }
  const end = typeof answer.endAt === "string" ? new Date(answer.endAt) : null;
  return {
    id,
    expiresAt: end && !Number.isNaN(end.getTime()) ? end : fallbackEnd,
    state: typeof answer.state === "string" ? answer.state : "running",
    ...(typeof answer.envdAccessToken === "string"
      ? { envdAccessToken: answer.envdAccessToken }
      : {}),
    ...(typeof answer.domain === "string" ? { domain: answer.domain } : {}),
  };
}
