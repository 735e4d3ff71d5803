/**
 * The harness of one conformance check: a temporary folder (the kit's skill
 * sources and downloads, and the folder handed to the runtime factory), the
 * runtimes the check opened (closed at the end), and small helpers.
 *
 * @module
 */
import type { Skill } from "../skill/types.ts";
import type { SkillRuntime } from "../runtimes/types.ts";

/** What a runtime factory is given. */
export interface RuntimeSetup<C = undefined> {
  /**
   * A local temporary folder (its real path) for this check alone, removed
   * after it: use it for a conversations root, a working directory, a store.
   * Runtimes asked for in one check get the same folder.
   */
  readonly dir: string;
  /**
   * Workspace mode: the conversation. Runtimes asked for with the same id in
   * one check must open the same conversation (the kit closes one and opens
   * the next to check what a conversation keeps). The `workspace-ids` check
   * passes invalid ids too, which the runtime must refuse: pass the id on as
   * given. Absent: a runtime without a workspace.
   */
  readonly conversationId?: string;
  /** What `setUp` returned for this check (a test server, a store...). */
  readonly context: C;
}

/** Makes a runtime for a check; the kit closes it at the end of the check. */
export type MakeRuntime<C = undefined> = (
  setup: RuntimeSetup<C>,
) => SkillRuntime | Promise<SkillRuntime>;

/** Options of {@linkcode ConformanceError}. */
export interface ConformanceErrorOptions {
  /** The mode the check ran in. */
  readonly mode?: RuntimeMode;
  /** The underlying error. */
  readonly cause?: unknown;
}

/** A check's failure: the runtime does not do what the contract says. */
export class ConformanceError extends Error {
  /** The error's name. */
  override readonly name = "ConformanceError";
  /** The id of the failing check, e.g. `prepare-count-order`. */
  readonly check: string;
  /** The mode the runtime failed it in, when known. */
  readonly mode: RuntimeMode | undefined;

  /**
   * Makes the error.
   *
   * @param check The id of the failing check.
   * @param message What the runtime did wrong.
   * @param options The mode the check ran in and the underlying error.
   */
  constructor(
    check: string,
    message: string,
    options: ConformanceErrorOptions = {},
  ) {
    super(
      `${check}${options.mode ? ` (${options.mode} mode)` : ""}: ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.check = check;
    this.mode = options.mode;
  }
}

/** The mode a check runs a runtime in. */
export type RuntimeMode = "plain" | "workspace";

/** Per-check state handed to each check. */
export class Harness<C = unknown> {
  /** The check's id (for messages). */
  readonly check: string;
  /** The mode the check runs in. */
  readonly mode: RuntimeMode;
  /** The kit's own local folder (real path). */
  readonly root: string;
  /** The factory's folder. */
  readonly dir: string;
  /** What `setUp` returned. */
  readonly context: C;
  readonly #make: MakeRuntime<C>;
  readonly #opened: SkillRuntime[] = [];
  #skills = 0;

  /**
   * Makes the harness (see {@linkcode Harness.create}).
   *
   * @param check The check's id and the mode it runs in.
   * @param root The kit's temporary folder.
   * @param make The runtime factory.
   * @param context What `setUp` returned.
   */
  constructor(
    check: { id: string; mode: RuntimeMode },
    root: string,
    make: MakeRuntime<C>,
    context: C,
  ) {
    this.check = check.id;
    this.mode = check.mode;
    this.root = root;
    this.dir = `${root}/runtime`;
    this.#make = make;
    this.context = context;
  }

  /**
   * Fails the check unless `condition` holds.
   *
   * @param condition What must hold.
   * @param message What the runtime did wrong.
   */
  expect(condition: unknown, message: string): void {
    if (!condition) {
      throw new ConformanceError(this.check, message, { mode: this.mode });
    }
  }

  /**
   * Fails the check.
   *
   * @param message What the runtime did wrong.
   * @param cause The underlying error.
   * @returns Never.
   */
  fail(message: string, cause?: unknown): never {
    throw new ConformanceError(this.check, message, {
      mode: this.mode,
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /**
   * Opens a runtime through the factory.
   *
   * @param mode Plain, or in the conversation `conversationId`.
   * @param conversationId The conversation (workspace mode).
   * @returns The runtime (closed at the end of the check).
   */
  async open(
    mode: RuntimeMode,
    conversationId = "conformance-1",
  ): Promise<SkillRuntime> {
    const runtime = await this.#make({
      dir: this.dir,
      context: this.context,
      ...(mode === "workspace" ? { conversationId } : {}),
    });
    this.#opened.push(runtime);
    return runtime;
  }

  /**
   * Calls the factory with a conversation id that it must refuse.
   *
   * @param conversationId The bad id.
   * @returns The error, or `null` when a runtime was made (it is closed).
   */
  async refuse(conversationId: string): Promise<unknown> {
    try {
      const runtime = await this.#make({
        dir: this.dir,
        context: this.context,
        conversationId,
      });
      this.#opened.push(runtime);
      return null;
    } catch (error) {
      return error;
    }
  }

  /**
   * Writes a skill folder under the kit's sources and returns it as loaded.
   *
   * @param name The skill's name prefix (a counter is added: names never repeat).
   * @param files Further files by relative path (text or bytes).
   * @returns The skill.
   */
  async skill(
    name: string,
    files: Readonly<Record<string, string | Uint8Array>> = {},
  ): Promise<Skill> {
    const unique = `${name}-${++this.#skills}`;
    const basePath = `${this.root}/sources/${unique}`;
    await Deno.mkdir(basePath, { recursive: true });
    const instructions = `Instructions of ${unique}.\n`;
    await Deno.writeTextFile(
      `${basePath}/SKILL.md`,
      `---\nname: ${unique}\ndescription: Conformance skill ${unique}.\n---\n${instructions}`,
    );
    for (const [path, content] of Object.entries(files)) {
      const target = `${basePath}/${path}`;
      await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
        recursive: true,
      });
      if (typeof content === "string") {
        await Deno.writeTextFile(target, content);
      } else await Deno.writeFile(target, content);
    }
    return {
      name: unique,
      description: `Conformance skill ${unique}.`,
      basePath,
      location: `${basePath}/SKILL.md`,
      instructions,
      frontMatter: {},
      warnings: [],
    };
  }

