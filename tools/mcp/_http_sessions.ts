/**
 * The session table of the MCP HTTP handler (`http.ts`): the open sessions,
 * their idle timers, the limits per client and in all (reclaiming idle
 * sessions to make room), closing a session and its runtime, and the sweep
 * of session workspaces left behind.
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp"
import type { WebStandardStreamableHTTPServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js";
import { delay } from "../../_internal/async.ts";
import { removeTree } from "../../_internal/remove_tree.ts";
import { hostPath } from "../../_internal/std.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { SkillTools } from "../builder.ts";
import type { InFlight, McpConnection } from "./_server.ts";

/** One MCP session: its runtime, tools, transport and activity. */
export interface McpSession {
  readonly id: string;
  /** The client (remote address) that started it. */
  readonly client: string;
  readonly runtime: SkillRuntime;
  readonly tools: SkillTools;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly connection: McpConnection;
  readonly calls: InFlight;
  /** HTTP requests of this session being handled. */
  requests: number;
  lastSeen: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  closing: Promise<void> | undefined;
}

/** Options of {@linkcode McpSessionTable}. */
export interface McpSessionTableOptions {
  /** A session idle this long closes. */
  readonly idleTimeoutMs: number;
  /** The most sessions open (or starting) at once. */
  readonly maxSessions: number;
  /** The most sessions one client has open (or starting) at once. */
  readonly maxSessionsPerClient: number;
  /** Keep a closed session's workspace (else its runtime is destroyed). */
  readonly keepWorkspaces: boolean;
  /** Where a failure of closing goes. */
  readonly report: (error: unknown) => void;
  /**
   * With a shared store: ends a session there (deletes its record), saying
   * whether this call did (only then is its runtime destroyed: exactly
   * once across instances). Without: every end destroys.
   */
  readonly endInStore?: (id: string) => Promise<boolean>;
  /**
   * With a shared store an idle session is only evicted from this
   * instance's memory (another instance may serve it; the store's sweep
   * expires it): `true`.
   */
  readonly evictWhenIdle?: boolean;
}

/** How a session leaves the table: ended (for good) or evicted (memory only). */
export type CloseMode = "end" | "evict";

/** How long a session must be idle before another client's start reclaims it. */
const RECLAIM_IDLE_MS = 60_000;
/** How long closing a session waits for its aborted calls to end. */
const CLOSE_GRACE_MS = 10_000;

/** The open sessions of one handler, with their limits and idle timers. */
export class McpSessionTable {
  readonly #sessions = new Map<string, McpSession>();
  readonly #startingBy = new Map<string, number>();
  readonly #options: McpSessionTableOptions;
  #starting = 0;

  /**
   * @param options The limits, the idle timeout, what closing leaves.
   */
  constructor(options: McpSessionTableOptions) {
    this.#options = options;
  }

  /** The open session of an id (not one closing), if any. */
  get(id: string): McpSession | undefined {
    const session = this.#sessions.get(id);
    return session === undefined || session.closing ? undefined : session;
  }

