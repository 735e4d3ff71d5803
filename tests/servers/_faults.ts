/**
 * A switchable fault injector for the `Deno.serve` test servers (OpenSandbox,
 * AIO): rules chosen per method, route and count ("the next 2 calls of
 * `GET /files/download`") make a real answer go wrong in a way a client can
 * observe on the wire: an error status, a dropped connection in the middle of
 * a body or of an event stream, a slow first byte, a short body, invalid
 * JSON, an event stream that ends without its completion, a `Range` header
 * ignored, a command that ignores SIGTERM (asked for by the server through
 * {@linkcode FaultInjector.serverFault}), and a closed listener (refused
 * connections, `FaultServer.refuseConnections` in `_fault_server.ts`).
 *
 * Tests switch faults at run time in-process ({@linkcode FaultInjector.add});
 * a hand-run server takes `--fault` specs ({@linkcode parseFaultSpec}) and,
 * when `control` is on, `POST/GET/DELETE /__faults` while it runs.
 *
 * This file holds the faults, the rules and the injector; the body faults
 * are applied in `_fault_bodies.ts`, and the listener that serves a handler
 * behind an injector (`serveWithFaults`) is in `_fault_server.ts`.
 *
 * @module
 */
import { applyToBody } from "./_fault_bodies.ts";

/** Answer with this status instead (the handler is not called). */
export interface StatusFault {
  readonly kind: "status";
  /** The status, e.g. 401, 404, 500, 503. */
  readonly status: number;
  /** The body; default: the injector's `errorBody` for the status. */
  readonly body?: string;
  /** Content type of `body`; default `application/json`. */
  readonly contentType?: string;
  /** Extra headers, e.g. `retry-after`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Echo what was sent, as a careless server does: the body is
   * `{"code":"ECHO","message":"<echoed> <method> <URL> <request body>"}`
   * (the body read up to 64 KiB; `echoed`, when given, is what the server
   * remembers from earlier requests). Overrides `body`.
   */
  readonly echo?: boolean;
  /** A text the echo adds (see `echo`). */
  readonly echoed?: string;
}

/**
 * The connection drops after `afterBytes` bytes of the real body (default:
 * half of it when its length is known, else after 1 byte). The status and
 * headers are the real ones.
 */
export interface ResetFault {
  readonly kind: "reset";
  readonly afterBytes?: number;
}

/**
 * An event stream (one event per line) drops its connection after
 * `afterLines` non-empty lines (default 1) and the blank line after the last.
 */
export interface ResetStreamFault {
  readonly kind: "reset-stream";
  readonly afterLines?: number;
}

/**
 * The real `Content-Length` is announced but only `keepBytes` bytes are sent
 * (default: half), then the connection closes.
 */
export interface TruncateFault {
  readonly kind: "truncate";
  readonly keepBytes?: number;
}

/**
 * The answer starts only after `delayMs` (past a client's timeout), or
 * sooner, once `until` settles (a test holds a request while it changes
 * something, then lets it go on).
 */
export interface SlowFault {
  readonly kind: "slow";
  readonly delayMs: number;
  readonly until?: Promise<unknown>;
}

/** The real status and headers, with a body that is not valid JSON. */
export interface InvalidJsonFault {
  readonly kind: "invalid-json";
}

/**
 * An event stream ends cleanly, without error, just before its first
 * completion line (default: a JSON line whose `type` is
 * `execution_complete` or `error`, with or without `data: `).
 */
export interface EndStreamFault {
  readonly kind: "end-stream";
  readonly isCompletion?: (line: string) => boolean;
}

/** The request reaches the handler without its `Range` header. */
export interface IgnoreRangeFault {
  readonly kind: "ignore-range";
}

/**
 * The server starts the command so that it ignores SIGTERM (only SIGKILL
 * stops it). Servers read it with {@linkcode FaultInjector.serverFault}.
 */
export interface IgnoreSigtermFault {
  readonly kind: "ignore-sigterm";
}