  /** Closes every runtime opened (errors ignored: `close-idempotent` checks them). */
  async closeAll(): Promise<void> {
    for (const runtime of this.#opened.splice(0)) {
      await runtime.close().catch(() => {});
    }
  }
}

/**
 * Runs `fn` with a harness in a new temporary folder, then closes the
 * runtimes, tears the context down and removes the folder.
 *
 * @param check The check's id and the mode it runs in.
 * @param make The runtime factory.
 * @param hooks `setUp` and `tearDown`.
 * @param fn The check.
 */
export async function withHarness<C>(
  check: { id: string; mode: RuntimeMode },
  make: MakeRuntime<C>,
  hooks: {
    setUp?: ((dir: string) => C | PromiseLike<C>) | undefined;
    tearDown?: ((context: C) => void | PromiseLike<void>) | undefined;
  },
  fn: (harness: Harness<C>) => Promise<void>,
): Promise<void> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-conformance-" }),
  );
  try {
    await Deno.mkdir(`${root}/runtime`);
    const context =
      (hooks.setUp ? await hooks.setUp(`${root}/runtime`) : undefined) as C;
    const harness = new Harness(check, root, make, context);
    try {
      await fn(harness);
    } catch (error) {
      if (error instanceof ConformanceError) throw error;
      throw new ConformanceError(
        check.id,
        `the runtime failed unexpectedly: ${messageOf(error)}`,
        { mode: check.mode, cause: error },
      );
    } finally {
      await harness.closeAll();
      await hooks.tearDown?.(context);
    }
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

/**
 * The message of an error, or the value as text.
 *
 * @param error Anything thrown.
 * @returns Its message.
 */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The outcome of a promise: its value, or the error it rejected with.
 *
 * @param promise The promise (or a function making it, which may throw).
 * @returns `{ ok: true, value }` or `{ ok: false, error }`.
 */
export async function settle<T>(
  promise: PromiseLike<T> | (() => PromiseLike<T>),
): Promise<
  { ok: true; value: T; error?: undefined } | {
    ok: false;
    error: unknown;
    value?: undefined;
  }
> {
  try {
    const value = await (typeof promise === "function" ? promise() : promise);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Joins a runtime path and a relative one with `/`.
 *
 * @param base The runtime path.
 * @param path The relative path.
 * @returns The joined path.
 */
export function join(base: string, path: string): string {
  return base.endsWith("/") ? `${base}${path}` : `${base}/${path}`;
}
