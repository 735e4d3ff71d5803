/**
 * A conversation store in PostgreSQL, the database both Supabase and Deno
 * Deploy offer: conversations, MCP sessions and the events of resumable
 * streams in three tables (created on first use), every update one atomic
 * statement or a transaction, so that instances racing (creating a
 * conversation's sandbox, claiming a sweep) never both win.
 *
 * It speaks through the npm package `postgres` with `prepare: false`, so it
 * works through a connection pooler in transaction mode (Supabase's usual
 * way in), which keeps no session state between transactions and allows no
 * prepared statements. Nothing it writes is a secret: the connection URL
 * (with its password) is never stored, logged nor put in an error.
 *
 * @module
 */
import postgres from "postgres";
import {
  checkClaim,
  checkEvent,
  checkNewConversation,
  checkSkill,
  checkTime,
  type ConversationKey,
  type ConversationRecord,
  type ConversationStore,
  ConversationStoreUnavailableError,
  type CreateConversationResult,
  type DeleteConversationOptions,
  eventIdOf,
  frozen,
  type NewConversation,
  newRecord,
  type NewSession,
  newSessionRecord,
  normalizeConversationKey,
  notFound,
  parseEventId,
  type PreparedSkillRecord,
  type SessionCount,
  sessionExists,
  sessionNotFound,
  type SessionRecord,
  type StoredEvents,
} from "./conversation_store.ts";

/** Options of {@linkcode PostgresConversationStore}. */
export interface PostgresConversationStoreOptions {
  /**
   * The first characters of the tables' names (letters, digits, `_`).
   * Default `skillrun_`: tables `skillrun_conversations`,
   * `skillrun_sessions`, `skillrun_events`.
   */
  readonly tablePrefix?: string;
  /** The most connections this process opens. Default 4. */
  readonly maxConnections?: number;
  /** How long connecting may take, in seconds. Default 5. */
  readonly connectTimeoutS?: number;
}

type Sql = postgres.Sql<Record<string, never>>;

/** SQLSTATE classes that mean the database cannot serve now. */
const UNAVAILABLE_STATES = /^(08|53|57P0[1-3]|58)/;

/**
 * A conversation store in PostgreSQL (see the module's doc). Needs
 * `--allow-net` to the database (and `--allow-env` for the `PG*`
 * variables when no URL is given).
 *
 * @example Two stores on one database see each other's conversations
 * ```ts ignore
 * import { PostgresConversationStore } from "@skillrun/skillrun/postgres";
 * const a = new PostgresConversationStore(Deno.env.get("DATABASE_URL")!);
 * const b = new PostgresConversationStore(Deno.env.get("DATABASE_URL")!);
 * const key = { serverUrl: "http://127.0.0.1:8080", conversationId: "c1" };
 * await a.create(key, { sandboxId: "sb-1", workspaceRoot: "/workspace" });
 * console.log((await b.get(key))?.sandboxId); // "sb-1"
 * a.close();
 * b.close();
 * ```
 */
export class PostgresConversationStore implements ConversationStore {
  readonly #sql: Sql;
  readonly #t: string;
  #schema: Promise<void> | undefined;
  #closed = false;

