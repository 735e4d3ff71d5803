/**
 * The implementation of {@linkcode createMcpHttpHandler} (see `http.ts`),
 * loaded on the first call, so that importing `./mcp` does not load the
 * session table, the conversation stores and the tools builder.
 *
 * @module
 */
import { checkNumber } from "../../_internal/check_number.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { isInitializeRequest } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  redactError,
  Redactor,
  redactSecrets,
} from "../../_internal/redact.ts";
import { hostPath } from "../../_internal/std.ts";
import { defaultMcpConversationsRoot } from "./_conversations_root.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { SkillTools } from "../builder.ts";
import { connect, type McpServerOptions } from "./_server.ts";
import { SkillCatalog } from "./_skills.ts";
import {
  clientOf,
  guardRequest,
  jsonError,
  lowerHost,
  readJson,
} from "./_http_guards.ts";
import {
  destroyRuntime,
  type McpSession,
  McpSessionTable,
  sweepSessionWorkspaces,
} from "./_http_sessions.ts";
import type {
  ConversationStore,
  SessionRecord,
} from "../../runtimes/stores/conversation_store.ts";
import {
  bearerOf,
  newSessionId,
  recordCancels,
  replayedInitialize,
  replayStream,
  sessionEventStore,
  sha256Hex,
  stored,
  StoreFailure,
  storeUnavailable,
  watchCancels,
} from "./_http_shared.ts";
import {
  DEFAULT_MAX_MCP_SESSIONS,
  DEFAULT_MAX_MCP_SESSIONS_PER_CLIENT,
  DEFAULT_MCP_SESSION_IDLE_MS,
  DEFAULT_MCP_SWEEP_AFTER_MS,
  type McpClientInfo,
  type McpHttpHandler,
  type McpHttpHandlerOptions,
  type McpRuntimeFactory,
} from "./http.ts";

/** How long a sweep's claim on an idle session holds: 5 minutes. */
const CLAIM_MS = 5 * 60 * 1000;

/**
 * Who a client is for the per-client limit: the digest of its token when
 * it sends one and the handler has one (every client of one shared token is
 * one client); else its address, or the first address of `X-Forwarded-For`
 * when the request came from a trusted proxy.
 */
async function clientKey(
  request: Request,
  addr: Deno.Addr | undefined,
  token: string | undefined,
  trustedProxies: readonly string[],
): Promise<string> {
  const bearer = bearerOf(request);
  if (token !== undefined && bearer !== undefined) {
    return `token:${(await sha256Hex(bearer)).slice(0, 32)}`;
  }
  const address = clientOf(addr);
  if (trustedProxies.includes(address)) {
    const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]
      ?.trim();
    if (forwarded) return forwarded;
  }
  return address;
}

