/**
 * The egress proxy: an HTTP proxy (absolute-form requests and `CONNECT`) on
 * a Unix socket of the host, the only way out of an isolated sandbox. Every
 * request is checked against the {@linkcode EgressPolicy} by host name; the
 * proxy resolves names itself and connects only to the address it checked,
 * refusing loopback, private, link-local and metadata addresses (a name the
 * user mapped with `resolve` excepted). A refusal answers `403` with a
 * one-line reason in the status line and the body. `CONNECT` to a host of a
 * secret is intercepted (TLS ended with a certificate of the runtime's own
 * authority, then verified TLS to the real host) and the secret's
 * placeholder is replaced by its value in the request's headers; every
 * other host is tunnelled untouched.
 *
 * @module
 */
import { forbiddenAddress } from "./addresses.ts";
import type { CertificateAuthority } from "./ca.ts";
import { isIPv4, isIPv6, normalizeHost } from "./policy.ts";
import type { CompiledSecret, EgressPolicy } from "./policy.ts";

/** One decision of the egress, as reported to the application. */
export interface NetworkEvent {
  /**
   * `connect`: a `CONNECT` tunnel, or the connection of a plain HTTP
   * request; `request`: one request inside an intercepted tunnel.
   */
  readonly kind: "connect" | "request";
  /** The host asked for (lower case). */
  readonly host: string;
  /** The port asked for. */
  readonly port: number;
  /** The request's method (`CONNECT` for tunnels). */
  readonly method: string;
  /** Whether it went out. */
  readonly allowed: boolean;
  /** Why, on one line. Never a secret value. */
  readonly reason: string;
  /** The address connected to, when allowed. */
  readonly address?: string;
  /** Whether the tunnel is intercepted to inject secrets. */
  readonly intercepted: boolean;
  /** The names of the secrets injected into this request (never values). */
  readonly secrets: readonly string[];
}

/** Options of {@linkcode EgressProxy.start}. */
export interface EgressProxyOptions {
  /** The policy. */
  readonly policy: EgressPolicy;
  /** Where the Unix socket is made. */
  readonly socketPath: string;
  /** Also listen on this TCP address of the host (for tests and benches). */
  readonly tcp?: { readonly hostname: string; readonly port: number };
  /** Told of every decision (errors it throws are ignored). */
  readonly onNetwork?: (event: NetworkEvent) => void;
  /** The authority signing intercepted hosts' certificates (needed with secrets). */
  readonly authority?: CertificateAuthority;
  /** Placeholders by secret name (needed with secrets). */
  readonly placeholders?: Readonly<Record<string, string>>;
  /** Further roots trusted for the real hosts of intercepted tunnels. */
  readonly upstreamCaCerts?: readonly string[];
  /**
   * Resolves a name instead of DNS (`Deno.resolveDns`, A and AAAA): its
   * answers are checked like DNS answers (unlike the policy's `resolve`).
   */
  readonly lookup?: (host: string) => Promise<readonly string[]>;
  /** How long a connection to a real host may take. Default 15 s. */
  readonly connectTimeoutMs?: number;
}

const MAX_HEAD_BYTES = 64 * 1024;
/**
 * The largest copy buffer: 1 MiB. A read from a TCP socket returns up to
 * about that much on a fast download (a Unix socket's, about 210 KiB
 * whatever the buffer), so a bulk transfer takes a quarter of the reads and
 * writes of a 256 KiB buffer; only a direction that fills its buffer grows.
 */
const BUFFER_BYTES = 1024 * 1024;
const FIRST_BUFFER_BYTES = 16 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A refusal: the status and the one-line reason. */
class Refusal extends Error {
  constructor(readonly status: number, reason: string) {
    super(reason);
  }
}

interface Head {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  readonly headers: [string, string][];
  /** Bytes read after the head. */
  readonly rest: Uint8Array;
}

type Stream = Deno.Conn | Deno.TlsConn;

/** How long a client may take to send a request head: 30 s. */
const HEAD_TIMEOUT_MS = 30_000;

/** Reads a request head; the connection is closed when it takes too long. */
async function readHead(conn: Stream): Promise<Head | null> {
  const timer = setTimeout(() => closeQuietly(conn), HEAD_TIMEOUT_MS);
  try {
    return await readHeadNow(conn);
  } finally {
    clearTimeout(timer);
  }
}

