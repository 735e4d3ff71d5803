/**
 * Conversation stores: where a remote runtime remembers, per conversation,
 * which sandbox it runs in, where its workspace is in that sandbox, and which
 * skills are already prepared there (with a digest of each skill's files and
 * configuration, `skill_digest.ts`). An in-memory store serves one process; the Deno KV store
 * serves several processes sharing a KV file (or a hosted KV database).
 *
 * A conversation is keyed by the server's base URL (normalised, credentials
 * dropped) and the conversation id, never by an API key: rotating the key
 * keeps the sandbox; another server gets another sandbox.
 *
 * Why one long file: the store contract and its two implementations, kept
 * together so that both follow the same documented rules (keys, digests,
 * leases) and a reader checks them side by side.
 *
 * @module
 */
import { validateConversationId } from "../../workspace/conversation.ts";

/** Which conversation: the server's base URL and the conversation id. */
export interface ConversationKey {
  /** The server's base URL (e.g. the lifecycle API's), without credentials. */
  readonly serverUrl: string;
  /** The conversation id (see `validateConversationId`). */
  readonly conversationId: string;
}

/** A skill as prepared in a conversation's sandbox. */
export interface PreparedSkillRecord {
  /** The skill's name. */
  readonly name: string;
  /** The skill's folder inside the sandbox. */
  readonly basePath: string;
  /** The digest of its files and configuration (see `skillDigest`). */
  readonly digest: string;
  /** When it was prepared, in ms since the epoch. */
  readonly preparedAt: number;
}

/** What a store knows about a conversation. */
export interface ConversationRecord {
  /** The server's base URL, normalised (see {@linkcode normalizeConversationKey}). */
  readonly serverUrl: string;
  /** The conversation id. */
  readonly conversationId: string;
  /** The sandbox the conversation runs in. */
  readonly sandboxId: string;
  /** The conversation's workspace root inside the sandbox. */
  readonly workspaceRoot: string;
  /** The skills prepared there, by name. */
  readonly skills: Readonly<Record<string, PreparedSkillRecord>>;
  /** When the record was created, in ms since the epoch. */
  readonly createdAt: number;
  /** When the sandbox was last renewed (or created), in ms since the epoch. */
  readonly renewedAt: number;
  /** When the sandbox expires unless renewed, in ms since the epoch, when known. */
  readonly expiresAt: number | null;
}

/** What {@linkcode ConversationStore.create} takes. */
export interface NewConversation {
  /** The sandbox this process created for the conversation. */
  readonly sandboxId: string;
  /** The conversation's workspace root inside the sandbox. */
  readonly workspaceRoot: string;
  /** When the sandbox expires unless renewed, in ms since the epoch. */
  readonly expiresAt?: number | null;
}

/** What {@linkcode ConversationStore.create} returns. */
export interface CreateConversationResult {
  /** The record now in the store: this caller's, or the winner's of a race. */
  readonly record: ConversationRecord;
  /** Whether this call inserted it (`false`: another caller had already). */
  readonly created: boolean;
}

/** Options of {@linkcode ConversationStore.delete}. */
export interface DeleteConversationOptions {
  /** Delete only when the record still names this sandbox. */
  readonly sandboxId?: string;
}

/**
 * An MCP session as the HTTP handler records it, so that any instance can
 * serve it: which conversation it maps to, which runtime (its kind and the
 * non-secret part of its options), what the client negotiated, the digest
 * of the token it is bound to (never the token), its last use and the claim
 * of a sweep. Never a secret.
 */
export interface SessionRecord {
  /** The session id (at least 128 random bits). */
  readonly id: string;
  /** The conversation the session maps to. */
  readonly conversationId: string;
  /** The runtime kind (e.g. `opensandbox`) and its options' non-secret part. */
  readonly runtime: {
    readonly kind: string;
    readonly options: Readonly<Record<string, unknown>>;
  };
  /** The protocol version negotiated at initialisation. */
  readonly protocolVersion: string;
  /** The client's capabilities, as it declared them. */
  readonly clientCapabilities: Readonly<Record<string, unknown>>;
  /** The client's name and version, as it declared them. */
  readonly clientInfo: Readonly<Record<string, unknown>>;
  /** The SHA-256 digest (hex) of the token the session is bound to, or `null`. */
  readonly tokenDigest: string | null;
  /** Who the client is for the session limits (a token digest or an address). */
  readonly client: string;
  /** When the session started, in ms since the epoch. */
  readonly createdAt: number;
  /** When it was last used, in ms since the epoch. */
  readonly lastUsedAt: number;
  /** Until when a sweep has claimed it (ms since the epoch), or `null`. */
  readonly claimedUntil: number | null;
}

/** What {@linkcode ConversationStore.createSession} takes. */
export type NewSession = Omit<
  SessionRecord,
  "createdAt" | "lastUsedAt" | "claimedUntil"
>;

/** How many sessions the store holds (claimed ones left out). */
export interface SessionCount {
  /** Every session. */
  readonly total: number;
  /** The sessions of the client asked about. */
  readonly client: number;
}

/** One event of a resumable stream. */
export interface StoredEvent {
  /** The event id (`<stream id>.<sequence>`), as sent in the SSE `id` field. */
  readonly id: string;
  /** The JSON-RPC message (an empty object for a priming event). */
  readonly message: unknown;
}

/** What {@linkcode ConversationStore.eventsAfter} returns. */
export interface StoredEvents {
  /** The stream the event id belongs to. */
  readonly streamId: string;
  /** The events after it, in order. */
  readonly events: readonly StoredEvent[];
}

/**
 * Where a remote runtime keeps its conversations. Every method checks the key
 * (see {@linkcode normalizeConversationKey}) and is atomic: two callers never
 * both insert a conversation, and an update never loses another's update.
 */
