/**
 * {@linkcode SkillRuntimeConfig}: application-side environment and bootstrap
 * commands of one skill. Never written into `SKILL.md`, never shown to a model,
 * never printable with its values.
 *
 * @module
 */

/** The default timeout of a bootstrap command: 120 000 ms. */
export const DEFAULT_BOOTSTRAP_TIMEOUT_MS = 120_000;

/** The rule of an environment variable's name: `[A-Za-z_][A-Za-z0-9_]*`. */
export const ENV_NAME: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One bootstrap command of a skill. */
export interface BootstrapCommand {
  /** The shell command, run with `bash -c` in the prepared skill's folder. */
  readonly command: string;
  /** How long it may run, in ms (> 0). */
  readonly timeoutMs: number;
}

/** A bootstrap command as given: a command, or a command and its timeout. */
export type BootstrapCommandInput = string | {
  command: string;
  timeoutMs?: number;
};

/** Options of {@linkcode SkillRuntimeConfig}. */
export interface SkillRuntimeConfigOptions {
  /** Environment variables injected into every command of the runtime. */
  env?: Readonly<Record<string, string>>;
  /** Commands run in order, once, when the skill is prepared. */
  bootstrap?: readonly BootstrapCommandInput[];
}

/**
 * The runtime configuration of one skill: environment variables and ordered
 * bootstrap commands. Validated when built, immutable afterwards. Its string,
 * JSON and inspected forms name the variables but never show their values or
 * the commands.
 *
 * @example Building a configuration
 * ```ts
 * import { assert } from "@std/assert";
 * import { SkillRuntimeConfig } from "@skillrun/skillrun/runtime";
 * const config = new SkillRuntimeConfig({
 *   env: { API_URL: "https://example.com", API_KEY: "s3cret" },
 *   bootstrap: ["pip install -r requirements.txt", { command: "make", timeoutMs: 60_000 }],
 * });
 * assert(config.env.API_KEY === "s3cret");
 * assert(!String(config).includes("s3cret"));
 * assert(!JSON.stringify(config).includes("s3cret"));
 * ```
 *
 * @example One variable at a time, with the builder
 * ```ts
 * import { assert } from "@std/assert";
 * import { SkillRuntimeConfig } from "@skillrun/skillrun/runtime";
 * const config = SkillRuntimeConfig.builder()
 *   .env("REGION", "eu")
 *   .envs({ MODE: "fast", REGION: "us" }) // a later value wins
 *   .bootstrap("npm ci", 300_000)
 *   .build();
 * assert(config.env.REGION === "us");
 * assert(config.bootstrap[0]?.timeoutMs === 300_000);
 * ```
 */
export class SkillRuntimeConfig {
  readonly #env: Readonly<Record<string, string>>;
  readonly #bootstrap: readonly BootstrapCommand[];