async function readHeadNow(conn: Stream): Promise<Head | null> {
  let data = new Uint8Array(0);
  const chunk = new Uint8Array(16 * 1024);
  while (true) {
    const end = findHeadEnd(data);
    if (end !== -1) {
      const text = decoder.decode(data.subarray(0, end));
      const lines = text.split("\r\n");
      const [method, target, version] = lines[0]!.split(" ");
      if (!method || !target || !version?.startsWith("HTTP/1.")) {
        throw new Refusal(400, "the request line is not HTTP/1.x");
      }
      const headers: [string, string][] = [];
      for (const line of lines.slice(1)) {
        if (line === "") continue;
        const colon = line.indexOf(":");
        if (colon <= 0) throw new Refusal(400, "a header line has no name");
        headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
      }
      return { method, target, version, headers, rest: data.slice(end + 4) };
    }
    if (data.length > MAX_HEAD_BYTES) {
      throw new Refusal(431, "the request head is over 64 KiB");
    }
    const n = await conn.read(chunk);
    if (n === null) {
      if (data.length === 0) return null;
      throw new Refusal(400, "the connection ended inside the request head");
    }
    const next = new Uint8Array(data.length + n);
    next.set(data);
    next.set(chunk.subarray(0, n), data.length);
    data = next;
  }
}

function findHeadEnd(data: Uint8Array): number {
  for (let i = 0; i + 3 < data.length; i++) {
    if (
      data[i] === 13 && data[i + 1] === 10 && data[i + 2] === 13 &&
      data[i + 3] === 10
    ) return i;
  }
  return -1;
}