export interface ConversationStore {
  /**
   * The record of a conversation.
   *
   * @param key The conversation.
   * @returns The record, or `null` when there is none.
   */
  get(key: ConversationKey): Promise<ConversationRecord | null>;
  /**
   * Inserts a conversation's record only if there is none: the loser of a
   * race gets the winner's record back (and should delete its own sandbox
   * and attach to the winner's).
   *
   * @param key The conversation.
   * @param conversation Its sandbox and workspace root.
   * @returns The record in the store and whether this call created it.
   */
  create(
    key: ConversationKey,
    conversation: NewConversation,
  ): Promise<CreateConversationResult>;
  /**
   * Records a skill as prepared (replacing what was recorded under its name).
   *
   * @param key The conversation.
   * @param skill The skill's name, folder and digest.
   * @returns The updated record.
   * @throws {Deno.errors.NotFound} The conversation has no record.
   */
  markPrepared(
    key: ConversationKey,
    skill: Omit<PreparedSkillRecord, "preparedAt"> & { preparedAt?: number },
  ): Promise<ConversationRecord>;
  /**
   * Forgets a prepared skill (before it is uploaded again, so that a failed
   * upload is never taken for a prepared skill).
   *
   * @param key The conversation.
   * @param name The skill's name.
   * @returns The updated record, or `null` when the conversation has none.
   */
  forgetPrepared(
    key: ConversationKey,
    name: string,
  ): Promise<ConversationRecord | null>;
  /**
   * Records a renewal of the conversation's sandbox.
   *
   * @param key The conversation.
   * @param expiresAt The new expiry, when known.
   * @returns The updated record, or `null` when the conversation has none.
   */
  renew(
    key: ConversationKey,
    expiresAt?: number | null,
  ): Promise<ConversationRecord | null>;
  /**
   * Deletes a conversation's record.
   *
   * @param key The conversation.
   * @param options Delete only when it still names this sandbox.
   * @returns Whether a record was deleted.
   */
  delete(
    key: ConversationKey,
    options?: DeleteConversationOptions,
  ): Promise<boolean>;
  /**
   * Records a new MCP session.
   *
   * @param session The session.
   * @returns The record.
   * @throws {Deno.errors.AlreadyExists} A session has this id.
   */
  createSession(session: NewSession): Promise<SessionRecord>;
  /**
   * The record of a session (claimed by a sweep or not).
   *
   * @param id The session id.
   * @returns The record, or `null`.
   */
  getSession(id: string): Promise<SessionRecord | null>;
  /**
   * Records a use of a session, unless a sweep has claimed it.
   *
   * @param id The session id.
   * @param at When, in ms since the epoch; default now.
   * @returns The updated record, or `null` (none, or claimed).
   */
  touchSession(id: string, at?: number): Promise<SessionRecord | null>;
  /**
   * Deletes a session and its events: of callers racing, exactly one gets
   * the record (and deletes what the session held).
   *
   * @param id The session id.
   * @returns The record deleted, or `null` when there was none.
   */
  deleteSession(id: string): Promise<SessionRecord | null>;
  /**
   * Claims, atomically, the sessions unused since `idleBefore` that no live
   * claim holds: two sweeps never claim one session at once. A claim that
   * outlives `claimForMs` (its sweeper died) can be claimed again.
   *
   * @param idleBefore Sessions last used before this time (ms since the epoch).
   * @param claimForMs How long the claim holds.
   * @param limit The most sessions claimed; default 100.
   * @returns The sessions claimed.
   */
  claimIdleSessions(
    idleBefore: number,
    claimForMs: number,
    limit?: number,
  ): Promise<SessionRecord[]>;
  /**
   * Counts the sessions (claimed ones left out), in all and of one client.
   *
   * @param client The client counted apart.
   * @returns The counts.
   */
  countSessions(client?: string): Promise<SessionCount>;
  /**
   * Appends an event to a stream of a session (a resumable stream of MCP's
   * Streamable HTTP transport). Event ids grow within a stream.
   *
   * @param sessionId The session.
   * @param streamId The stream (no `.` in it).
   * @param message The JSON-RPC message.
   * @returns The event id.
   * @throws {Deno.errors.NotFound} The session has no record.
   */
  appendEvent(
    sessionId: string,
    streamId: string,
    message: unknown,
  ): Promise<string>;
  /**
   * The events of a session's stream after one of its event ids.
   *
   * @param sessionId The session.
   * @param eventId The last event the client has; sequence 0 (see
   *   `eventIdOf`) asks for the stream from its start.
   * @returns The stream and the events after it, or `null` when the session
   *   has no such event.
   */
  eventsAfter(sessionId: string, eventId: string): Promise<StoredEvents | null>;
  /** Releases what the store holds open (idempotent). */
  close(): void;
}

/**
 * A store that cannot serve now (its database out of reach, refusing
 * connections, timing out). Its message is one line without a secret; the
 * MCP HTTP handler answers `503` with it.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ConversationStoreUnavailableError } from "@skillrun/skillrun/runtime";
 * const error = new ConversationStoreUnavailableError("Cannot reach the store: timed out");
 * assert(error.name === "ConversationStoreUnavailableError");
 * ```
 */
export class ConversationStoreUnavailableError extends Error {
  /** The error's name. */
  override readonly name = "ConversationStoreUnavailableError";
}

/**
 * Checks a conversation key and normalises its server URL: an `http:` or
 * `https:` URL, user name and password dropped (they are credentials), no
 * query or fragment, the path without trailing slashes (so
 * `http://H:80/proxy/1/` and `http://h/proxy/1` are the same server).
 *
 * Needs no permission.
 *
 * @param key The conversation.
 * @returns The normalised key.
 * @throws {TypeError} The URL is invalid or not HTTP(S), has a query or a
 * fragment, or the conversation id breaks the id rules.
 *
 * @example Keys that name the same conversation
 * ```ts
 * import { assert } from "@std/assert";
 * import { normalizeConversationKey } from "./conversation_store.ts";
 * const a = normalizeConversationKey({ serverUrl: "HTTP://Sandbox:80/api/", conversationId: "c1" });
 * const b = normalizeConversationKey({ serverUrl: "http://user:key@sandbox/api", conversationId: "c1" });
 * assert(a.serverUrl === "http://sandbox/api" && b.serverUrl === a.serverUrl);
 * ```
 */
export function normalizeConversationKey(
  key: ConversationKey,
): ConversationKey {
  if (typeof key !== "object" || key === null) {
    throw new TypeError("Invalid conversation key: expected an object");
  }
  const conversationId = validateConversationId(key.conversationId);
  const given = key.serverUrl;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new TypeError(
      `Invalid server URL ${
        JSON.stringify(typeof given === "string" ? redactUrl(given) : given)
      }: not a URL`,
    );
  }
  url.username = "";
  url.password = "";
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(
      `Invalid server URL "${url.href}": expected an http or https URL`,
    );
  }
  if (url.search !== "" || url.hash !== "") {
    throw new TypeError(
      `Invalid server URL "${url.origin}${url.pathname}": a base URL has no query or fragment`,
    );
  }
  const path = url.pathname.replace(/\/+$/, "");
  const serverUrl = `${url.origin}${path}`;
  if (serverUrl.length > MAX_URL_LENGTH) {
    throw new TypeError(
      `Invalid server URL "${
        serverUrl.slice(0, 64)
      }...": it has ${serverUrl.length} characters, more than ${MAX_URL_LENGTH}`,
    );
  }
  return { serverUrl, conversationId };
}