  /**
   * Validates and freezes a configuration.
   *
   * @param options Environment and bootstrap commands.
   * @throws {TypeError} A variable name is invalid, a value is not a string, or a
   * command is blank.
   * @throws {RangeError} A timeout is not a positive finite number.
   */
  constructor(options: SkillRuntimeConfigOptions = {}) {
    const env: Record<string, string> = Object.create(null);
    for (const [name, value] of Object.entries(options.env ?? {})) {
      checkEnvEntry(name, value);
      env[name] = value;
    }
    this.#env = Object.freeze(env);
    this.#bootstrap = Object.freeze(
      (options.bootstrap ?? []).map((input, index) =>
        checkBootstrap(input, index)
      ),
    );
    Object.freeze(this);
  }

  /**
   * Starts a fluent builder, the shape of the original Java API.
   *
   * @returns A new, empty builder.
   */
  static builder(): SkillRuntimeConfigBuilder {
    return new SkillRuntimeConfigBuilder();
  }

  /** The environment variables (a frozen copy; keep it out of logs). */
  get env(): Readonly<Record<string, string>> {
    return this.#env;
  }

  /** The names of the environment variables, sorted. */
  get envNames(): readonly string[] {
    return Object.keys(this.#env).sort();
  }

  /** The bootstrap commands in order (keep them out of logs: they may hold secrets). */
  get bootstrap(): readonly BootstrapCommand[] {
    return this.#bootstrap;
  }

  /**
   * Describes the configuration without its secrets.
   *
   * @returns A description naming the variables, without values or commands.
   */
  toString(): string {
    const names = this.envNames.join(", ");
    const count = this.#bootstrap.length;
    return `SkillRuntimeConfig { env: [${names}] (values hidden), bootstrap: ${count} command${
      count === 1 ? "" : "s"
    } (hidden) }`;
  }

  /**
   * The JSON form of the configuration, without its secrets.
   *
   * @returns The variables' names and the number of bootstrap commands.
   */
  toJSON(): { env: string[]; bootstrapCommands: number } {
    return {
      env: [...this.envNames],
      bootstrapCommands: this.#bootstrap.length,
    };
  }

  /**
   * What `Deno.inspect` and `console.log` show: the same as `toString()`.
   *
   * @returns A description without secrets.
   */
  [Symbol.for("Deno.customInspect")](): string {
    return this.toString();
  }

  /**
   * What Node's `util.inspect` shows: the same as `toString()`.
   *
   * @returns A description without secrets.
   */
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/**
 * A fluent builder of {@linkcode SkillRuntimeConfig}. Each call validates its
 * argument at once; `build()` returns an immutable configuration.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SkillRuntimeConfigBuilder } from "@skillrun/skillrun/runtime";
 * const config = new SkillRuntimeConfigBuilder().env("A", "1").build();
 * assert(config.env.A === "1");
 * ```
 */
export class SkillRuntimeConfigBuilder {
  #env: Record<string, string> = {};
  #bootstrap: BootstrapCommand[] = [];

  /**
   * Sets one environment variable; a later value for the same name wins.
   *
   * @param name The variable's name, `[A-Za-z_][A-Za-z0-9_]*`.
   * @param value Its value (a string; `null` and `undefined` are refused).
   * @returns This builder.
   * @throws {TypeError} The name is invalid or the value is not a string.
   */
  env(name: string, value: string): this {
    checkEnvEntry(name, value);
    this.#env[name] = value;
    return this;
  }

  /**
   * Sets several environment variables; later values win.
   *
   * @param map Names and values.
   * @returns This builder.
   * @throws {TypeError} A name is invalid or a value is not a string.
   */
  envs(map: Readonly<Record<string, string>>): this {
    if (map === null || typeof map !== "object") {
      throw new TypeError(
        `Cannot set environment: expected an object, got ${describe(map)}`,
      );
    }
    for (const [name, value] of Object.entries(map)) this.env(name, value);
    return this;
  }

  /**
   * Appends a bootstrap command.
   *
   * @param command The shell command (not blank).
   * @param timeoutMs How long it may run, in ms (> 0, default 120 000).
   * @returns This builder.
   * @throws {TypeError} The command is blank.
   * @throws {RangeError} The timeout is not a positive finite number.
   */
  bootstrap(
    command: string,
    timeoutMs: number = DEFAULT_BOOTSTRAP_TIMEOUT_MS,
  ): this {
    this.#bootstrap.push(
      checkBootstrap({ command, timeoutMs }, this.#bootstrap.length),
    );
    return this;
  }

  /**
   * Builds the configuration.
   *
   * @returns The immutable configuration.
   */
  build(): SkillRuntimeConfig {
    return new SkillRuntimeConfig({
      env: this.#env,
      bootstrap: this.#bootstrap,
    });
  }
}

function checkEnvEntry(name: unknown, value: unknown): void {
  if (typeof name !== "string" || !ENV_NAME.test(name)) {
    throw new TypeError(
      `Cannot set environment variable ${
        JSON.stringify(String(name))
      }: name must match [A-Za-z_][A-Za-z0-9_]*`,
    );
  }
  if (typeof value !== "string") {
    throw new TypeError(
      `Cannot set environment variable "${name}": value must be a string, got ${
        value === null ? "null" : typeof value
      }`,
    );
  }
}

function checkBootstrap(
  input: BootstrapCommandInput,
  index: number,
): BootstrapCommand {
  const { command, timeoutMs = DEFAULT_BOOTSTRAP_TIMEOUT_MS } =
    typeof input === "string"
      ? { command: input }
      : (input ?? {}) as { command?: unknown; timeoutMs?: unknown };
  if (typeof command !== "string" || command.trim() === "") {
    throw new TypeError(
      `Cannot add bootstrap command ${index + 1}: command must not be blank`,
    );
  }
  if (
    typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) ||
    timeoutMs <= 0
  ) {
    throw new RangeError(
      `Cannot add bootstrap command ${
        index + 1
      }: timeout must be a positive number of ms, got ${describe(timeoutMs)}`,
    );
  }
  return Object.freeze({ command, timeoutMs });
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "number") return String(value);
  return typeof value;
}

/**
 * Checks a runtime's or a request's variables: names by {@linkcode ENV_NAME},
 * values strings. Values are never echoed.
 *
 * @example A bad name is refused
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkEnv } from "./config.ts";
 * checkEnv({ MODE: "fast" }, "request");
 * assertThrows(() => checkEnv({ "A-B": "x" }, "request"), TypeError, '"A-B"');
 * ```
 *
 * @param env The variables.
 * @param what Whose they are, for the message (e.g. `request`).
 * @returns The same variables.
 * @throws {TypeError} A bad name, or a value that is not a string or holds
 * NUL (no process can receive it).
 */
export function checkEnv(
  env: Readonly<Record<string, string>>,
  what: string,
): Readonly<Record<string, string>> {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      throw new TypeError(
        `Cannot use variable "${name}" of the ${what}: a name must match [A-Za-z_][A-Za-z0-9_]*`,
      );
    }
    if (typeof value !== "string") {
      throw new TypeError(
        `Cannot use variable "${name}" of the ${what}: its value must be a string`,
      );
    }
    if (value.includes("\0")) {
      throw new TypeError(
        `Cannot use variable "${name}" of the ${what}: its value holds a NUL character`,
      );
    }
  }
  return env;
}