async function writeAll(conn: Stream, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/**
 * Copies one direction; half-closes the other side at the end. The buffer
 * starts small (most connections carry a few KiB) and grows to
 * {@linkcode BUFFER_BYTES} once a read fills it.
 */
async function pump(from: Stream, to: Stream): Promise<boolean> {
  let buf = new Uint8Array(FIRST_BUFFER_BYTES);
  try {
    while (true) {
      const n = await from.read(buf);
      if (n === null) break;
      await writeAll(to, buf.subarray(0, n));
      if (n === buf.length && buf.length < BUFFER_BYTES) {
        buf = new Uint8Array(BUFFER_BYTES);
      }
    }
  } catch {
    return false;
  }
  try {
    await to.closeWrite();
  } catch {
    return false;
  }
  return true;
}

function closeQuietly(...conns: (Stream | undefined)[]): void {
  for (const conn of conns) {
    try {
      conn?.close();
    } catch {
      // Already closed.
    }
  }
}

/** Joins two streams until both directions end (or one fails). */
async function splice(a: Stream, b: Stream): Promise<void> {
  const fail = () => closeQuietly(a, b);
  await Promise.all([
    pump(a, b).then((ok) => ok || fail()),
    pump(b, a).then((ok) => ok || fail()),
  ]);
  closeQuietly(a, b);
}

function oneLine(text: string): string {
  return text.replace(/[^\x20-\x7e]+/g, " ").slice(0, 400);
}

async function refuse(conn: Stream, refusal: Refusal): Promise<void> {
  const reason = oneLine(refusal.message);
  const body = `skillrun egress: ${reason}\n`;
  const phrase = refusal.status === 403
    ? `Forbidden by skillrun egress: ${reason}`
    : `${refusal.status === 502 ? "Bad Gateway" : "Bad Request"}: ${reason}`;
  try {
    await writeAll(
      conn,
      encoder.encode(
        `HTTP/1.1 ${refusal.status} ${phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${
          encoder.encode(body).length
        }\r\nConnection: close\r\nX-Skillrun-Egress: refused\r\n\r\n${body}`,
      ),
    );
  } catch {
    // The client went away.
  }
}

/** A host and port parsed from a CONNECT target or a URL. */
function splitAuthority(authority: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(authority);
  if (!m) {
    throw new Refusal(400, `"${oneLine(authority)}" is not host:port`);
  }
  const port = Number(m[2]);
  if (port < 1 || port > 65535) {
    throw new Refusal(400, `the port ${port} is not valid`);
  }
  return { host: normalizeHost(m[1]!), port };
}

interface Target {
  readonly host: string;
  readonly port: number;
  readonly address: string;
}

interface Pending {
  readonly target: Target;
  readonly upstream: Deno.TcpConn;
  readonly secrets: readonly CompiledSecret[];
}

/**
 * The egress proxy. Start one with {@linkcode EgressProxy.start}; the
 * isolated launcher does, when given a network policy or secrets.
 *
 * Permissions: `--allow-net` (resolve names, connect to allowed hosts),
 * `--allow-read` and `--allow-write` of the socket's folder.
 *
 * @example Refusing a host that is not allowed
 * ```ts
 * import { assert } from "@std/assert";
 * import { EgressPolicy } from "./policy.ts";
 * import { EgressProxy } from "./proxy.ts";
 * const dir = await Deno.makeTempDir();
 * const events: string[] = [];
 * const proxy = await EgressProxy.start({
 *   policy: EgressPolicy.create({ network: { allow: ["example.com"] } }),
 *   socketPath: `${dir}/proxy.sock`,
 *   onNetwork: (e) => events.push(e.reason),
 * });
 * const conn = await Deno.connect({ transport: "unix", path: proxy.socketPath });
 * await conn.write(new TextEncoder().encode("CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n"));
 * const answer = new TextDecoder().decode(
 *   (await new Response(conn.readable).bytes()),
 * );
 * assert(answer.startsWith("HTTP/1.1 403"));
 * assert(events[0] === "evil.test is not in the allowed hosts");
 * await proxy.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class EgressProxy {
  /** The Unix socket clients connect to. */
  readonly socketPath: string;
  readonly #options: EgressProxyOptions;
  readonly #listeners: Deno.Listener[] = [];
  readonly #conns = new Set<Stream>();
  /**
   * The TLS listener of each intercepted host, open while a tunnel to it is
   * (Deno 2.9's `TlsListener.unref()` does not let the program end, so an
   * idle one is closed rather than kept).
   */
  readonly #interceptors = new Map<
    string,
    { listener: Promise<Deno.TlsListener>; active: number }
  >();
  readonly #pending = new Map<number, Pending>();
  readonly #waiting = new Map<number, (pending: Pending | undefined) => void>();
  #closed = false;

  private constructor(options: EgressProxyOptions) {
    this.#options = options;
    this.socketPath = options.socketPath;
  }

  /**
   * Starts the proxy on its Unix socket (and TCP address, when given).
   *
   * @param options The policy, the socket, the callback.
   * @returns The running proxy.
   * @throws {Error} The socket cannot be made, or secrets without an
   * authority and placeholders.
   */
  static start(options: EgressProxyOptions): Promise<EgressProxy> {
    if (
      options.policy.secrets.length > 0 &&
      (!options.authority || !options.placeholders)
    ) {
      throw new Error(
        "Cannot start the egress proxy: secrets need an authority and placeholders",
      );
    }
    const proxy = new EgressProxy(options);
    const unix = Deno.listen({ transport: "unix", path: options.socketPath });
    proxy.#serve(unix);
    if (options.tcp) {
      proxy.#serve(Deno.listen({ ...options.tcp, transport: "tcp" }));
    }
    return Promise.resolve(proxy);
  }

  /** The TCP address, when asked for. */
  get tcpAddress(): Deno.NetAddr | undefined {
    const tcp = this.#listeners.find((l) => l.addr.transport === "tcp");
    return tcp?.addr as Deno.NetAddr | undefined;
  }

  /** Stops listening and closes every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of this.#listeners) closeQuietly(listener as never);
    for (const interceptor of this.#interceptors.values()) {
      interceptor.listener.then((l) => closeQuietly(l as never), () => {});
    }
    this.#interceptors.clear();
    for (const conn of this.#conns) closeQuietly(conn);
    for (const pending of this.#pending.values()) {
      closeQuietly(pending.upstream);
    }
    this.#pending.clear();
    await Promise.resolve();
  }

  #serve(listener: Deno.Listener): void {
    this.#listeners.push(listener);
    // A forgotten runtime does not keep the program alive.
    listener.unref();
    (async () => {
      try {
        for await (const conn of listener) {
          if (conn.localAddr.transport === "tcp") {
            (conn as Deno.TcpConn).setNoDelay(true);
          }
          this.#track(conn);
          this.#handle(conn).catch(() => {}).finally(() => {
            this.#conns.delete(conn);
            closeQuietly(conn);
          });
        }
      } catch {
        // Closed.
      }
    })();
  }

  #track(conn: Stream): void {
    this.#conns.add(conn);
  }

  #report(event: NetworkEvent): void {
    try {
      this.#options.onNetwork?.(event);
    } catch {
      // The application's callback does not stop the proxy.
    }
  }

  /** Reports a refused connection and answers the client with its status. */
  async #refuseConnect(
    client: Deno.Conn,
    error: unknown,
    host: string,
    port: number,
    method: string,
  ): Promise<void> {
    const refusal = error instanceof Refusal
      ? error
      : new Refusal(502, String(error));
    this.#report({
      kind: "connect",
      host,
      port,
      method,
      allowed: false,
      reason: oneLine(refusal.message),
      intercepted: false,
      secrets: [],
    });
    return await refuse(client, refusal);
  }

  /** Reports an allowed connection to `target`. */
  #reportConnect(
    host: string,
    port: number,
    method: string,
    target: Target,
    intercepted: boolean,
  ): void {
    this.#report({
      kind: "connect",
      host,
      port,
      method,
      allowed: true,
      reason: this.#options.policy.decide(host, port).reason,
      address: target.address,
      intercepted,
      secrets: [],
    });
  }

  async #handle(client: Deno.Conn): Promise<void> {
    let head: Head | null;
    try {
      head = await readHead(client);
    } catch (error) {
      if (error instanceof Refusal) await refuse(client, error);
      return;
    }
    if (head === null) return;
    if (head.method === "CONNECT") return await this.#connect(client, head);
    return await this.#forward(client, head);
  }

  /** Checks the policy and resolves; throws a {@linkcode Refusal}. */
  async #check(host: string, port: number): Promise<Target> {
    const decision = this.#options.policy.decide(host, port);
    if (!decision.allowed) throw new Refusal(403, decision.reason);
    const address = await this.#resolve(host);
    return { host, port, address };
  }

  async #resolve(host: string): Promise<string> {
    const fixed = this.#options.policy.resolve.get(host);
    if (fixed !== undefined) return fixed;
    if (isIPv4(host) || isIPv6(host)) {
      const why = forbiddenAddress(host);
      if (why) throw new Refusal(403, `${host} is ${why}`);
      return host;
    }
    const lookup = this.#options.lookup;
    const answers = lookup
      ? [
        await lookup(host).then(
          (value) => ({ status: "fulfilled" as const, value: [...value] }),
          (reason) => ({ status: "rejected" as const, reason }),
        ),
      ]
      : await Promise.allSettled([
        Deno.resolveDns(host, "A"),
        Deno.resolveDns(host, "AAAA"),
      ]);
    const addresses = answers.flatMap((a) =>
      a.status === "fulfilled" ? a.value : []
    );
    if (addresses.length === 0) {
      const error = answers.find((a) => a.status === "rejected") as
        | PromiseRejectedResult
        | undefined;
      throw new Refusal(
        502,
        `${host} cannot be resolved${
          error
            ? `: ${oneLine(String(error.reason?.message ?? error.reason))}`
            : ""
        }`,
      );
    }
    const usable = addresses.find((a) => forbiddenAddress(a) === undefined);
    if (usable === undefined) {
      throw new Refusal(
        403,
        `${host} resolves to ${addresses[0]}, ${
          forbiddenAddress(addresses[0]!)
        }`,
      );
    }
    return usable;
  }

  async #dial(target: Target): Promise<Deno.TcpConn> {
    const signal = AbortSignal.timeout(
      this.#options.connectTimeoutMs ?? 15_000,
    );
    try {
      const conn = await Deno.connect({
        hostname: target.address,
        port: target.port,
        signal,
      });
      // Small writes (a head, then a body) go out at once, not after an ACK.
      conn.setNoDelay(true);
      return conn;
    } catch (error) {
      throw new Refusal(
        502,
        `cannot connect to ${target.host}:${target.port} (${target.address}): ${
          signal.aborted
            ? "timed out"
            : oneLine(error instanceof Error ? error.message : String(error))
        }`,
      );
    }
  }

  async #connect(client: Deno.Conn, head: Head): Promise<void> {
    let target: Target | undefined;
    let upstream: Deno.TcpConn | undefined;
    let host = "";
    let port = 0;
    const secrets: CompiledSecret[] = [];
    try {
      ({ host, port } = splitAuthority(head.target));
      target = await this.#check(host, port);
      secrets.push(...this.#options.policy.secretsFor(host));
      upstream = await this.#dial(target);
    } catch (error) {
      return await this.#refuseConnect(client, error, host, port, "CONNECT");
    }
    const intercepted = secrets.length > 0;
    this.#reportConnect(host, port, "CONNECT", target, intercepted);
    this.#track(upstream);
    try {
      await writeAll(
        client,
        encoder.encode("HTTP/1.1 200 Connection established\r\n\r\n"),
      );
      if (head.rest.length > 0) await writeAll(upstream, head.rest);
      if (!intercepted) return await splice(client, upstream);
      // Intercepted: the client's TLS ends at our listener for this host.
      const interceptor = this.#interceptor(host);
      interceptor.active++;
      try {
        const listener = await interceptor.listener;
        const inner = await Deno.connect({
          hostname: "127.0.0.1",
          port: (listener.addr as Deno.NetAddr).port,
        });
        inner.setNoDelay(true);
        this.#track(inner);
        this.#handOver((inner.localAddr as Deno.NetAddr).port, {
          target,
          upstream,
          secrets,
        });
        upstream = undefined; // the interceptor owns it now
        await splice(client, inner);
        this.#conns.delete(inner);
      } finally {
        if (
          --interceptor.active === 0 &&
          this.#interceptors.get(host) === interceptor
        ) {
          this.#interceptors.delete(host);
          interceptor.listener.then((l) => closeQuietly(l as never), () => {});
        }
      }
    } finally {
      if (upstream) {
        this.#conns.delete(upstream);
        closeQuietly(upstream);
      }
    }
  }

  /** Gives an upstream connection to the interceptor's next accept from `port`. */
  #handOver(port: number, pending: Pending): void {
    const waiter = this.#waiting.get(port);
    if (waiter) {
      this.#waiting.delete(port);
      waiter(pending);
    } else this.#pending.set(port, pending);
  }

  /** The upstream of a connection from `port` (it may be accepted first). */
  #claim(port: number): Promise<Pending | undefined> {
    const pending = this.#pending.get(port);
    if (pending) {
      this.#pending.delete(port);
      return Promise.resolve(pending);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(port);
        resolve(undefined);
      }, 2000);
      this.#waiting.set(port, (p) => {
        clearTimeout(timer);
        resolve(p);
      });
    });
  }

  #interceptor(
    host: string,
  ): { listener: Promise<Deno.TlsListener>; active: number } {
    let interceptor = this.#interceptors.get(host);
    if (!interceptor) {
      const listener = this.#options.authority!.issue(host).then((issued) => {
        const l = Deno.listenTls({
          hostname: "127.0.0.1",
          port: 0,
          cert: issued.cert,
          key: issued.key,
          alpnProtocols: ["http/1.1"],
        });
        this.#acceptIntercepted(l);
        return l;
      });
      interceptor = { listener, active: 0 };
      this.#interceptors.set(host, interceptor);
    }
    return interceptor;
  }

  #acceptIntercepted(listener: Deno.TlsListener): void {
    (async () => {
      try {
        for await (const conn of listener) {
          this.#track(conn);
          this.#claim((conn.remoteAddr as Deno.NetAddr).port).then(
            async (pending) => {
              // Only the proxy's own connections: another local program
              // gets nothing.
              if (!pending) return;
              try {
                await this.#intercept(conn, pending);
              } finally {
                this.#conns.delete(pending.upstream);
                closeQuietly(pending.upstream);
              }
            },
          ).catch(() => {}).finally(() => {
            this.#conns.delete(conn);
            closeQuietly(conn);
          });
        }
      } catch {
        // Closed.
      }
    })();
  }

  async #intercept(client: Deno.TlsConn, pending: Pending): Promise<void> {
    const { target, secrets } = pending;
    const head = await readHead(client).catch(async (error) => {
      if (error instanceof Refusal) await refuse(client, error);
      return null;
    });
    if (head === null) return;
    let upstream: Deno.TlsConn;
    try {
      upstream = await Deno.startTls(pending.upstream, {
        hostname: target.host,
        alpnProtocols: ["http/1.1"],
        ...(this.#options.upstreamCaCerts
          ? { caCerts: [...this.#options.upstreamCaCerts] }
          : {}),
      });
      await upstream.handshake();
    } catch (error) {
      const reason = `TLS to ${target.host}:${target.port} failed: ${
        oneLine(error instanceof Error ? error.message : String(error))
      }`;
      this.#report({
        kind: "request",
        host: target.host,
        port: target.port,
        method: head.method,
        allowed: false,
        reason,
        address: target.address,
        intercepted: true,
        secrets: [],
      });
      return await refuse(client, new Refusal(502, reason));
    }
    this.#track(upstream);
    const injected = new Set<string>();
    const placeholders = this.#options.placeholders!;
    const lines = [`${head.method} ${head.target} ${head.version}`];
    for (const [name, value] of head.headers) {
      const lower = name.toLowerCase();
      if (lower === "connection" || lower.startsWith("proxy-")) continue;
      let v = value;
      for (const secret of secrets) {
        const placeholder = placeholders[secret.name]!;
        if (v.includes(placeholder)) {
          v = v.replaceAll(placeholder, secret.value);
          injected.add(secret.name);
        }
      }
      lines.push(`${name}: ${v}`);
    }
    lines.push("Connection: close", "", "");
    this.#report({
      kind: "request",
      host: target.host,
      port: target.port,
      method: head.method,
      allowed: true,
      reason: injected.size > 0
        ? `secrets injected for ${target.host}: ${[...injected].join(", ")}`
        : `intercepted for secrets; none used`,
      address: target.address,
      intercepted: true,
      secrets: [...injected],
    });
    try {
      await writeAll(upstream, encoder.encode(lines.join("\r\n")));
      if (head.rest.length > 0) await writeAll(upstream, head.rest);
      await splice(client, upstream);
    } finally {
      this.#conns.delete(upstream);
      closeQuietly(upstream);
    }
  }

  /** A plain HTTP request in absolute form. */
  async #forward(client: Deno.Conn, head: Head): Promise<void> {
    let url: URL;
    let host = "";
    let port = 0;
    let target: Target;
    let upstream: Deno.Conn;
    try {
      if (!/^http:\/\//i.test(head.target)) {
        throw new Refusal(
          400,
          /^https:\/\//i.test(head.target)
            ? "https:// URLs go through CONNECT"
            : "this is an HTTP proxy: send absolute http:// URLs or CONNECT",
        );
      }
      try {
        url = new URL(head.target);
      } catch {
        throw new Refusal(400, `"${oneLine(head.target)}" is not a URL`);
      }
      if (url.username || url.password) {
        throw new Refusal(400, "credentials in the URL are not forwarded");
      }
      host = normalizeHost(url.hostname);
      port = url.port ? Number(url.port) : 80;
      target = await this.#check(host, port);
      upstream = await this.#dial(target);
    } catch (error) {
      return await this.#refuseConnect(client, error, host, port, head.method);
    }
    this.#reportConnect(host, port, head.method, target, false);
    this.#track(upstream);
    try {
      const lines = [
        `${head.method} ${url.pathname}${url.search} ${head.version}`,
        `Host: ${url.host}`,
      ];
      for (const [name, value] of head.headers) {
        const lower = name.toLowerCase();
        if (
          lower === "host" || lower === "connection" ||
          lower.startsWith("proxy-") || lower === "keep-alive"
        ) continue;
        lines.push(`${name}: ${value}`);
      }
      lines.push("Connection: close", "", "");
      await writeAll(upstream, encoder.encode(lines.join("\r\n")));
      if (head.rest.length > 0) await writeAll(upstream, head.rest);
      await splice(client, upstream);
    } finally {
      this.#conns.delete(upstream);
      closeQuietly(upstream);
    }
  }
}