/** The longest server URL a key may hold (Deno KV keys are at most 2 KiB). */
const MAX_URL_LENGTH = 1024;

/** The largest session record a store accepts, in bytes of JSON. */
const MAX_SESSION_BYTES = 32 * 1024;
/** The largest event a store accepts, in bytes of JSON. */
const MAX_EVENT_BYTES = 60 * 1024;

/**
 * Checks a new session and makes its record (exported for the stores of
 * this folder).
 *
 * @param session The session.
 * @param now The time of creation.
 * @returns The record.
 * @throws {TypeError} A field is missing or of the wrong type, or the record
 * is too large.
 */
export function newSessionRecord(
  session: NewSession,
  now: number = Date.now(),
): SessionRecord {
  if (typeof session !== "object" || session === null) {
    throw new TypeError("Invalid session: expected an object");
  }
  checkSessionId(session.id);
  for (
    const field of ["conversationId", "protocolVersion", "client"] as const
  ) {
    const value = session[field];
    if (typeof value !== "string" || value === "") {
      throw new TypeError(
        `Invalid session ${field} ${
          JSON.stringify(value)
        }: expected a non-empty string`,
      );
    }
  }
  if (
    typeof session.runtime !== "object" || session.runtime === null ||
    typeof session.runtime.kind !== "string" ||
    typeof session.runtime.options !== "object" ||
    session.runtime.options === null
  ) {
    throw new TypeError(
      "Invalid session runtime: expected { kind: string, options: object }",
    );
  }
  if (session.tokenDigest !== null && typeof session.tokenDigest !== "string") {
    throw new TypeError(
      "Invalid session tokenDigest: expected a string or null",
    );
  }
  const record: SessionRecord = {
    id: session.id,
    conversationId: session.conversationId,
    runtime: { kind: session.runtime.kind, options: session.runtime.options },
    protocolVersion: session.protocolVersion,
    clientCapabilities: session.clientCapabilities ?? {},
    clientInfo: session.clientInfo ?? {},
    tokenDigest: session.tokenDigest,
    client: session.client,
    createdAt: now,
    lastUsedAt: now,
    claimedUntil: null,
  };
  const size = new TextEncoder().encode(JSON.stringify(record)).length;
  if (size > MAX_SESSION_BYTES) {
    throw new TypeError(
      `Invalid session "${session.id}": its record has ${size} bytes, more than ${MAX_SESSION_BYTES}`,
    );
  }
  return record;
}

/**
 * Checks a session id: 16 to 128 characters of `[A-Za-z0-9_-]`.
 *
 * @param id The id.
 * @returns The id.
 * @throws {TypeError} It is not one.
 */
export function checkSessionId(id: string): string {
  if (typeof id !== "string" || !/^[A-Za-z0-9_-]{16,128}$/.test(id)) {
    throw new TypeError(
      `Invalid session id ${
        JSON.stringify(typeof id === "string" ? id.slice(0, 40) : id)
      }: expected 16 to 128 letters, digits, "-" or "_"`,
    );
  }
  return id;
}

/**
 * Checks a stream id and an event's message.
 *
 * @param streamId The stream id.
 * @param message The message.
 * @returns The message as JSON.
 * @throws {TypeError} The stream id is empty or holds a `.`, or the message
 * is not JSON or too large.
 */
export function checkEvent(streamId: string, message: unknown): string {
  if (
    typeof streamId !== "string" || !/^[A-Za-z0-9_-]{1,128}$/.test(streamId)
  ) {
    throw new TypeError(
      `Invalid stream id ${
        JSON.stringify(streamId)
      }: expected 1 to 128 letters, digits, "-" or "_"`,
    );
  }
  const json = JSON.stringify(message);
  if (json === undefined) {
    throw new TypeError("Invalid event: the message is not JSON");
  }
  const size = new TextEncoder().encode(json).length;
  if (size > MAX_EVENT_BYTES) {
    throw new TypeError(
      `Invalid event of stream "${streamId}": it has ${size} bytes, more than ${MAX_EVENT_BYTES}`,
    );
  }
  return json;
}

/**
 * An event id of a stream: `<stream id>.<sequence>`, the sequence zero-padded
 * so that ids of a stream sort as their order.
 *
 * @param streamId The stream.
 * @param sequence The event's number in it.
 * @returns The event id.
 */
export function eventIdOf(streamId: string, sequence: number): string {
  return `${streamId}.${String(sequence).padStart(12, "0")}`;
}

/**
 * The stream and sequence of an event id, or `null` when it is not one.
 *
 * @param eventId The event id.
 * @returns Its parts.
 */
export function parseEventId(
  eventId: string,
): { streamId: string; sequence: number } | null {
  const match = typeof eventId === "string"
    ? /^([A-Za-z0-9_-]{1,128})\.(\d{12})$/.exec(eventId)
    : null;
  return match ? { streamId: match[1]!, sequence: Number(match[2]) } : null;
}

/** See the stores of this folder. @internal */
export function sessionNotFound(id: string): Error {
  return new Deno.errors.NotFound(
    `Cannot add an event to session "${id}": it has no record`,
  );
}

/** See the stores of this folder. @internal */
export function sessionExists(id: string): Error {
  return new Deno.errors.AlreadyExists(
    `Cannot create session "${id}": a session has this id`,
  );
}

/** See the stores of this folder. @internal */
export function checkClaim(
  idleBefore: number,
  claimForMs: number,
  limit: number,
) {
  checkTime("idle limit", idleBefore);
  if (!Number.isInteger(claimForMs) || claimForMs <= 0) {
    throw new TypeError(
      `Invalid claim duration ${claimForMs}: expected a positive integer of ms`,
    );
  }
  if (!Number.isInteger(limit) || limit <= 0) {
    throw new TypeError(`Invalid limit ${limit}: expected a positive integer`);
  }
}

