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
  /** Releases what the store holds open (idempotent). */
  close(): void;
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

/** Drops what looks like credentials from a string that failed to parse. */
function redactUrl(text: string): string {
  return text.replace(/\/\/[^/@]*@/, "//***@");
}

function checkNewConversation(conversation: NewConversation): void {
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

function checkTime(name: string, value: number | null): void {
  if (value !== null && (typeof value !== "number" || !isFinite(value))) {
    throw new TypeError(
      `Invalid ${name} ${JSON.stringify(value)}: expected ms since the epoch`,
    );
  }
}

function checkSkill(
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

function newRecord(
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

function withSkill(
  record: ConversationRecord,
  skill: PreparedSkillRecord,
): ConversationRecord {
  return { ...record, skills: { ...record.skills, [skill.name]: skill } };
}

function withoutSkill(
  record: ConversationRecord,
  name: string,
): ConversationRecord {
  const skills = { ...record.skills };
  delete skills[name];
  return { ...record, skills };
}

function renewed(
  record: ConversationRecord,
  expiresAt: number | null | undefined,
): ConversationRecord {
  return {
    ...record,
    renewedAt: Date.now(),
    expiresAt: expiresAt === undefined ? record.expiresAt : expiresAt,
  };
}

/** A deep-frozen copy, so that a caller never changes what a store holds. */
function frozen(record: ConversationRecord): ConversationRecord {
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

function notFound(key: ConversationKey): Error {
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
    const kv = await open(path);
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

function contention(key: ConversationKey): Error {
  return new Error(
    `Cannot update conversation "${key.conversationId}" of "${key.serverUrl}": too many concurrent writers, gave up after ${MAX_ATTEMPTS} attempts`,
  );
}
