/**
 * What lets any instance of the MCP HTTP handler (`http.ts`) serve any
 * request of a session: the session's record in a shared conversation store,
 * the rebuild of a session this instance never saw, the SDK `EventStore`
 * over the store (resumable streams), the replay of a stream on any
 * instance, cancellations that reach the instance running the call, and
 * the sweep of idle sessions claimed in the store.
 *
 * Why a replayed `initialize` to rebuild a session: the SDK's
 * `WebStandardStreamableHTTPServerTransport` (1.32) has no public way to
 * accept a session it did not initialise (its `_initialized` flag is
 * private and `validateSession` refuses every request before an
 * `initialize`), and the SDK's `Server` keeps the client's capabilities and
 * version only from an `initialize` it handled. Handing the new transport
 * the session's recorded `initialize` (its protocol version, capabilities
 * and client info, with `sessionIdGenerator` giving the recorded id) through
 * its public `handleRequest` restores both exactly, with no patch of the
 * SDK; the answer goes nowhere. The alternative (a stateless transport per
 * request, the session handled by us) would lose the SDK's own handling of
 * the standalone GET stream, `closeSSEStream` and in-request progress.
 *
 * @module
 */
import type {
  ConversationStore,
  SessionRecord,
} from "../../runtimes/stores/conversation_store.ts";
import {
  ConversationStoreUnavailableError,
  eventIdOf,
  parseEventId,
} from "../../runtimes/stores/conversation_store.ts";
import { jsonError } from "./_http_guards.ts";

/** A fresh session id: 160 random bits in hex. */
export function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The SHA-256 digest of a text, in hex. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

/** The bearer token of a request, if any. */
export function bearerOf(request: Request): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(
    (request.headers.get("authorization") ?? "").trim(),
  );
  return match?.[1];
}

/**
 * The `503` a store failure gets: one line, no stack, no secret (the
 * message is the store's, which never holds one; cut at the first line).
 */
export function storeUnavailable(error: unknown): Response {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split("\n")[0]!.slice(0, 300)
    .replace(/\/\/[^/@\s]*@/g, "//***@");
  const reason = error instanceof ConversationStoreUnavailableError
    ? line
    : `Conversation store failed: ${line}`;
  return jsonError(503, -32000, `Service unavailable: ${reason}`, {
    "Retry-After": "2",
  });
}

/** Runs a store call; a failure becomes a {@linkcode StoreFailure}. */
export async function stored<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new StoreFailure(error);
  }
}

/** A store call that failed (answered with `503`). */
export class StoreFailure extends Error {
  override readonly name = "StoreFailure";
  /** @param error What the store threw. */
  constructor(readonly error: unknown) {
    super(error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

/** The SDK's `EventStore` (structurally), over a session in a store. */
export interface SessionEventStore {
  storeEvent(streamId: string, message: unknown): Promise<string>;
  getStreamIdForEventId(eventId: string): Promise<string | undefined>;
  replayEventsAfter(
    lastEventId: string,
    options: { send: (eventId: string, message: unknown) => Promise<void> },
  ): Promise<string>;
}

/**
 * The events of one session's streams, in the shared store: every message
 * of a POST stream is kept, so that a client reconnecting on any instance
 * gets what it missed.
 */
export function sessionEventStore(
  store: ConversationStore,
  sessionId: string,
): SessionEventStore {
  return {
    storeEvent: (streamId, message) =>
      store.appendEvent(sessionId, streamId, message),
    getStreamIdForEventId: (eventId) =>
      Promise.resolve(parseEventId(eventId)?.streamId),
    async replayEventsAfter(lastEventId, { send }) {
      const found = await store.eventsAfter(sessionId, lastEventId);
      if (found === null) {
        throw new Error(`Event "${lastEventId}" not found`);
      }
      for (const event of found.events) await send(event.id, event.message);
      return found.streamId;
    },
  };
}

/** How often a replayed stream, and the cancel watcher, read the store. */
const POLL_MS = 250;

function isResponse(message: unknown): boolean {
  const m = message as Record<string, unknown> | null;
  return typeof m === "object" && m !== null && "id" in m &&
    ("result" in m || "error" in m);
}

/**
 * Answers a `GET` with `Last-Event-ID` on any instance: the events of that
 * stream after it, then, while the call runs (on this instance or another),
 * each new one as the store gets it, until the call's answer (then the
 * stream ends) or `limitMs` (then the client reconnects from its last id).
 *
 * @param store The store.
 * @param sessionId The session (already checked).
 * @param lastEventId The client's last event id.
 * @param limitMs When to close the stream.
 * @param retryMs The `retry` told to the client.
 * @returns The SSE answer, or a `400` for an event id the session has not.
 */
export async function replayStream(
  store: ConversationStore,
  sessionId: string,
  lastEventId: string,
  limitMs: number,
  retryMs: number,
): Promise<Response> {
  const first = await stored(() => store.eventsAfter(sessionId, lastEventId));
  if (first === null) {
    return jsonError(400, -32000, "Bad Request: unknown Last-Event-ID");
  }
  const encoder = new TextEncoder();
  let cursor = lastEventId;
  let stop = false;
  const deadline = Date.now() + limitMs;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      // The client's cursor again (an empty event with an id): a stream that
      // closes before anything new still leaves the client a Last-Event-ID
      // to reconnect with (the SDK client keeps the id of its last stream).
      controller.enqueue(
        encoder.encode(`id: ${lastEventId}\nretry: ${retryMs}\ndata: \n\n`),
      );
      let batch: readonly { id: string; message: unknown }[] = first.events;
      try {
        while (!stop) {
          for (const event of batch) {
            cursor = event.id;
            if (
              typeof event.message === "object" && event.message !== null &&
              Object.keys(event.message).length === 0
            ) {
              continue; // a priming event: nothing to send
            }
            controller.enqueue(encoder.encode(
              `event: message\nid: ${event.id}\ndata: ${
                JSON.stringify(event.message)
              }\n\n`,
            ));
            if (isResponse(event.message)) stop = true;
          }
          if (stop || Date.now() + POLL_MS >= deadline) break;
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          const next = await store.eventsAfter(sessionId, cursor);
          if (next === null) break; // the session ended
          batch = next.events;
        }
      } catch {
        // The store failed meanwhile: the client reconnects from its cursor.
      }
      try {
        controller.close();
      } catch {
        // cancelled
      }
    },
    cancel() {
      stop = true;
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "mcp-session-id": sessionId,
    },
  });
}