  /**
   * Makes a store over a database (connecting at the first call).
   *
   * @param url A `postgres://` URL (e.g. `SUPABASE_DB_URL`, `DATABASE_URL`);
   *   without one, the driver reads the standard `PG*` variables.
   * @param options The tables' prefix, the connections.
   * @throws {TypeError} The prefix or the URL is invalid.
   */
  constructor(
    url?: string,
    options: PostgresConversationStoreOptions = {},
  ) {
    const prefix = options.tablePrefix ?? "skillrun_";
    if (typeof prefix !== "string" || !/^[a-z_][a-z0-9_]{0,30}$/.test(prefix)) {
      throw new TypeError(
        `Invalid table prefix ${
          JSON.stringify(prefix)
        }: expected lower-case letters, digits and "_", starting with a letter or "_"`,
      );
    }
    if (url !== undefined) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        parsed = undefined;
      }
      if (
        parsed === undefined ||
        (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:")
      ) {
        throw new TypeError(
          "Invalid PostgreSQL URL: expected postgres://user:password@host:port/database",
        );
      }
    }
    this.#t = prefix;
    const settings = {
      prepare: false,
      // One query at a time on a connection: a transaction-mode pooler may
      // hand each to another server connection, and pgbouncer 1.18 stalls
      // on pipelined unnamed statements.
      max_pipeline: 1,
      max: options.maxConnections ?? 4,
      connect_timeout: options.connectTimeoutS ?? 5,
      idle_timeout: 20,
      onnotice: () => {},
    };
    this.#sql =
      (url === undefined
        ? postgres(settings)
        : postgres(url, settings)) as unknown as Sql;
  }

  /** Runs a call once the schema exists; its failures made clear. */
  async #run<T>(call: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.#closed) {
      throw new Error("Cannot use the conversation store: it is closed");
    }
    try {
      this.#schema ??= this.#createSchema().catch((error) => {
        this.#schema = undefined;
        throw error;
      });
      await this.#schema;
      try {
        return await call(this.#sql);
      } catch (error) {
        // The tables went away (dropped, a database restored): again once.
        if ((error as { code?: string }).code !== "42P01") throw error;
        this.#schema = this.#createSchema();
        await this.#schema;
        return await call(this.#sql);
      }
    } catch (error) {
      throw clearError(error);
    }
  }

  async #createSchema(): Promise<void> {
    const t = this.#t;
    await this.#sql.begin(async (sql) => {
      // Instances starting together: one creates, the others wait.
      await sql.unsafe(`select pg_advisory_xact_lock(hashtext($1))`, [
        `${t}schema`,
      ]);
      await sql.unsafe(`
        create table if not exists ${t}conversations (
          server_url text not null,
          conversation_id text not null,
          record jsonb not null,
          primary key (server_url, conversation_id)
        );
        create table if not exists ${t}sessions (
          id text primary key,
          client text not null,
          last_used_at bigint not null,
          claimed_until bigint,
          record jsonb not null
        );
        create index if not exists ${t}sessions_idle on ${t}sessions (last_used_at);
        create table if not exists ${t}events (
          session_id text not null,
          stream_id text not null,
          sequence integer not null,
          message jsonb not null,
          primary key (session_id, stream_id, sequence)
        );
      `);
    });
  }

  /**
   * The record of a conversation.
   *
   * @param key The conversation.
   * @returns The record, or `null`.
   * @throws {TypeError} The key is invalid.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async get(key: ConversationKey): Promise<ConversationRecord | null> {
    const normal = normalizeConversationKey(key);
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `select record from ${this.#t}conversations where server_url = $1 and conversation_id = $2`,
        [normal.serverUrl, normal.conversationId],
      )
    );
    return rows[0] ? frozen(rows[0].record as ConversationRecord) : null;
  }

  /**
   * Inserts a conversation's record only if there is none (one statement:
   * of instances racing, one inserts, the others get its record).
   *
   * @param key The conversation.
   * @param conversation Its sandbox and workspace root.
   * @returns The record in the store and whether this call created it.
   * @throws {TypeError} The key or the conversation is invalid.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async create(
    key: ConversationKey,
    conversation: NewConversation,
  ): Promise<CreateConversationResult> {
    const normal = normalizeConversationKey(key);
    checkNewConversation(conversation);
    for (let attempt = 0; attempt < 8; attempt++) {
      const record = newRecord(normal, conversation);
      const inserted = await this.#run((sql) =>
        sql.unsafe(
          `insert into ${this.#t}conversations (server_url, conversation_id, record)
           values ($1, $2, $3::text::jsonb) on conflict do nothing returning record`,
          [normal.serverUrl, normal.conversationId, JSON.stringify(record)],
        )
      );
      if (inserted.length > 0) return { record: frozen(record), created: true };
      const existing = await this.get(normal);
      if (existing !== null) return { record: existing, created: false };
    }
    throw new Error(
      `Cannot create conversation "${normal.conversationId}": it was deleted and created again too often meanwhile`,
    );
  }

  async #update(
    key: ConversationKey,
    set: string,
    params: unknown[],
  ): Promise<ConversationRecord | null> {
    const normal = normalizeConversationKey(key);
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `update ${this.#t}conversations set record = ${set}
         where server_url = $1 and conversation_id = $2 returning record`,
        [normal.serverUrl, normal.conversationId, ...params] as never[],
      )
    );
    return rows[0] ? frozen(rows[0].record as ConversationRecord) : null;
  }

  /**
   * Records a skill as prepared (one atomic update).
   *
   * @param key The conversation.
   * @param skill The skill's name, folder and digest.
   * @returns The updated record.
   * @throws {TypeError} The key or the skill is invalid.
   * @throws {Deno.errors.NotFound} The conversation has no record.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async markPrepared(
    key: ConversationKey,
    skill: Omit<PreparedSkillRecord, "preparedAt"> & { preparedAt?: number },
  ): Promise<ConversationRecord> {
    const normal = normalizeConversationKey(key);
    const checked = checkSkill(skill);
    const record = await this.#update(
      normal,
      `jsonb_set(record, '{skills}', coalesce(record->'skills', '{}'::jsonb) || jsonb_build_object($3::text, $4::text::jsonb))`,
      [checked.name, JSON.stringify(checked)],
    );
    if (record === null) throw notFound(normal);
    return record;
  }

  /**
   * Forgets a prepared skill (one atomic update).
   *
   * @param key The conversation.
   * @param name The skill's name.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key is invalid.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  forgetPrepared(
    key: ConversationKey,
    name: string,
  ): Promise<ConversationRecord | null> {
    return this.#update(
      key,
      `jsonb_set(record, '{skills}', coalesce(record->'skills', '{}'::jsonb) - $3::text)`,
      [String(name)],
    );
  }

  /**
   * Records a renewal (one atomic update).
   *
   * @param key The conversation.
   * @param expiresAt The new expiry, when known.
   * @returns The updated record, or `null`.
   * @throws {TypeError} The key or the expiry is invalid.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async renew(
    key: ConversationKey,
    expiresAt?: number | null,
  ): Promise<ConversationRecord | null> {
    checkTime("expiry", expiresAt ?? null);
    const patch = {
      renewedAt: Date.now(),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
    return await this.#update(key, `record || $3::text::jsonb`, [
      JSON.stringify(patch),
    ]);
  }

  /**
   * Deletes a conversation's record (only the named sandbox's when asked).
   *
   * @param key The conversation.
   * @param options Delete only when it still names this sandbox.
   * @returns Whether a record was deleted.
   * @throws {TypeError} The key is invalid.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async delete(
    key: ConversationKey,
    options: DeleteConversationOptions = {},
  ): Promise<boolean> {
    const normal = normalizeConversationKey(key);
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `delete from ${this.#t}conversations
         where server_url = $1 and conversation_id = $2
           and ($3::text is null or record->>'sandboxId' = $3::text)
         returning 1 as deleted`,
        [
          normal.serverUrl,
          normal.conversationId,
          options.sandboxId ?? null,
        ] as never[],
      )
    );
    return rows.length > 0;
  }

  /**
   * Records a new MCP session.
   *
   * @param session The session.
   * @returns The record.
   * @throws {TypeError} The session is invalid.
   * @throws {Deno.errors.AlreadyExists} A session has this id.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async createSession(session: NewSession): Promise<SessionRecord> {
    const record = newSessionRecord(session);
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `insert into ${this.#t}sessions (id, client, last_used_at, claimed_until, record)
         values ($1, $2, $3, null, $4::text::jsonb) on conflict do nothing returning id`,
        [
          record.id,
          record.client,
          record.lastUsedAt,
          JSON.stringify(record),
        ] as never[],
      )
    );
    if (rows.length === 0) throw sessionExists(record.id);
    return Object.freeze(record);
  }

  /**
   * The record of a session.
   *
   * @param id The session id.
   * @returns The record, or `null`.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async getSession(id: string): Promise<SessionRecord | null> {
    const rows = await this.#run((sql) =>
      sql.unsafe(`${this.#selectSession()} where id = $1`, [String(id)])
    );
    return rows[0] ? sessionOf(rows[0]) : null;
  }

  #selectSession(): string {
    return `select record, last_used_at::float8 as last_used_at,
      claimed_until::float8 as claimed_until from ${this.#t}sessions`;
  }

  /**
   * Records a use of a session, unless a sweep has claimed it (one update).
   *
   * @param id The session id.
   * @param at When; default now.
   * @returns The updated record, or `null`.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async touchSession(
    id: string,
    at: number = Date.now(),
  ): Promise<SessionRecord | null> {
    checkTime("use time", at);
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `update ${this.#t}sessions set last_used_at = greatest(last_used_at, $2)
         where id = $1 and (claimed_until is null or claimed_until <= $3)
         returning record, last_used_at::float8 as last_used_at,
           claimed_until::float8 as claimed_until`,
        [String(id), Math.floor(at), Date.now()] as never[],
      )
    );
    return rows[0] ? sessionOf(rows[0]) : null;
  }

  /**
   * Deletes a session and its events in one transaction; of callers racing,
   * one gets the record.
   *
   * @param id The session id.
   * @returns The record deleted, or `null`.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async deleteSession(id: string): Promise<SessionRecord | null> {
    const rows = await this.#run((sql) =>
      sql.begin(async (tx) => {
        const deleted = await tx.unsafe(
          `delete from ${this.#t}sessions where id = $1
           returning record, last_used_at::float8 as last_used_at,
             claimed_until::float8 as claimed_until`,
          [String(id)],
        );
        await tx.unsafe(
          `delete from ${this.#t}events where session_id = $1`,
          [String(id)],
        );
        return deleted;
      })
    );
    return rows[0] ? sessionOf(rows[0]) : null;
  }

  /**
   * Claims the sessions idle since `idleBefore` that no live claim holds
   * (one update of rows locked with `skip locked`: two sweeps never claim
   * one session).
   *
   * @param idleBefore The idle limit.
   * @param claimForMs How long the claim holds.
   * @param limit The most sessions claimed.
   * @returns The sessions claimed.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async claimIdleSessions(
    idleBefore: number,
    claimForMs: number,
    limit = 100,
  ): Promise<SessionRecord[]> {
    checkClaim(idleBefore, claimForMs, limit);
    const now = Date.now();
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `update ${this.#t}sessions set claimed_until = $3
         where id in (
           select id from ${this.#t}sessions
           where last_used_at < $1 and (claimed_until is null or claimed_until <= $2)
           order by last_used_at limit $4 for update skip locked)
         returning record, last_used_at::float8 as last_used_at,
           claimed_until::float8 as claimed_until`,
        [Math.floor(idleBefore), now, now + claimForMs, limit] as never[],
      )
    );
    return rows.map(sessionOf);
  }

  /**
   * Counts the sessions.
   *
   * @param client The client counted apart.
   * @returns The counts.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async countSessions(client?: string): Promise<SessionCount> {
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `select count(*)::int as total,
           count(*) filter (where client = $2::text)::int as mine
         from ${this.#t}sessions where claimed_until is null or claimed_until <= $1`,
        [Date.now(), client ?? null] as never[],
      )
    );
    return {
      total: Number(rows[0]?.total ?? 0),
      client: Number(rows[0]?.mine ?? 0),
    };
  }

  /**
   * Appends an event to a stream of a session (its sequence taken in the
   * insert; a race of two writers on one stream is retried).
   *
   * @param sessionId The session.
   * @param streamId The stream.
   * @param message The message.
   * @returns The event id.
   * @throws {TypeError} The stream id or the message is invalid.
   * @throws {Deno.errors.NotFound} The session has no record.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async appendEvent(
    sessionId: string,
    streamId: string,
    message: unknown,
  ): Promise<string> {
    const json = checkEvent(streamId, message);
    for (let attempt = 0; attempt < 16; attempt++) {
      try {
        const rows = await this.#run((sql) =>
          sql.unsafe(
            `insert into ${this.#t}events (session_id, stream_id, sequence, message)
             select $1, $2, coalesce(max(sequence), 0) + 1, $3::text::jsonb
             from ${this.#t}events where session_id = $1 and stream_id = $2
             having exists (select 1 from ${this.#t}sessions where id = $1)
             returning sequence`,
            [String(sessionId), streamId, json],
          )
        );
        if (rows.length === 0) throw sessionNotFound(sessionId);
        return eventIdOf(streamId, Number(rows[0]!.sequence));
      } catch (error) {
        // Two writers took the same sequence: take the next.
        if ((error as { code?: string }).code !== "23505") throw error;
      }
    }
    throw new Error(
      `Cannot add an event to session "${sessionId}": too many concurrent writers`,
    );
  }

  /**
   * The events of a session's stream after one of its event ids.
   *
   * @param sessionId The session.
   * @param eventId The last event the client has.
   * @returns The stream and the events, or `null`.
   * @throws {ConversationStoreUnavailableError} The database cannot be reached.
   */
  async eventsAfter(
    sessionId: string,
    eventId: string,
  ): Promise<StoredEvents | null> {
    const parsed = parseEventId(eventId);
    if (!parsed || parsed.sequence > 2 ** 31 - 1) return null;
    const rows = await this.#run((sql) =>
      sql.unsafe(
        `select sequence, message from ${this.#t}events
         where session_id = $1 and stream_id = $2 and sequence >= $3
         order by sequence`,
        [String(sessionId), parsed.streamId, parsed.sequence] as never[],
      )
    );
    if (parsed.sequence === 0) {
      // The stream from its start, when the session exists.
      if (await this.getSession(sessionId) === null) return null;
    } else if (
      rows.length === 0 || Number(rows[0]!.sequence) !== parsed.sequence
    ) {
      return null;
    }
    return {
      streamId: parsed.streamId,
      events: rows.slice(parsed.sequence === 0 ? 0 : 1).map((row) => ({
        id: eventIdOf(parsed.streamId, Number(row.sequence)),
        message: row.message,
      })),
    };
  }

  /** Closes the connections (idempotent; running calls finish first). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.#sql.end({ timeout: 5 }).catch(() => {});
  }
}

function sessionOf(row: Record<string, unknown>): SessionRecord {
  const record = row.record as SessionRecord;
  return Object.freeze({
    ...record,
    lastUsedAt: Number(row.last_used_at),
    claimedUntil: row.claimed_until === null ? null : Number(row.claimed_until),
  });
}

/**
 * The error a caller gets: ours as they are (bad arguments, not found), the
 * database's own refusals with their message, and a database out of reach
 * as a {@linkcode ConversationStoreUnavailableError} with a one-line reason
 * (never the URL nor its password).
 */
function clearError(error: unknown): unknown {
  if (
    error instanceof TypeError || error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.AlreadyExists ||
    error instanceof ConversationStoreUnavailableError
  ) {
    return error;
  }
  const e = error as { code?: unknown; message?: unknown; severity?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  const message = String(e.message ?? error).split("\n")[0]!
    .replace(/\/\/[^/@\s]*@/g, "//***@");
  if (typeof e.severity === "string" && !UNAVAILABLE_STATES.test(code)) {
    // The server answered: a refusal of ours (bad SQL, a constraint).
    return Object.assign(new Error(`PostgreSQL refused: ${message}`), {
      code,
    });
  }
  return new ConversationStoreUnavailableError(
    `Cannot reach the PostgreSQL store: ${message}${
      code && !message.includes(code) ? ` (${code})` : ""
    }`,
    { cause: error },
  );
}