  /** The ids of the sessions in the table. */
  ids(): string[] {
    return [...this.#sessions.keys()];
  }

  /**
   * Counts one more session starting for `client`, after making room for it
   * (closing the client's oldest idle session, or any session idle long
   * enough); or says why there is no room. Pair with {@linkcode release}.
   */
  reserve(client: string): string | undefined {
    const full = this.#makeRoom(client);
    if (full !== undefined) return full;
    this.#starting++;
    this.#startingBy.set(client, (this.#startingBy.get(client) ?? 0) + 1);
    return undefined;
  }

  /** Ends a start counted by {@linkcode reserve} (added or not). */
  release(client: string): void {
    this.#starting--;
    const left = (this.#startingBy.get(client) ?? 1) - 1;
    if (left > 0) this.#startingBy.set(client, left);
    else this.#startingBy.delete(client);
  }

  /** Adds a started session. */
  add(session: McpSession): void {
    this.#sessions.set(session.id, session);
  }

  /**
   * Handles one HTTP request of a session, keeping it alive meanwhile.
   *
   * @param session The session.
   * @param request The request.
   * @param parsedBody Its body, when already read.
   * @returns The transport's answer.
   */
  async handle(
    session: McpSession,
    request: Request,
    parsedBody?: unknown,
  ): Promise<Response> {
    session.requests++;
    session.lastSeen = Date.now();
    try {
      return await session.transport.handleRequest(
        request,
        parsedBody === undefined ? undefined : { parsedBody },
      );
    } finally {
      session.requests--;
      session.lastSeen = Date.now();
      this.#arm(session);
    }
  }

  /**
   * Closes a session (once): its connection, then, once its aborted calls
   * ended (or a grace period passed), its tools and runtime.
   */
  close(session: McpSession, mode: CloseMode = "end"): Promise<void> {
    session.closing ??= (async () => {
      this.#sessions.delete(session.id);
      clearTimeout(session.timer);
      await session.connection.close();
      // The calls were aborted; let them end before their runtime closes.
      await Promise.race([
        session.calls.idle(),
        delay(CLOSE_GRACE_MS, { persistent: false }),
      ]);
      try {
        await session.tools.close();
        await session.runtime.close();
        const ends = mode === "end" &&
          (this.#options.endInStore === undefined ||
            await this.#options.endInStore(session.id));
        if (ends && !this.#options.keepWorkspaces) {
          await destroyRuntime(session.runtime);
        }
      } catch (error) {
        this.#options.report(error);
      }
    })();
    return session.closing;
  }

  /** Closes every session. */
  async closeAll(mode: CloseMode = "end"): Promise<void> {
    await Promise.all(
      [...this.#sessions.values()].map((s) => this.close(s, mode)),
    );
  }

  #arm(session: McpSession): void {
    const { idleTimeoutMs } = this.#options;
    clearTimeout(session.timer);
    if (session.closing) return;
    const left = session.lastSeen + idleTimeoutMs - Date.now();
    session.timer = setTimeout(() => {
      session.timer = undefined;
      if (session.requests > 0 || session.calls.count > 0) {
        session.lastSeen = Date.now();
      }
      if (Date.now() - session.lastSeen >= idleTimeoutMs) {
        void this.close(
          session,
          this.#options.evictWhenIdle ? "evict" : "end",
        );
      } else {
        this.#arm(session);
      }
    }, Math.max(left, 0));
  }

  /** The oldest session that `which` accepts and that is idle enough. */
  #oldestIdle(
    which: (session: McpSession) => boolean,
    idleForMs: number,
  ): McpSession | undefined {
    let oldest: McpSession | undefined;
    const now = Date.now();
    for (const session of this.#sessions.values()) {
      if (
        which(session) && !session.closing && session.requests === 0 &&
        session.calls.count === 0 && now - session.lastSeen >= idleForMs &&
        (oldest === undefined || session.lastSeen < oldest.lastSeen)
      ) {
        oldest = session;
      }
    }
    return oldest;
  }

  /** Makes room for one more session of `client`, or says why not. */
  #makeRoom(client: string): string | undefined {
    const { maxSessions, maxSessionsPerClient } = this.#options;
    let mine = this.#startingBy.get(client) ?? 0;
    for (const session of this.#sessions.values()) {
      if (session.client === client) mine++;
    }
    if (mine >= maxSessionsPerClient) {
      const own = this.#oldestIdle((s) => s.client === client, 0);
      if (own === undefined) {
        return `this client already has ${maxSessionsPerClient} sessions open and busy`;
      }
      void this.close(own);
    }
    if (this.#sessions.size + this.#starting >= maxSessions) {
      const any = this.#oldestIdle(() => true, RECLAIM_IDLE_MS);
      if (any === undefined) {
        return `the server already has ${maxSessions} sessions open and none idle`;
      }
      void this.close(any);
    }
    return undefined;
  }
}

/** Destroys a session's runtime when it can be (see `keepWorkspaces`). */
export async function destroyRuntime(runtime: SkillRuntime): Promise<void> {
  const destroy = (runtime as { destroy?: () => Promise<void> }).destroy;
  if (typeof destroy !== "function") return;
  try {
    await destroy.call(runtime);
  } catch (error) {
    // A runtime that has nothing to destroy (a plain one) is not a failure.
    if (error instanceof Error && error.message.startsWith("Cannot destroy")) {
      return;
    }
    throw error;
  }
}

/** A session id: 160 random bits in hex (a UUID before issue 27). */
const SESSION_FOLDER =
  /^([0-9a-f]{40}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * Deletes the session workspaces (folders named like a session id) in
 * `root` that are not open and have not changed for `olderThanMs`.
 */
export async function sweepSessionWorkspaces(
  root: string,
  olderThanMs: number,
  open: ReadonlySet<string>,
): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(root));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  const limit = Date.now() - olderThanMs;
  for (const entry of entries) {
    if (!entry.isDirectory || !SESSION_FOLDER.test(entry.name)) continue;
    if (open.has(entry.name)) continue;
    const path = hostPath.join(root, entry.name);
    const info = await Deno.lstat(path).catch(() => null);
    if (!info?.isDirectory || (info.mtime?.getTime() ?? Infinity) > limit) {
      continue;
    }
    await removeTree(path);
  }
}