/** One fault. */
export type Fault =
  | StatusFault
  | ResetFault
  | ResetStreamFault
  | TruncateFault
  | SlowFault
  | InvalidJsonFault
  | EndStreamFault
  | IgnoreRangeFault
  | IgnoreSigtermFault;

/** The kinds of fault. */
export type FaultKind = Fault["kind"];

/** Which requests a rule applies to, and how many times. */
export interface FaultRule {
  /** The fault. */
  readonly fault: Fault;
  /** Method, e.g. `"GET"`; default any. */
  readonly method?: string;
  /**
   * The route path (as the server's `routeOf` gives it): exact, or with `*`
   * (any characters) and `{name}` (one segment), or a regular expression.
   * Default any.
   */
  readonly path?: string | RegExp;
  /** How many matching calls it applies to; default every call. */
  readonly times?: number;
}

/** A rule in force, as {@linkcode FaultInjector.add} returns it. */
export interface ActiveFault {
  /** The rule. */
  readonly rule: FaultRule;
  /** How many more calls it will apply to (`Infinity` for all). */
  readonly remaining: number;
  /** How many calls it has applied to. */
  readonly hits: number;
  /** Takes the rule out. */
  remove(): void;
}

/** One fault that happened. */
export interface FaultHit {
  readonly kind: FaultKind;
  readonly method: string;
  readonly path: string;
  readonly at: number;
}

/** Options of {@linkcode FaultInjector}. */
export interface FaultInjectorOptions {
  /** The route a request is matched on; default the URL's method and path. */
  routeOf?: (request: Request) => { method: string; path: string };
  /** The body of a status fault; default `{"code":"INJECTED_FAULT",...}`. */
  errorBody?: (status: number) => string;
}

class Rule implements ActiveFault {
  readonly rule: FaultRule;
  remaining: number;
  hits = 0;
  readonly #owner: FaultInjector;
  readonly #pattern: RegExp | undefined;

  constructor(owner: FaultInjector, rule: FaultRule) {
    this.#owner = owner;
    this.rule = rule;
    this.remaining = rule.times ?? Infinity;
    this.#pattern = rule.path === undefined
      ? undefined
      : typeof rule.path === "string"
      ? routePattern(rule.path)
      : rule.path;
  }

  matches(method: string, path: string): boolean {
    if (this.remaining <= 0) return false;
    const wanted = this.rule.method?.toUpperCase();
    if (wanted !== undefined && wanted !== "*" && wanted !== method) {
      return false;
    }
    return this.#pattern === undefined || this.#pattern.test(path);
  }

  remove(): void {
    this.#owner.remove(this);
  }
}

function routePattern(path: string): RegExp {
  let source = "";
  for (const part of path.split(/(\*|\{[^/{}]+\})/)) {
    if (part === "*") source += ".*";
    else if (/^\{[^/{}]+\}$/.test(part)) source += "[^/]+";
    else source += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

const HANDLER_KINDS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  "ignore-sigterm",
]);

/**
 * Rules of faults, matched per request, and the code that applies them
 * around a handler.
 *
 * @example Answer 503 to the next two pings, then the real answer
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { FaultInjector } from "./_faults.ts";
 *
 * const faults = new FaultInjector();
 * faults.add({ method: "GET", path: "/ping", fault: { kind: "status", status: 503 }, times: 2 });
 * const handler = faults.wrap(() => new Response("pong"));
 * const statuses = [];
 * for (let i = 0; i < 3; i++) {
 *   const response = await handler(new Request("http://h/ping"));
 *   await response.body?.cancel();
 *   statuses.push(response.status);
 * }
 * assertEquals(statuses, [503, 503, 200]);
 * ```
 */
export class FaultInjector {
  #rules: Rule[] = [];
  #hits: FaultHit[] = [];
  readonly #routeOf: (request: Request) => { method: string; path: string };
  readonly #errorBody: (status: number) => string;
  readonly #serverFaults = new WeakMap<Request, Fault>();
  readonly #closing = new AbortController();