/** How often a session whose calls run is marked used in the store. */
const TOUCH_WHILE_RUNNING_MS = 30_000;

/** The stream of a session that carries cancellations between instances. */
export const CANCEL_STREAM = "cancel";

/**
 * Records the cancellations of a POST body so that the instance running the
 * call sees them (see {@linkcode watchCancels}).
 */
export async function recordCancels(
  store: ConversationStore,
  sessionId: string,
  body: unknown,
): Promise<void> {
  const messages = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    const m = message as { method?: unknown; params?: unknown } | null;
    if (m?.method === "notifications/cancelled") {
      await store.appendEvent(sessionId, CANCEL_STREAM, {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: m.params,
      });
    }
  }
}

/**
 * Watches a session's cancellations while its calls run here, handing each
 * new one to the session's transport as if it had come in (its public
 * `onmessage`): the SDK server aborts the call's signal. Meanwhile the
 * session is marked used every 30 s, so that a long call is not swept.
 *
 * @returns Stops watching.
 */
export function watchCancels(
  store: ConversationStore,
  sessionId: string,
  running: () => boolean,
  deliver: (message: unknown) => void,
  report: (error: unknown) => void,
): () => void {
  let cursor = eventIdOf(CANCEL_STREAM, 0);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let touched = Date.now();
  const tick = async () => {
    if (stopped) return;
    try {
      // A call that runs long keeps its session from the sweep.
      if (Date.now() - touched >= TOUCH_WHILE_RUNNING_MS) {
        touched = Date.now();
        await store.touchSession(sessionId);
      }
      const found = await store.eventsAfter(sessionId, cursor);
      for (const event of found?.events ?? []) {
        cursor = event.id;
        // One for a call that is not running here is ignored by the server.
        deliver(event.message);
      }
    } catch (error) {
      report(error);
    }
    if (!stopped && running()) {
      timer = setTimeout(tick, POLL_MS);
    } else {
      stopped = true;
    }
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The `initialize` request that rebuilds a recorded session. */
export function replayedInitialize(
  url: string,
  record: SessionRecord,
): Request[] {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  return [
    new Request(url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "skillrun-resume",
        method: "initialize",
        params: {
          protocolVersion: record.protocolVersion,
          capabilities: record.clientCapabilities,
          clientInfo: record.clientInfo,
        },
      }),
    }),
    new Request(url, {
      method: "POST",
      headers: {
        ...headers,
        "mcp-session-id": record.id,
        "mcp-protocol-version": record.protocolVersion,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        method: "notifications/initialized",
      }),
    }),
  ];
}
