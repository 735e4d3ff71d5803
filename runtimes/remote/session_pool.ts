/**
 * {@linkcode SessionPool}: the command sessions of a service that runs each
 * command in a session (AIO's bash sessions; a kill acts on a session's
 * current process), reused one command at a time so that concurrent
 * commands never share one and few are made.
 *
 * @module
 */

/** Makes a session of the given id on the server (it may throw: nothing ran). */
export type CreateSession = (id: string, signal?: AbortSignal) => Promise<void>;

/**
 * Sessions of one server, reused one command at a time. Each is made with
 * an id of our own (`skillrun-<uuid>`), so a kill can name it before the
 * command's answer came. Makes no request until {@linkcode SessionPool.open}.
 *
 * @example Opening and giving back a session
 * ```ts
 * import { assert, assertEquals } from "@std/assert";
 * import { SessionPool } from "./session_pool.ts";
 *
 * const made: string[] = [];
 * const pool = new SessionPool((id) => Promise.resolve(void made.push(id)));
 * const a = await pool.open();
 * pool.give(a);
 * assert((await pool.open()) === a && made.length === 1);
 * assert(pool.size === 1);
 * assertEquals([pool.drain(), pool.size], [[a], 0]);
 * ```
 */
export class SessionPool {
  readonly #create: CreateSession;
  #idle: string[] = [];
  readonly #created = new Set<string>();

  /**
   * Makes the pool; makes no request.
   *
   * @param create Makes a session on the server.
   */
  constructor(create: CreateSession) {
    this.#create = create;
  }

  /**
   * An idle session, or a new one made on the server. When it throws,
   * nothing ran and the id is not reused (the session may or may not exist).
   *
   * @param signal Stops the making.
   * @returns The session's id.
   */
  async open(signal?: AbortSignal): Promise<string> {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle;
    const id = `skillrun-${crypto.randomUUID()}`;
    await this.#create(id, signal);
    this.#created.add(id);
    return id;
  }

  /**
   * Gives a session back once its command has ended.
   *
   * @param id The session.
   */
  give(id: string): void {
    if (this.#created.has(id) && !this.#idle.includes(id)) this.#idle.push(id);
  }

  /**
   * Forgets a session whose state is unknown (it is not reused).
   *
   * @param id The session.
   */
  drop(id: string): void {
    this.#idle = this.#idle.filter((idle) => idle !== id);
  }

  /** How many sessions the server was told about. */
  get size(): number {
    return this.#created.size;
  }

  /**
   * Forgets every session and answers their ids (for closing them).
   *
   * @returns The ids of every session made.
   */
  drain(): string[] {
    const ids = [...this.#created];
    this.#idle = [];
    this.#created.clear();
    return ids;
  }
}