  /** @param options How requests are matched and error bodies written. */
  constructor(options: FaultInjectorOptions = {}) {
    this.#routeOf = options.routeOf ??
      ((request) => ({
        method: request.method,
        path: new URL(request.url).pathname,
      }));
    this.#errorBody = options.errorBody ??
      ((status) =>
        JSON.stringify({
          code: "INJECTED_FAULT",
          message: `injected fault: status ${status}`,
        }));
  }

  /**
   * Adds a rule (after the existing ones; the first matching rule wins).
   *
   * @param rule The fault, the requests it applies to and how many times.
   * @returns The rule in force, with its counters.
   */
  add(rule: FaultRule): ActiveFault {
    if (rule.times !== undefined && !(rule.times >= 1)) {
      throw new RangeError(
        `Cannot add the fault "${rule.fault.kind}": times must be at least 1`,
      );
    }
    const added = new Rule(this, rule);
    this.#rules.push(added);
    return added;
  }

  /** Takes a rule out. */
  remove(rule: ActiveFault): void {
    this.#rules = this.#rules.filter((candidate) => candidate !== rule);
  }

  /** Takes every rule out (the log of hits stays). */
  clear(): void {
    this.#rules = [];
  }

  /** The rules in force. */
  get rules(): readonly ActiveFault[] {
    return this.#rules.filter((rule) => rule.remaining > 0);
  }

  /** The faults that happened, oldest first. */
  get hits(): readonly FaultHit[] {
    return this.#hits;
  }

  /** How many faults of `kind` (or of any kind) happened. */
  count(kind?: FaultKind): number {
    return kind === undefined
      ? this.#hits.length
      : this.#hits.filter((hit) => hit.kind === kind).length;
  }

  /**
   * The fault a handler applies itself (e.g. `ignore-sigterm`), if one was
   * chosen for this request.
   */
  serverFault<K extends FaultKind>(
    request: Request,
    kind: K,
  ): Extract<Fault, { kind: K }> | undefined {
    const fault = this.#serverFaults.get(request);
    return fault?.kind === kind
      ? fault as Extract<Fault, { kind: K }>
      : undefined;
  }

  /** Ends pending slow faults (on server close). */
  abortPending(): void {
    this.#closing.abort();
  }

  /** Picks (and counts) the fault for a request, if any. */
  take(request: Request): Fault | undefined {
    const { method, path } = this.#routeOf(request);
    const rule = this.#rules.find((candidate) =>
      candidate.matches(method, path)
    );
    if (rule === undefined) return undefined;
    rule.remaining--;
    rule.hits++;
    if (rule.remaining <= 0) this.remove(rule);
    this.#hits.push({
      kind: rule.rule.fault.kind,
      method,
      path,
      at: Date.now(),
    });
    return rule.rule.fault;
  }

  /**
   * Wraps a handler so that the faults apply to its answers.
   *
   * @param handler The real handler.
   * @returns A handler for `Deno.serve`.
   */
  wrap<I>(
    handler: (request: Request, info: I) => Response | Promise<Response>,
  ): (request: Request, info?: I) => Promise<Response> {
    return async (request, maybeInfo) => {
      const info = maybeInfo as I;
      const fault = this.take(request);
      if (fault === undefined) return await handler(request, info);
      switch (fault.kind) {
        case "status": {
          let body = fault.body ?? this.#errorBody(fault.status);
          if (fault.echo) {
            const sent = (await request.text().catch(() => "")).slice(
              0,
              64 * 1024,
            );
            body = JSON.stringify({
              code: "ECHO",
              message: `${
                fault.echoed ?? ""
              } ${request.method} ${request.url} ${sent}`,
            });
          }
          await request.body?.cancel().catch(() => {});
          return new Response(body, {
            status: fault.status,
            headers: {
              "content-type": fault.contentType ?? "application/json",
              ...fault.headers,
            },
          });
        }
        case "slow":
          await sleep(
            fault.delayMs,
            [request.signal, this.#closing.signal],
            fault.until,
          );
          return await handler(request, info);
        case "ignore-range": {
          const headers = new Headers(request.headers);
          headers.delete("range");
          const stripped = new Request(request, { headers });
          return await handler(stripped, info);
        }
        default:
          if (HANDLER_KINDS.has(fault.kind)) {
            this.#serverFaults.set(request, fault);
            return await handler(request, info);
          }
          return applyToBody(fault, await handler(request, info));
      }
    };
  }
}