/** The longest time between two sweeps of session workspaces: 1 hour. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;

/** See {@linkcode createMcpHttpHandler} in `http.ts`. */
export async function createMcpHttpHandler(
  options: McpHttpHandlerOptions = {},
): Promise<McpHttpHandler> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(
      "Cannot make the MCP handler: options must be an object",
    );
  }
  const {
    runtime: factoryOption,
    conversationsRoot,
    instructions,
    token,
    allowedHosts,
    allowedOrigins,
    idleTimeoutMs = DEFAULT_MCP_SESSION_IDLE_MS,
    maxSessions = DEFAULT_MAX_MCP_SESSIONS,
    maxSessionsPerClient = DEFAULT_MAX_MCP_SESSIONS_PER_CLIENT,
    keepWorkspaces = false,
    sweepAfterMs = keepWorkspaces ? false : DEFAULT_MCP_SWEEP_AFTER_MS,
    path,
    jsonResponse = false,
    onError,
    signal,
    name,
    version,
    maxResourceBytes,
    copyPolicy,
    store,
    runtimeDescription,
    streamLimitMs = 120_000,
    retryMs = 1000,
    sweepIntervalMs = 60_000,
    trustedProxies = [],
    onWarning,
    ...buildOptions
  } = options;
  checkNumber(streamLimitMs, "streamLimitMs", "positive integer");
  checkNumber(retryMs, "retryMs", "positive integer");
  checkNumber(sweepIntervalMs, "sweepIntervalMs", "positive integer");
  const described = runtimeDescription ??
    { kind: factoryOption === undefined ? "local" : "custom" };
  checkNumber(idleTimeoutMs, "idleTimeoutMs", "positive integer");
  checkNumber(maxSessions, "maxSessions", "positive integer");
  checkNumber(maxSessionsPerClient, "maxSessionsPerClient", "positive integer");
  if (sweepAfterMs !== false) {
    checkNumber(sweepAfterMs, "sweepAfterMs", "positive integer");
  }
  if (factoryOption !== undefined && typeof factoryOption !== "function") {
    throw new TypeError(
      "Cannot make the MCP handler: runtime must be a function (sessionId) => Promise<SkillRuntime>",
    );
  }
  if (token !== undefined && (typeof token !== "string" || token === "")) {
    throw new TypeError(
      "Cannot make the MCP handler: token must be a non-empty string",
    );
  }
  if (
    path !== undefined && (typeof path !== "string" || !path.startsWith("/"))
  ) {
    throw new TypeError(
      `Cannot serve MCP at path ${
        JSON.stringify(path)
      }: it must start with "/"`,
    );
  }
  if (maxResourceBytes !== undefined) {
    // Checked now rather than at the first session.
    new SkillCatalog([], { maxResourceBytes });
  }
  const hosts = allowedHosts?.map(lowerHost);
  const origins = allowedOrigins?.map((o) => o.toLowerCase());

  // The tool kit's modules, loaded by the first handler (not by importing
  // ./mcp: a cold start pays for them only when it serves).
  const [{ loadToolInput }, { measureSkillCatalog }, { buildSkillTools }] =
    await Promise.all([
      import("../_tool_input.ts"),
      import("../skill_tool.ts"),
      import("../builder.ts"),
    ]);
  // Loading once, for every session: the skills and the configurations are
  // checked now, so a mistake fails here and not at a client's first call.
  const loaded = await loadToolInput({
    ...buildOptions,
    ...(signal ? { signal } : {}),
  });
  const skills = loaded.skills;
  const configured = [...loaded.configs.values()].flatMap((c) =>
    Object.values(c.env)
  );
  const { names: _names, ...sessionBuild } = buildOptions;
  // The skill tool's budget and priority are checked now too (each session
  // builds its own listing): a budget too small for the tool's own text
  // fails here, not at every client's first request.
  if (
    skills.length > 0 &&
    (buildOptions.catalogBudget !== undefined ||
      buildOptions.priority !== undefined)
  ) {
    measureSkillCatalog(skills, {
      ...(buildOptions.catalogBudget !== undefined
        ? { catalogBudget: buildOptions.catalogBudget }
        : {}),
      ...(buildOptions.priority !== undefined
        ? { priority: buildOptions.priority }
        : {}),
      ...(buildOptions.skillDescription !== undefined
        ? { description: buildOptions.skillDescription }
        : {}),
      ...(buildOptions.catalog ? { catalog: buildOptions.catalog } : {}),
    });
  }

  let resolvedRoot: string | undefined;
  const rootOf = (): string =>
    resolvedRoot ??= conversationsRoot === undefined
      ? defaultMcpConversationsRoot()
      : hostPath.resolve(conversationsRoot);
  const factory: McpRuntimeFactory = factoryOption ?? (() => {
    return async (sessionId: string) => {
      const root = rootOf();
      // The local runtime, loaded by the first session that needs it (its
      // own module: not the doctor that the kind's index also exports).
      const { LocalSkillRuntime } = await import(
        "../../runtimes/local/runtime.ts"
      );
      return await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: sessionId,
      });
    };
  })();
  const serverOptions = (
    runtime: SkillRuntime,
    kit: SkillTools,
  ): McpServerOptions => ({
    // Every answer: without the token or a configured value.
    secrets: () => [...(token ? [token] : []), ...kit.context.secrets()],
    ...(name !== undefined ? { name } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(maxResourceBytes !== undefined ? { maxResourceBytes } : {}),
    ...(copyPolicy !== undefined ? { copyPolicy } : {}),
    // A plain JSON answer cannot carry an elicitation/create during the call.
    ...(jsonResponse ? { elicitation: false } : {}),
    ...(onWarning !== undefined ? { onWarning } : {}),
    skills,
    instructions: typeof instructions === "function"
      ? instructions(runtime)
      : instructions ?? defaultInstructions(runtime),
  });
  const report = (error: unknown) => {
    try {
      // Reported (often logged) without the token or a configured value.
      const redactor = new Redactor([
        ...(token ? [token] : []),
        ...configured,
      ]);
      const clean = redactError(
        error instanceof Error ? error : new Error(String(error)),
        redactor,
      );
      onError?.(clean);
    } catch {
      // A failing reporter must not break serving.
    }
  };

  const sessions = new McpSessionTable({
    idleTimeoutMs,
    // With a store the limits count across instances (below); this
    // instance's table then only holds the sessions it serves now.
    maxSessions: store ? Number.MAX_SAFE_INTEGER : maxSessions,
    maxSessionsPerClient: store
      ? Number.MAX_SAFE_INTEGER
      : maxSessionsPerClient,
    keepWorkspaces,
    report,
    ...(store
      ? {
        endInStore: async (id: string) =>
          (await store.deleteSession(id)) !== null,
        evictWhenIdle: true,
      }
      : {}),
  });
  const shutdown = new AbortController();
  let closed: Promise<void> | undefined;

  /** Makes a session's runtime, tools, transport and server (not yet added). */
  const openSession = async (
    id: string,
    conversationId: string,
    client: string,
  ): Promise<McpSession> => {
    const runtime = await factory(conversationId, { signal: shutdown.signal });
    try {
      // With `watch`, each session's kit reads the skills from disk and
      // reloads them (its watcher closes with the session); otherwise the
      // skills loaded once are shared.
      const watching = buildOptions.watch === true;
      const tools = await buildSkillTools(
        watching
          ? { ...buildOptions, runtime }
          : { ...sessionBuild, skills, runtime },
      );
      const made: { session?: McpSession } = {};
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        enableJsonResponse: jsonResponse,
        onsessionclosed: () => made.session && sessions.close(made.session),
        ...(store
          ? { eventStore: sessionEventStore(store, id), retryInterval: retryMs }
          : {}),
      });
      transport.onerror = report;
      const { connection, calls } = await connect(
        tools.tools,
        transport,
        {
          ...serverOptions(runtime, tools),
          ...(watching ? { reload: tools } : {}),
        },
      );
      const session: McpSession = made.session = {
        id,
        client,
        runtime,
        tools,
        transport,
        connection,
        calls,
        requests: 0,
        lastSeen: Date.now(),
        timer: undefined,
        closing: undefined,
      };
      void connection.closed.then(() =>
        sessions.close(session, store ? "evict" : "end")
      );
      return session;
    } catch (error) {
      await runtime.close().catch(report);
      throw error;
    }
  };

  const factoryFailed = (error: unknown): Response => {
    report(error);
    // Told to the client: without the token or a configured value.
    const reason = redactSecrets(
      error instanceof Error ? error.message : String(error),
      [...(token ? [token] : []), ...configured],
    );
    return jsonError(500, -32603, `Cannot start a session: ${reason}`);
  };

  const startSession = async (
    request: Request,
    body: unknown,
    client: string,
  ): Promise<Response> => {
    if (store) {
      const counts = await stored(() => store.countSessions(client));
      if (counts.client >= maxSessionsPerClient) {
        return jsonError(
          503,
          -32000,
          `Cannot start a session: this client already has ${maxSessionsPerClient} sessions open`,
        );
      }
      if (counts.total >= maxSessions) {
        return jsonError(
          503,
          -32000,
          `Cannot start a session: the server already has ${maxSessions} sessions open`,
        );
      }
    }
    const full = sessions.reserve(client);
    if (full !== undefined) {
      return jsonError(503, -32000, `Cannot start a session: ${full}`);
    }
    const id = newSessionId();
    let session: McpSession;
    try {
      if (store) {
        const messages = Array.isArray(body) ? body : [body];
        const init = messages.find((m) => isInitializeRequest(m)) as {
          params: {
            protocolVersion: string;
            capabilities?: Record<string, unknown>;
            clientInfo?: Record<string, unknown>;
          };
        };
        const bearer = bearerOf(request);
        try {
          await store.createSession({
            id,
            conversationId: id,
            runtime: { kind: described.kind, options: described.options ?? {} },
            protocolVersion: String(init.params.protocolVersion),
            clientCapabilities: init.params.capabilities ?? {},
            clientInfo: init.params.clientInfo ?? {},
            tokenDigest: token && bearer ? await sha256Hex(bearer) : null,
            client,
          });
        } catch (error) {
          if (error instanceof TypeError) {
            return jsonError(
              400,
              -32600,
              `Invalid Request: ${error.message}`,
            );
          }
          throw new StoreFailure(error);
        }
      }
      try {
        session = await openSession(id, id, client);
      } catch (error) {
        await store?.deleteSession(id).catch(report);
        return factoryFailed(error);
      }
      if (closed) {
        await sessions.close(session);
        return jsonError(503, -32000, "The server is closing");
      }
      sessions.add(session);
    } finally {
      sessions.release(client);
    }
    const response = await sessions.handle(session, request, body);
    // A refused initialisation (wrong headers...) leaves no session behind.
    if (session.transport.sessionId !== id) await sessions.close(session);
    return response;
  };

  // Sessions this instance is rebuilding from the store, by id.
  const resuming = new Map<string, Promise<McpSession>>();
  const resume = (record: SessionRecord, url: string): Promise<McpSession> => {
    let pending = resuming.get(record.id);
    if (pending === undefined) {
      pending = (async () => {
        const session = await openSession(
          record.id,
          record.conversationId,
          record.client,
        );
        // The SDK's transport accepts only a session it initialised: it is
        // handed the recorded initialize (see _http_shared.ts for why).
        for (const replayed of replayedInitialize(url, record)) {
          const answer = await session.transport.handleRequest(replayed);
          await answer.text();
        }
        if (session.transport.sessionId !== record.id) {
          await sessions.close(session, "evict");
          throw new Error(
            `Cannot resume session "${record.id}": its initialisation was refused`,
          );
        }
        sessions.add(session);
        return session;
      })().finally(() => resuming.delete(record.id));
      resuming.set(record.id, pending);
    }
    return pending;
  };

  // Watches for cancellations sent through other instances while calls run.
  const watching = new WeakSet<McpSession>();
  const watch = (session: McpSession): void => {
    if (!store || watching.has(session) || session.calls.count === 0) return;
    watching.add(session);
    watchCancels(
      store,
      session.id,
      () => {
        const running = session.calls.count > 0 && !session.closing;
        if (!running) watching.delete(session);
        return running;
      },
      (message) =>
        (session.transport.onmessage as ((m: unknown) => void) | undefined)?.(
          message,
        ),
      report,
    );
  };

  /** A request of a session, with a shared store. */
  const handleShared = async (
    shared: ConversationStore,
    sessionId: string,
    request: Request,
  ): Promise<Response> => {
    if (!/^[0-9a-f]{40}$/.test(sessionId)) {
      return jsonError(404, -32001, "Session not found");
    }
    // One write: the record's last use (none: unknown, expired, deleted).
    const record = await stored(() => shared.touchSession(sessionId));
    const local = sessions.get(sessionId);
    if (record === null) {
      if (local) void sessions.close(local, "evict");
      return jsonError(404, -32001, "Session not found");
    }
    if (record.tokenDigest !== null) {
      const bearer = bearerOf(request);
      if (!bearer || (await sha256Hex(bearer)) !== record.tokenDigest) {
        // Another token's session: nothing of it is revealed.
        return jsonError(404, -32001, "Session not found");
      }
    }
    const lastEventId = request.headers.get("last-event-id");
    if (request.method === "GET" && lastEventId) {
      return await replayStream(
        shared,
        sessionId,
        lastEventId,
        streamLimitMs,
        retryMs,
      );
    }
    let messages: unknown[] = [];
    if (request.method === "POST") {
      const length = Number(request.headers.get("content-length") ?? "NaN");
      if (length <= 1024 * 1024) {
        const parsed = await readJson(request.clone());
        if (!(parsed instanceof Response)) {
          messages = Array.isArray(parsed) ? parsed : [parsed];
          await stored(() => recordCancels(shared, sessionId, messages));
        }
      }
    }
    let session: McpSession;
    try {
      session = local ?? await resume(record, request.url);
    } catch (error) {
      if (error instanceof StoreFailure) throw error;
      return factoryFailed(error);
    }
    const response = await sessions.handle(session, request);
    watch(session);
    // A POST stream closes before the platform's limit; the call goes on
    // and the client resumes it (GET with Last-Event-ID) on any instance.
    const version = request.headers.get("mcp-protocol-version") ?? "";
    const requestIds = messages.flatMap((m) => {
      const message = m as { id?: unknown; method?: unknown } | null;
      return message && typeof message.method === "string" &&
          (typeof message.id === "string" || typeof message.id === "number")
        ? [message.id]
        : [];
    });
    if (
      requestIds.length > 0 && version >= "2025-11-25" &&
      response.headers.get("content-type")?.includes("text/event-stream")
    ) {
      const timer = setTimeout(() => {
        for (const id of requestIds) session.transport.closeSSEStream(id);
      }, streamLimitMs);
      Deno.unrefTimer?.(timer);
    }
    return response;
  };

  const handle = async (
    request: Request,
    info?: McpClientInfo,
  ): Promise<Response> => {
    try {
      if (closed) return jsonError(503, -32000, "The server is closing");
      const refused = await guardRequest(request, new URL(request.url), {
        path,
        hosts,
        origins,
        token,
      });
      if (refused) return refused;
      if (store) void storeSweep();
      const sessionId = request.headers.get("mcp-session-id");
      if (sessionId !== null) {
        if (store) return await handleShared(store, sessionId, request);
        const session = sessions.get(sessionId);
        if (session === undefined) {
          return jsonError(404, -32001, "Session not found");
        }
        return await sessions.handle(session, request);
      }
      if (request.method !== "POST") {
        return request.method === "GET" || request.method === "DELETE"
          ? jsonError(
            400,
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
          )
          : jsonError(405, -32000, "Method not allowed", {
            Allow: "GET, POST, DELETE",
          });
      }
      const body = await readJson(request);
      if (body instanceof Response) return body;
      const messages = Array.isArray(body) ? body : [body];
      if (!messages.some((m) => isInitializeRequest(m))) {
        return jsonError(
          400,
          -32000,
          "Bad Request: Mcp-Session-Id header is required",
        );
      }
      return await startSession(
        request,
        body,
        await clientKey(request, info?.remoteAddr, token, trustedProxies),
      );
    } catch (error) {
      if (error instanceof StoreFailure) {
        report(error.error);
        return storeUnavailable(error.error);
      }
      report(error);
      return jsonError(500, -32603, "Internal error");
    }
  };

  // With a store: sessions idle past the timeout are claimed there by
  // whichever instance sweeps first, their sandboxes deleted, their records
  // removed (on requests, at most once per interval, and on a timer).
  let lastStoreSweep = 0;
  let storeSweeping: Promise<void> | undefined;
  const storeSweep = (now = false): Promise<void> => {
    if (
      !store || closed ||
      (!now && Date.now() - lastStoreSweep < sweepIntervalMs)
    ) {
      return storeSweeping ?? Promise.resolve();
    }
    lastStoreSweep = Date.now();
    storeSweeping ??= (async () => {
      try {
        const claimed = await store.claimIdleSessions(
          Date.now() - idleTimeoutMs,
          CLAIM_MS,
        );
        for (const record of claimed) {
          try {
            const local = sessions.get(record.id);
            if (local) await sessions.close(local, "evict");
            if (!keepWorkspaces) {
              const runtime = await factory(record.conversationId, {
                signal: shutdown.signal,
              });
              try {
                await destroyRuntime(runtime);
              } finally {
                await runtime.close().catch(report);
              }
            }
            await store.deleteSession(record.id);
          } catch (error) {
            // The claim lapses and a later sweep tries again.
            report(error);
          }
        }
        // Sessions held here that ended elsewhere (deleted or expired on
        // another instance) leave this instance's memory: an instance keeps
        // nothing of sessions it no longer serves beyond one sweep interval.
        for (const id of sessions.ids()) {
          const local = sessions.get(id);
          if (!local || local.requests > 0 || local.calls.count > 0) continue;
          if ((await store.getSession(id)) === null) {
            await sessions.close(local, "evict");
          }
        }
      } catch (error) {
        report(error);
      } finally {
        storeSweeping = undefined;
      }
    })();
    return storeSweeping;
  };
  let storeSweepTimer: ReturnType<typeof setInterval> | undefined;
  if (store) {
    storeSweepTimer = setInterval(() => void storeSweep(), sweepIntervalMs);
    Deno.unrefTimer?.(storeSweepTimer);
  }

  // The sweep of session workspaces left behind (a crash, a kill).
  const sweepsRoot = factoryOption === undefined ||
    conversationsRoot !== undefined;
  let sweepTimer: ReturnType<typeof setTimeout> | undefined;
  const sweep = async (): Promise<void> => {
    if (sweepAfterMs === false || !sweepsRoot || closed) return;
    try {
      await sweepSessionWorkspaces(
        rootOf(),
        sweepAfterMs,
        new Set(sessions.ids()),
      );
    } catch (error) {
      report(error);
    }
    if (closed) return;
    sweepTimer = setTimeout(sweep, Math.min(sweepAfterMs, SWEEP_EVERY_MS));
    Deno.unrefTimer?.(sweepTimer);
  };
  await sweep();

  const close = (): Promise<void> => {
    closed ??= (async () => {
      clearTimeout(sweepTimer);
      clearInterval(storeSweepTimer);
      shutdown.abort();
      await storeSweeping;
      // With a store, the sessions live on for the other instances.
      await sessions.closeAll(store ? "evict" : "end");
    })();
    return closed;
  };
  return Object.assign(handle, {
    skills,
    warnings: loaded.warnings,
    sessionIds: () => sessions.ids(),
    sweep: () => storeSweep(true),
    close,
    [Symbol.asyncDispose]: close,
  });
}

function defaultInstructions(runtime: SkillRuntime): string {
  return "These tools give you Agent Skills: when a task matches a skill in the skill tool's list, " +
    "call the skill tool with its name first, then follow its instructions with the other tools. " +
    `Commands run, and relative paths resolve, in ${runtime.cwd}.`;
}
