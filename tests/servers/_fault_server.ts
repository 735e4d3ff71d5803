/**
 * A `Deno.serve` listener on loopback with a fault injector (`_faults.ts`) in
 * front of its handler, that can refuse connections and accept them again
 * on the same port, and serve `/__faults` to switch faults while it runs;
 * and an address nothing listens on.
 *
 * @module
 */
import { FaultInjector, type FaultRule, parseFaultSpec } from "./_faults.ts";

/** Options of {@linkcode serveWithFaults}. */
export interface ServeWithFaultsOptions {
  /** The real handler. */
  handler: (request: Request) => Response | Promise<Response>;
  /** The injector; default a new one. */
  faults?: FaultInjector;
  /** Port; default 0 (any free port). */
  port?: number;
  /** Host name; default `127.0.0.1`. */
  hostname?: string;
  /**
   * Serve `GET/POST/DELETE /__faults` to inspect, add (JSON rule or
   * `{"spec": "..."}`) and clear rules while running; default off.
   */
  control?: boolean;
}

/** A server with faults, as {@linkcode serveWithFaults} returns it. */
export interface FaultServer extends AsyncDisposable {
  /** `http://host:port` (no final slash). */
  readonly url: string;
  /** The port. */
  readonly port: number;
  /** The injector. */
  readonly faults: FaultInjector;
  /** Whether the listener is closed by {@linkcode refuseConnections}. */
  readonly refusing: boolean;
  /** Closes the listener: new connections are refused until {@linkcode acceptConnections}. */
  refuseConnections(): Promise<void>;
  /** Listens again on the same port. */
  acceptConnections(): Promise<void>;
  /** Stops serving (idempotent). */
  close(): Promise<void>;
}

/**
 * Serves a handler with a fault injector in front, on loopback.
 *
 * @param options The handler, the injector and where to listen.
 * @returns The running server.
 *
 * @example A refused connection, then service again on the same port
 * ```ts
 * import { assertEquals, assertRejects } from "@std/assert";
 * import { serveWithFaults } from "./_fault_server.ts";
 *
 * await using server = serveWithFaults({ handler: () => new Response("ok") });
 * await server.refuseConnections();
 * await assertRejects(() => fetch(server.url));
 * await server.acceptConnections();
 * assertEquals(await (await fetch(server.url)).text(), "ok");
 * ```
 */
export function serveWithFaults(options: ServeWithFaultsOptions): FaultServer {
  const faults = options.faults ?? new FaultInjector();
  const hostname = options.hostname ?? "127.0.0.1";
  const wrapped = faults.wrap(options.handler);
  const handler = options.control
    ? (request: Request) => {
      const path = new URL(request.url).pathname;
      return path === "/__faults" ? control(faults, request) : wrapped(request);
    }
    : (request: Request) => wrapped(request);
  const listen = (port: number): Deno.HttpServer<Deno.NetAddr> =>
    Deno.serve({ port, hostname, onListen() {} }, handler);
  let server: Deno.HttpServer<Deno.NetAddr> | undefined = listen(
    options.port ?? 0,
  );
  const port = server.addr.port;
  const url = `http://${
    hostname.includes(":") ? `[${hostname}]` : hostname
  }:${port}`;
  let closed = false;
  const stop = async (): Promise<void> => {
    const current = server;
    server = undefined;
    if (current !== undefined) await current.shutdown();
  };
  const result: FaultServer = {
    url,
    port,
    faults,
    get refusing() {
      return server === undefined && !closed;
    },
    refuseConnections: stop,
    acceptConnections() {
      if (closed) {
        return Promise.reject(
          new Error("Cannot accept connections: the server is closed"),
        );
      }
      server ??= listen(port);
      return Promise.resolve();
    },
    async close() {
      if (closed) return;
      closed = true;
      faults.abortPending();
      await stop();
    },
    [Symbol.asyncDispose]() {
      return result.close();
    },
  };
  return result;
}

async function control(
  faults: FaultInjector,
  request: Request,
): Promise<Response> {
  const json = (value: unknown, status = 200) =>
    new Response(JSON.stringify(value, null, 2) + "\n", {
      status,
      headers: { "content-type": "application/json" },
    });
  switch (request.method) {
    case "GET":
      return json({
        rules: faults.rules.map((rule) => ({
          ...rule.rule,
          path: String(rule.rule.path ?? "*"),
          remaining: rule.remaining === Infinity ? null : rule.remaining,
          hits: rule.hits,
        })),
        hits: faults.hits,
      });
    case "POST": {
      try {
        const body = await request.json() as { spec?: string } & FaultRule;
        const rule = typeof body.spec === "string"
          ? parseFaultSpec(body.spec)
          : body;
        faults.add(rule);
        return json({ added: rule });
      } catch (error) {
        return json(
          { code: "INVALID_REQUEST_BODY", message: String(error) },
          400,
        );
      }
    }
    case "DELETE":
      faults.clear();
      return json({ cleared: true });
    default:
      return new Response("405 method not allowed", { status: 405 });
  }
}

/**
 * A loopback URL where nothing listens (a port taken and released), for
 * refused connections.
 *
 * @returns `http://127.0.0.1:<port>`.
 */
export function unusedUrl(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return `http://127.0.0.1:${port}`;
}