/** Whether a session is claimed by a live sweep at `now`. */
export function isClaimed(
  record: SessionRecord,
  now: number = Date.now(),
): boolean {
  return record.claimedUntil !== null && record.claimedUntil > now;
}

/** Drops what looks like credentials from a string that failed to parse. */
function redactUrl(text: string): string {
  return text.replace(/\/\/[^/@]*@/, "//***@");
}

/**
 * Checks a new conversation.
 *
 * @param conversation The conversation.
 * @throws {TypeError} A field is missing or of the wrong type.
 */
export function checkNewConversation(conversation: NewConversation): void {
  if (typeof conversation !== "object" || conversation === null) {
    throw new TypeError("Invalid conversation: expected an object");
  }
  for (const field of ["sandboxId", "workspaceRoot"] as const) {
    const value = conversation[field];
    if (typeof value !== "string" || value === "") {
      throw new TypeError(
        `Invalid conversation ${field} ${
          JSON.stringify(value)
        }: expected a non-empty string`,
      );
    }
  }
  checkTime("expiry", conversation.expiresAt ?? null);
}

/**
 * Checks a time in ms since the epoch (or `null`).
 *
 * @param name What it is, for the message.
 * @param value The time.
 * @throws {TypeError} It is not a finite number.
 */
export function checkTime(name: string, value: number | null): void {
  if (value !== null && (typeof value !== "number" || !isFinite(value))) {
    throw new TypeError(
      `Invalid ${name} ${JSON.stringify(value)}: expected ms since the epoch`,
    );
  }
}

/**
 * Checks a prepared skill and fills its time.
 *
 * @param skill The skill.
 * @returns The record.
 * @throws {TypeError} A field is missing or of the wrong type.
 */
export function checkSkill(
  skill: Omit<PreparedSkillRecord, "preparedAt"> & { preparedAt?: number },
): PreparedSkillRecord {
  if (typeof skill !== "object" || skill === null) {
    throw new TypeError("Invalid prepared skill: expected an object");
  }
  for (const field of ["name", "basePath", "digest"] as const) {
    const value = skill[field];
    if (typeof value !== "string" || value === "") {
      throw new TypeError(
        `Invalid prepared skill ${field} ${
          JSON.stringify(value)
        }: expected a non-empty string`,
      );
    }
  }
  const preparedAt = skill.preparedAt ?? Date.now();
  checkTime("preparation time", preparedAt);
  return {
    name: skill.name,
    basePath: skill.basePath,
    digest: skill.digest,
    preparedAt,
  };
}

/** See the stores of this folder. @internal */
export function newRecord(
  key: ConversationKey,
  conversation: NewConversation,
): ConversationRecord {
  const now = Date.now();
  return {
    serverUrl: key.serverUrl,
    conversationId: key.conversationId,
    sandboxId: conversation.sandboxId,
    workspaceRoot: conversation.workspaceRoot,
    skills: {},
    createdAt: now,
    renewedAt: now,
    expiresAt: conversation.expiresAt ?? null,
  };
}

/** See the stores of this folder. @internal */
export function withSkill(
  record: ConversationRecord,
  skill: PreparedSkillRecord,
): ConversationRecord {
  return { ...record, skills: { ...record.skills, [skill.name]: skill } };
}

/** See the stores of this folder. @internal */
export function withoutSkill(
  record: ConversationRecord,
  name: string,
): ConversationRecord {
  const skills = { ...record.skills };
  delete skills[name];
  return { ...record, skills };
}

/** See the stores of this folder. @internal */
export function renewed(
  record: ConversationRecord,
  expiresAt: number | null | undefined,
): ConversationRecord {
  return {
    ...record,
    renewedAt: Date.now(),
    expiresAt: expiresAt === undefined ? record.expiresAt : expiresAt,
  };
}

/**
 * A deep-frozen copy, so that a caller never changes what a store holds.
 *
 * @param record The record.
 * @returns The frozen copy.
 */
export function frozen(record: ConversationRecord): ConversationRecord {
  const skills: Record<string, PreparedSkillRecord> = Object.create(null);
  for (const [name, skill] of Object.entries(record.skills)) {
    skills[name] = Object.freeze({ ...skill });
  }
  return Object.freeze({ ...record, skills: Object.freeze(skills) });
}

/**
 * A conversation store in this process's memory: conversations survive new
 * runtime objects, not a restart. Every method runs without a pause between
 * its read and its write, so concurrent calls are atomic.
 *
 * Needs no permission.
 *
 * @example Creating a conversation twice
 * ```ts
 * import { assert } from "@std/assert";
 * import { MemoryConversationStore } from "@skillrun/skillrun/runtime";
 * const store = new MemoryConversationStore();
 * const key = { serverUrl: "http://127.0.0.1:8080", conversationId: "c1" };
 * const first = await store.create(key, { sandboxId: "sb-1", workspaceRoot: "/workspace" });
 * const second = await store.create(key, { sandboxId: "sb-2", workspaceRoot: "/workspace" });
 * assert(first.created && !second.created);
 * assert(second.record.sandboxId === "sb-1");
 * ```
 */
export class MemoryConversationStore implements ConversationStore {
  readonly #records = new Map<string, ConversationRecord>();