function sleep(
  ms: number,
  signals: readonly AbortSignal[],
  until?: Promise<unknown>,
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    until?.then(done, done);
    for (const signal of signals) {
      if (signal.aborted) return done();
      signal.addEventListener("abort", done);
    }
  });
}

/**
 * Reads a fault rule written for the command line:
 * `[METHOD] PATH KIND[:ARG] [xN]`, e.g. `GET /files/download reset:1000 x2`,
 * `POST /command status:503 x2`, `* /ping slow:5000`, `/command end-stream`.
 * ARG is the status (`status`), `afterBytes` (`reset`), `afterLines`
 * (`reset-stream`), `keepBytes` (`truncate`) or `delayMs` (`slow`).
 *
 * @param spec The rule as text.
 * @returns The rule.
 * @throws {SyntaxError} When the text is not a rule.
 *
 * @example Two injected 503s on one route
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { parseFaultSpec } from "./_faults.ts";
 *
 * assertEquals(parseFaultSpec("POST /command status:503 x2"), {
 *   method: "POST",
 *   path: "/command",
 *   fault: { kind: "status", status: 503 },
 *   times: 2,
 * });
 * ```
 */
export function parseFaultSpec(spec: string): FaultRule {
  const words = spec.trim().split(/\s+/);
  const fail = (reason: string): never => {
    throw new SyntaxError(`Cannot read the fault "${spec}": ${reason}`);
  };
  let method: string | undefined;
  if (words[0] !== undefined && !words[0].startsWith("/")) {
    method = words.shift();
  }
  const path = words.shift();
  if (path === undefined || !path.startsWith("/")) {
    fail("expected [METHOD] PATH KIND[:ARG] [xN]");
  }
  const kindWord = words.shift() ?? fail("the kind is missing");
  let times: number | undefined;
  if (words.length > 0) {
    const match = /^x(\d+)$/.exec(words.shift()!);
    if (match === null || words.length > 0) fail("expected xN at the end");
    times = Number(match![1]);
  }
  const [kind, arg] = kindWord.split(":", 2) as [string, string | undefined];
  const number = (name: string): number => {
    const value = Number(arg);
    if (arg === undefined || !Number.isInteger(value) || value < 0) {
      fail(`"${kind}" needs a whole number (${name}) after a colon`);
    }
    return value;
  };
  let fault: Fault;
  switch (kind) {
    case "status":
      fault = { kind, status: number("status") };
      break;
    case "reset":
      fault = arg === undefined
        ? { kind }
        : { kind, afterBytes: number("afterBytes") };
      break;
    case "reset-stream":
      fault = arg === undefined
        ? { kind }
        : { kind, afterLines: number("afterLines") };
      break;
    case "truncate":
      fault = arg === undefined
        ? { kind }
        : { kind, keepBytes: number("keepBytes") };
      break;
    case "slow":
      fault = { kind, delayMs: number("delayMs") };
      break;
    case "invalid-json":
    case "end-stream":
    case "ignore-range":
    case "ignore-sigterm":
      fault = { kind };
      break;
    default:
      return fail(`unknown kind "${kind}"`);
  }
  return {
    ...(method === undefined || method === "*"
      ? {}
      : { method: method.toUpperCase() }),
    path: path!,
    fault,
    ...(times === undefined ? {} : { times }),
  };
}

/**
 * The command line for `bash -c` that runs `command` with SIGTERM ignored by
 * the shell and everything it starts (an ignored signal stays ignored across
 * `exec`), for the `ignore-sigterm` fault.
 *
 * @param command The command line.
 * @returns The command line that ignores SIGTERM.
 */
export function ignoreSigtermCommand(command: string): string {
  return `trap '' TERM\n${command}`;
}