  #id(key: ConversationKey): [ConversationKey, string] {
    const normal = normalizeConversationKey(key);
    return [normal, JSON.stringify([normal.serverUrl, normal.conversationId])];
  }

  /**
   * The record of a conversation.
   *
   * @param key The conversation.
   * @returns The record, or `null`.
   * @throws {TypeError} The key is invalid.
   */
  get(key: ConversationKey): Promise<ConversationRecord | null> {
    try {
      const [, id] = this.#id(key);
      return Promise.resolve(this.#records.get(id) ?? null);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Inserts a conversation's record only if there is none.
   *
   * @param key The conversation.
   * @param conversation Its sandbox and workspace root.
   * @returns The record in the store and whether this call created it.
   * @throws {TypeError} The key or the conversation is invalid.
   */
  create(
    key: ConversationKey,
    conversation: NewConversation,
  ): Promise<CreateConversationResult> {
    try {
      const [normal, id] = this.#id(key);
      checkNewConversation(conversation);
      const existing = this.#records.get(id);
      if (existing) {
        return Promise.resolve({ record: existing, created: false });
      }
      const record = frozen(newRecord(normal, conversation));
      this.#records.set(id, record);
      return Promise.resolve({ record, created: true });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Records a skill as prepared.
   *
   * @param key The conversation.
   * @param skill The skill's name, folder and digest.
   * @returns The updated record.
   * @throws {TypeError} The key or the skill is invalid.
   * @throws {Deno.errors.NotFound} The conversation has no record.
   */
  markPrepared(
    key: ConversationKey,
    skill: Omit<PreparedSkillRecord, "preparedAt"> & { preparedAt?: number },
  ): Promise<ConversationRecord> {
    try {
      const [normal, id] = this.#id(key);
      const checked = checkSkill(skill);
      const existing = this.#records.get(id);
      if (!existing) throw notFound(normal);
      const record = frozen(withSkill(existing, checked));
      this.#records.set(id, record);
      return Promise.resolve(record);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Forgets a prepared skill.
   *
   * @param key The conversation.
   * @param name The skill's name.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key is invalid.
   */
  forgetPrepared(
    key: ConversationKey,
    name: string,
  ): Promise<ConversationRecord | null> {
    return this.#update(key, (record) => withoutSkill(record, name));
  }

  /**
   * Records a renewal.
   *
   * @param key The conversation.
   * @param expiresAt The new expiry, when known.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key or the expiry is invalid.
   */
  renew(
    key: ConversationKey,
    expiresAt?: number | null,
  ): Promise<ConversationRecord | null> {
    try {
      checkTime("expiry", expiresAt ?? null);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#update(key, (record) => renewed(record, expiresAt));
  }

  /**
   * Deletes a conversation's record.
   *
   * @param key The conversation.
   * @param options Delete only when it still names this sandbox.
   * @returns Whether a record was deleted.
   * @throws {TypeError} The key is invalid.
   */
  delete(
    key: ConversationKey,
    options: DeleteConversationOptions = {},
  ): Promise<boolean> {
    try {
      const [, id] = this.#id(key);
      const existing = this.#records.get(id);
      if (
        !existing ||
        (options.sandboxId !== undefined &&
          existing.sandboxId !== options.sandboxId)
      ) {
        return Promise.resolve(false);
      }
      this.#records.delete(id);
      return Promise.resolve(true);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  readonly #sessions = new Map<string, SessionRecord>();
  readonly #events = new Map<string, Map<string, string[]>>();

  /**
   * Records a new MCP session.
   *
   * @param session The session.
   * @returns The record.
   * @throws {TypeError} The session is invalid.
   * @throws {Deno.errors.AlreadyExists} A session has this id.
   */
  createSession(session: NewSession): Promise<SessionRecord> {
    try {
      const record = Object.freeze(newSessionRecord(session));
      if (this.#sessions.has(record.id)) throw sessionExists(record.id);
      this.#sessions.set(record.id, record);
      return Promise.resolve(record);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The record of a session.
   *
   * @param id The session id.
   * @returns The record, or `null`.
   */
  getSession(id: string): Promise<SessionRecord | null> {
    return Promise.resolve(this.#sessions.get(id) ?? null);
  }

  /**
   * Records a use of a session, unless a sweep has claimed it.
   *
   * @param id The session id.
   * @param at When; default now.
   * @returns The updated record, or `null`.
   */
  touchSession(
    id: string,
    at: number = Date.now(),
  ): Promise<SessionRecord | null> {
    const existing = this.#sessions.get(id);
    if (!existing || isClaimed(existing)) return Promise.resolve(null);
    const record = Object.freeze({
      ...existing,
      lastUsedAt: Math.max(existing.lastUsedAt, at),
    });
    this.#sessions.set(id, record);
    return Promise.resolve(record);
  }

  /**
   * Deletes a session and its events.
   *
   * @param id The session id.
   * @returns The record deleted, or `null`.
   */
  deleteSession(id: string): Promise<SessionRecord | null> {
    const existing = this.#sessions.get(id) ?? null;
    this.#sessions.delete(id);
    this.#events.delete(id);
    return Promise.resolve(existing);
  }

  /**
   * Claims the sessions idle since `idleBefore` that no live claim holds.
   *
   * @param idleBefore The idle limit.
   * @param claimForMs How long the claim holds.
   * @param limit The most sessions claimed.
   * @returns The sessions claimed.
   */
  claimIdleSessions(
    idleBefore: number,
    claimForMs: number,
    limit = 100,
  ): Promise<SessionRecord[]> {
    try {
      checkClaim(idleBefore, claimForMs, limit);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = Date.now();
    const claimed: SessionRecord[] = [];
    for (const record of this.#sessions.values()) {
      if (claimed.length >= limit) break;
      if (record.lastUsedAt >= idleBefore || isClaimed(record, now)) continue;
      const next = Object.freeze({ ...record, claimedUntil: now + claimForMs });
      this.#sessions.set(record.id, next);
      claimed.push(next);
    }
    return Promise.resolve(claimed);
  }

  /**
   * Counts the sessions.
   *
   * @param client The client counted apart.
   * @returns The counts.
   */
  countSessions(client?: string): Promise<SessionCount> {
    const now = Date.now();
    let total = 0;
    let mine = 0;
    for (const record of this.#sessions.values()) {
      if (isClaimed(record, now)) continue;
      total++;
      if (client !== undefined && record.client === client) mine++;
    }
    return Promise.resolve({ total, client: mine });
  }

  /**
   * Appends an event to a stream of a session.
   *
   * @param sessionId The session.
   * @param streamId The stream.
   * @param message The message.
   * @returns The event id.
   * @throws {TypeError} The stream id or the message is invalid.
   * @throws {Deno.errors.NotFound} The session has no record.
   */
  appendEvent(
    sessionId: string,
    streamId: string,
    message: unknown,
  ): Promise<string> {
    try {
      const json = checkEvent(streamId, message);
      if (!this.#sessions.has(sessionId)) throw sessionNotFound(sessionId);
      let streams = this.#events.get(sessionId);
      if (!streams) this.#events.set(sessionId, streams = new Map());
      let events = streams.get(streamId);
      if (!events) streams.set(streamId, events = []);
      events.push(json);
      return Promise.resolve(eventIdOf(streamId, events.length));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The events of a session's stream after one of its event ids.
   *
   * @param sessionId The session.
   * @param eventId The last event the client has.
   * @returns The stream and the events, or `null`.
   */
  eventsAfter(
    sessionId: string,
    eventId: string,
  ): Promise<StoredEvents | null> {
    const parsed = parseEventId(eventId);
    const events = parsed
      ? this.#events.get(sessionId)?.get(parsed.streamId) ?? []
      : [];
    if (
      !parsed || parsed.sequence > events.length ||
      (parsed.sequence === 0 && !this.#sessions.has(sessionId))
    ) {
      return Promise.resolve(null);
    }
    return Promise.resolve({
      streamId: parsed.streamId,
      events: events.slice(parsed.sequence).map((json, i) => ({
        id: eventIdOf(parsed.streamId, parsed.sequence + i + 1),
        message: JSON.parse(json),
      })),
    });
  }

  /** Nothing to release; present for the interface. */
  close(): void {}

  #update(
    key: ConversationKey,
    change: (record: ConversationRecord) => ConversationRecord,
  ): Promise<ConversationRecord | null> {
    try {
      const [, id] = this.#id(key);
      const existing = this.#records.get(id);
      if (!existing) return Promise.resolve(null);
      const record = frozen(change(existing));
      this.#records.set(id, record);
      return Promise.resolve(record);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** See the stores of this folder. @internal */
export function notFound(key: ConversationKey): Error {
  return new Deno.errors.NotFound(
    `Cannot update conversation "${key.conversationId}" of "${key.serverUrl}": it has no record`,
  );
}

/** Options of {@linkcode KvConversationStore}. */
export interface KvConversationStoreOptions {
  /**
   * The first parts of every key the store writes. Default
   * `["skillrun", "conversations"]`.
   */
  readonly prefix?: readonly Deno.KvKeyPart[];
  /** Whether {@linkcode KvConversationStore.close} closes the KV. Default `false`. */
  readonly closeKv?: boolean;
}

/** How often an atomic update is retried when another writer got there first. */
const MAX_ATTEMPTS = 64;

/**
 * Opens a KV file that other processes may be opening at the same moment:
 * SQLite answers "database is locked" to an open that meets another's set-up
 * (seen in CI when processes of several replicas start together), so such an
 * open is tried again for up to 5 s, 20-200 ms apart; any other error, or the
 * last one, is thrown as it came.
 */
async function openUnlocked(open: () => Promise<Deno.Kv>): Promise<Deno.Kv> {
  const until = Date.now() + 5_000;
  for (let wait = 20;; wait = Math.min(wait * 2, 200)) {
    try {
      return await open();
    } catch (error) {
      const locked = error instanceof Error &&
        /database is locked/i.test(error.message);
      if (!locked || Date.now() + wait > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * A conversation store in Deno KV: a local KV file shared by the processes
 * of one machine, or a hosted KV database (Deno Deploy). Every update is an
 * atomic operation checked against the version it read, retried when another
 * writer got there first, so concurrent processes never lose an update and
 * never both create a conversation; a KV file locked by another process
 * ("database is locked") is waited for, up to 10 s. One record per
 * conversation (a KV value holds at most 64 KiB: a few hundred prepared
 * skills).
 *
 * `Deno.openKv` is unstable in Deno 2.9.6: run with `--unstable-kv` (or
 * `"unstable": ["kv"]` in `deno.json`); without it `Deno.openKv` is not a
 * function and {@linkcode KvConversationStore.open} says so. Needs
 * `--allow-read` and `--allow-write` for a KV file.
 *
 * @example Two stores on one KV file see each other's conversations
 * ```ts
 * import { assert } from "@std/assert";
 * import { KvConversationStore } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * const a = await KvConversationStore.open(`${dir}/conversations.kv`);
 * const b = await KvConversationStore.open(`${dir}/conversations.kv`);
 * try {
 *   const key = { serverUrl: "http://127.0.0.1:8080", conversationId: "c1" };
 *   await a.create(key, { sandboxId: "sb-1", workspaceRoot: "/workspace" });
 *   await b.markPrepared(key, { name: "pdf", basePath: "/workspace/skills/pdf", digest: "sha256:00" });
 *   assert((await a.get(key))?.skills.pdf?.digest === "sha256:00");
 * } finally {
 *   a.close();
 *   b.close();
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export class KvConversationStore implements ConversationStore {
  readonly #kv: Deno.Kv;
  readonly #prefix: readonly Deno.KvKeyPart[];
  readonly #closeKv: boolean;
  #closed = false;

  /**
   * Opens a KV database (`Deno.openKv`) and makes a store over it that closes
   * it on {@linkcode KvConversationStore.close}.
   *
   * @param path A KV file (created when missing), a hosted KV URL, or none
   *   for the default database of the script.
   * @param options The key prefix.
   * @returns The store.
   * @throws {Error} `Deno.openKv` is missing (run with `--unstable-kv`).
   */
  static async open(
    path?: string,
    options: Omit<KvConversationStoreOptions, "closeKv"> = {},
  ): Promise<KvConversationStore> {
    const open = (Deno as { openKv?: typeof Deno.openKv }).openKv;
    if (typeof open !== "function") {
      throw new Error(
        `Cannot open Deno KV${
          path === undefined ? "" : ` "${path}"`
        }: Deno.openKv is unstable; run with --unstable-kv or add "unstable": ["kv"] to deno.json`,
      );
    }
    const kv = await openUnlocked(() => open(path));
    return new KvConversationStore(kv, { ...options, closeKv: true });
  }

  /**
   * Makes a store over an open KV database.
   *
   * @param kv The database.
   * @param options The key prefix; whether `close()` closes the database.
   * @throws {TypeError} The prefix is not an array.
   */
  constructor(kv: Deno.Kv, options: KvConversationStoreOptions = {}) {
    this.#kv = kv;
    const prefix = options.prefix ?? ["skillrun", "conversations"];
    if (!Array.isArray(prefix)) {
      throw new TypeError("Invalid KV prefix: expected an array of key parts");
    }
    this.#prefix = [...prefix];
    this.#closeKv = options.closeKv ?? false;
  }

  #key(key: ConversationKey): [ConversationKey, Deno.KvKey] {
    if (this.#closed) {
      throw new Error("Cannot use the conversation store: it is closed");
    }
    const normal = normalizeConversationKey(key);
    return [normal, [...this.#prefix, normal.serverUrl, normal.conversationId]];
  }

  /**
   * The record of a conversation (a strongly consistent read).
   *
   * @param key The conversation.
   * @returns The record, or `null`.
   * @throws {TypeError} The key is invalid.
   */
  async get(key: ConversationKey): Promise<ConversationRecord | null> {
    const [, kvKey] = this.#key(key);
    const entry = await this.#read(kvKey);
    return entry.value === null ? null : frozen(entry.value);
  }

  /**
   * Inserts a conversation's record only if there is none (an atomic check
   * that the key is absent).
   *
   * @param key The conversation.
   * @param conversation Its sandbox and workspace root.
   * @returns The record in the store and whether this call created it.
   * @throws {TypeError} The key or the conversation is invalid.
   */
  async create(
    key: ConversationKey,
    conversation: NewConversation,
  ): Promise<CreateConversationResult> {
    const [normal, kvKey] = this.#key(key);
    checkNewConversation(conversation);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const record = newRecord(normal, conversation);
      const result = await whenFree(() =>
        this.#kv.atomic()
          .check({ key: kvKey, versionstamp: null })
          .set(kvKey, record)
          .commit()
      );
      if (result.ok) return { record: frozen(record), created: true };
      const existing = await this.#read(kvKey);
      // Deleted between the two calls: try to insert again.
      if (existing.value !== null) {
        return { record: frozen(existing.value), created: false };
      }
    }
    throw contention(normal);
  }

  /**
   * Records a skill as prepared (an atomic read-modify-write).
   *
   * @param key The conversation.
   * @param skill The skill's name, folder and digest.
   * @returns The updated record.
   * @throws {TypeError} The key or the skill is invalid.
   * @throws {Deno.errors.NotFound} The conversation has no record.
   */
  async markPrepared(
    key: ConversationKey,
    skill: Omit<PreparedSkillRecord, "preparedAt"> & { preparedAt?: number },
  ): Promise<ConversationRecord> {
    const [normal] = this.#key(key);
    const checked = checkSkill(skill);
    const record = await this.#update(
      key,
      (existing) => withSkill(existing, checked),
    );
    if (record === null) throw notFound(normal);
    return record;
  }

  /**
   * Forgets a prepared skill (an atomic read-modify-write).
   *
   * @param key The conversation.
   * @param name The skill's name.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key is invalid.
   */
  forgetPrepared(
    key: ConversationKey,
    name: string,
  ): Promise<ConversationRecord | null> {
    return this.#update(key, (record) => withoutSkill(record, name));
  }

  /**
   * Records a renewal (an atomic read-modify-write).
   *
   * @param key The conversation.
   * @param expiresAt The new expiry, when known.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key or the expiry is invalid.
   */
  async renew(
    key: ConversationKey,
    expiresAt?: number | null,
  ): Promise<ConversationRecord | null> {
    checkTime("expiry", expiresAt ?? null);
    return await this.#update(key, (record) => renewed(record, expiresAt));
  }

  /**
   * Deletes a conversation's record (atomically checked against the sandbox
   * id when one is given).
   *
   * @param key The conversation.
   * @param options Delete only when it still names this sandbox.
   * @returns Whether a record was deleted.
   * @throws {TypeError} The key is invalid.
   */
  async delete(
    key: ConversationKey,
    options: DeleteConversationOptions = {},
  ): Promise<boolean> {
    const [normal, kvKey] = this.#key(key);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await this.#read(kvKey);
      if (entry.value === null) return false;
      if (
        options.sandboxId !== undefined &&
        entry.value.sandboxId !== options.sandboxId
      ) {
        return false;
      }
      const result = await whenFree(() =>
        this.#kv.atomic().check(entry).delete(kvKey).commit()
      );
      if (result.ok) return true;
    }
    throw contention(normal);
  }

  #sessionKey(id: string): Deno.KvKey {
    if (this.#closed) {
      throw new Error("Cannot use the conversation store: it is closed");
    }
    return [...this.#prefix, "#sessions", id];
  }

  /**
   * Records a new MCP session (an atomic check that the id is free).
   *
   * @param session The session.
   * @returns The record.
   * @throws {TypeError} The session is invalid.
   * @throws {Deno.errors.AlreadyExists} A session has this id.
   */
  async createSession(session: NewSession): Promise<SessionRecord> {
    const record = newSessionRecord(session);
    const key = this.#sessionKey(record.id);
    const result = await whenFree(() =>
      this.#kv.atomic().check({ key, versionstamp: null }).set(key, record)
        .commit()
    );
    if (!result.ok) throw sessionExists(record.id);
    return Object.freeze(record);
  }

  /**
   * The record of a session.
   *
   * @param id The session id.
   * @returns The record, or `null`.
   */
  async getSession(id: string): Promise<SessionRecord | null> {
    const key = this.#sessionKey(id);
    const entry = await whenFree(() => this.#kv.get<SessionRecord>(key));
    return entry.value === null ? null : Object.freeze(entry.value);
  }

  /**
   * Records a use of a session, unless a sweep has claimed it (an atomic
   * read-modify-write).
   *
   * @param id The session id.
   * @param at When; default now.
   * @returns The updated record, or `null`.
   */
  async touchSession(
    id: string,
    at: number = Date.now(),
  ): Promise<SessionRecord | null> {
    const key = this.#sessionKey(id);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await whenFree(() => this.#kv.get<SessionRecord>(key));
      if (entry.value === null || isClaimed(entry.value)) return null;
      const record = {
        ...entry.value,
        lastUsedAt: Math.max(entry.value.lastUsedAt, at),
      };
      const result = await whenFree(() =>
        this.#kv.atomic().check(entry).set(key, record).commit()
      );
      if (result.ok) return Object.freeze(record);
    }
    throw sessionContention(id);
  }

  /**
   * Deletes a session and its events (the record's removal is atomic: of
   * callers racing, one gets it).
   *
   * @param id The session id.
   * @returns The record deleted, or `null`.
   */
  async deleteSession(id: string): Promise<SessionRecord | null> {
    const key = this.#sessionKey(id);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await whenFree(() => this.#kv.get<SessionRecord>(key));
      if (entry.value === null) return null;
      const result = await whenFree(() =>
        this.#kv.atomic().check(entry).delete(key).commit()
      );
      if (!result.ok) continue;
      for (const part of ["#events", "#eventseq"]) {
        const prefix = [...this.#prefix, part, id];
        for await (
          const event of this.#kv.list({ prefix }, { batchSize: 500 })
        ) {
          await whenFree(() => this.#kv.delete(event.key));
        }
      }
      return Object.freeze(entry.value);
    }
    throw sessionContention(id);
  }

  /**
   * Claims the sessions idle since `idleBefore` that no live claim holds
   * (each claim an atomic check of the version read).
   *
   * @param idleBefore The idle limit.
   * @param claimForMs How long the claim holds.
   * @param limit The most sessions claimed.
   * @returns The sessions claimed.
   */
  async claimIdleSessions(
    idleBefore: number,
    claimForMs: number,
    limit = 100,
  ): Promise<SessionRecord[]> {
    checkClaim(idleBefore, claimForMs, limit);
    const now = Date.now();
    const claimed: SessionRecord[] = [];
    const prefix = [...this.#prefix, "#sessions"];
    this.#sessionKey("x");
    const entries = await whenFree(() =>
      Array.fromAsync(this.#kv.list<SessionRecord>({ prefix }))
    );
    for (const entry of entries) {
      if (claimed.length >= limit) break;
      const record = entry.value;
      if (record.lastUsedAt >= idleBefore || isClaimed(record, now)) continue;
      const next = { ...record, claimedUntil: now + claimForMs };
      const result = await whenFree(() =>
        this.#kv.atomic().check(entry).set(entry.key, next).commit()
      );
      if (result.ok) claimed.push(Object.freeze(next));
    }
    return claimed;
  }

  /**
   * Counts the sessions.
   *
   * @param client The client counted apart.
   * @returns The counts.
   */
  async countSessions(client?: string): Promise<SessionCount> {
    this.#sessionKey("x");
    const now = Date.now();
    let total = 0;
    let mine = 0;
    const prefix = [...this.#prefix, "#sessions"];
    const entries = await whenFree(() =>
      Array.fromAsync(this.#kv.list<SessionRecord>({ prefix }))
    );
    for (const { value } of entries) {
      if (isClaimed(value, now)) continue;
      total++;
      if (client !== undefined && value.client === client) mine++;
    }
    return { total, client: mine };
  }

  /**
   * Appends an event to a stream of a session (the stream's counter and the
   * event written in one atomic operation).
   *
   * @param sessionId The session.
   * @param streamId The stream.
   * @param message The message.
   * @returns The event id.
   * @throws {TypeError} The stream id or the message is invalid.
   * @throws {Deno.errors.NotFound} The session has no record.
   */
  async appendEvent(
    sessionId: string,
    streamId: string,
    message: unknown,
  ): Promise<string> {
    checkEvent(streamId, message);
    const session = await this.getSession(sessionId);
    if (session === null) throw sessionNotFound(sessionId);
    const counterKey = [...this.#prefix, "#eventseq", sessionId, streamId];
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const counter = await whenFree(() => this.#kv.get<number>(counterKey));
      const sequence = (counter.value ?? 0) + 1;
      const eventKey = [
        ...this.#prefix,
        "#events",
        sessionId,
        streamId,
        sequence,
      ];
      const result = await whenFree(() =>
        this.#kv.atomic().check(counter).set(counterKey, sequence)
          .set(eventKey, { message }).commit()
      );
      if (result.ok) return eventIdOf(streamId, sequence);
      await new Promise((resolve) =>
        setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt))
      );
    }
    throw sessionContention(sessionId);
  }

  /**
   * The events of a session's stream after one of its event ids.
   *
   * @param sessionId The session.
   * @param eventId The last event the client has.
   * @returns The stream and the events, or `null`.
   */
  async eventsAfter(
    sessionId: string,
    eventId: string,
  ): Promise<StoredEvents | null> {
    const parsed = parseEventId(eventId);
    if (!parsed) return null;
    const prefix = [...this.#prefix, "#events", sessionId, parsed.streamId];
    this.#sessionKey("x");
    // Sequence 0: the stream from its start (when the session exists).
    const known = await whenFree(() =>
      parsed.sequence === 0
        ? this.#kv.get(this.#sessionKey(sessionId))
        : this.#kv.get([...prefix, parsed.sequence])
    );
    if (known.value === null) return null;
    const entries = await whenFree(() =>
      Array.fromAsync(
        this.#kv.list<{ message: unknown }>({
          prefix,
          start: [...prefix, parsed.sequence + 1],
        }),
      )
    );
    return {
      streamId: parsed.streamId,
      events: entries.map((entry) => ({
        id: eventIdOf(parsed.streamId, entry.key.at(-1) as number),
        message: entry.value.message,
      })),
    };
  }

  /** Closes the KV database when the store opened it (idempotent). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#closeKv) this.#kv.close();
  }

  #read(kvKey: Deno.KvKey): Promise<Deno.KvEntryMaybe<ConversationRecord>> {
    return whenFree(() => this.#kv.get<ConversationRecord>(kvKey));
  }

  async #update(
    key: ConversationKey,
    change: (record: ConversationRecord) => ConversationRecord,
  ): Promise<ConversationRecord | null> {
    const [normal, kvKey] = this.#key(key);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await this.#read(kvKey);
      if (entry.value === null) return null;
      const record = change(entry.value);
      const result = await whenFree(() =>
        this.#kv.atomic().check(entry).set(kvKey, record).commit()
      );
      if (result.ok) return frozen(record);
      // Another writer changed it: back off a little, then read again.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt))
      );
    }
    throw contention(normal);
  }
}

/** How long a KV file locked by another process is waited for, in ms. */
const BUSY_WAIT_MS = 10_000;

/**
 * Runs a KV call, again while another process holds the KV file's lock
 * (SQLite answers "database is locked" at once instead of waiting).
 */
async function whenFree<T>(call: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let attempt = 0;; attempt++) {
    try {
      return await call();
    } catch (error) {
      const busy = error instanceof Error &&
        /database is (locked|busy)/i.test(error.message);
      if (!busy || Date.now() - started > BUSY_WAIT_MS) throw error;
      await new Promise((resolve) =>
        setTimeout(resolve, 1 + Math.random() * Math.min(50, 2 ** attempt))
      );
    }
  }
}

function sessionContention(id: string): Error {
  return new Error(
    `Cannot update session "${id}": too many concurrent writers, gave up after ${MAX_ATTEMPTS} attempts`,
  );
}

function contention(key: ConversationKey): Error {
  return new Error(
    `Cannot update conversation "${key.conversationId}" of "${key.serverUrl}": too many concurrent writers, gave up after ${MAX_ATTEMPTS} attempts`,
  );
}
