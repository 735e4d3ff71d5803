/**
 * Loopback servers for the tests of `runtimes/remote/`: a `Deno.serve` one
 * that counts its requests, and a raw TCP one that writes exactly the bytes a
 * test wants (short bodies, dropped connections).
 *
 * @module
 */

/** A running loopback server. */
export interface TestServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Requests (or connections, for the raw server) seen so far. */
  readonly count: () => number;
}

/**
 * Serves `handler` with `Deno.serve` on a free loopback port.
 *
 * @param handler Answers each request; gets its 0-based index.
 * @returns The server.
 */
export function serve(
  handler: (request: Request, index: number) => Response | Promise<Response>,
): TestServer {
  let count = 0;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request) => handler(request, count++),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    count: () => count,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** A request as the raw server read it. */
export interface RawRequest {
  /** The method. */
  readonly method: string;
  /** The path with the query. */
  readonly target: string;
  /** Header names in lower case. */
  readonly headers: Headers;
}

/**
 * A raw HTTP/1.1 server: reads one request head per connection, lets the
 * handler write whatever it likes on the connection, then closes it.
 *
 * @param handler Writes the answer; gets the connection's 0-based index.
 * @returns The server.
 */
export function serveRaw(
  handler: (
    request: RawRequest,
    conn: Deno.Conn,
    index: number,
  ) => Promise<void>,
): TestServer {
  const listener = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  let count = 0;
  const open = new Set<Promise<void>>();
  const conns = new Set<Deno.Conn>();
  const loop = (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return;
      }
      const index = count++;
      conns.add(conn);
      const task = (async () => {
        try {
          const request = await readHead(conn);
          if (request) await handler(request, conn, index);
        } catch {
          // the client went away
        } finally {
          conns.delete(conn);
          try {
            conn.close();
          } catch {
            // closed already
          }
        }
      })();
      open.add(task);
      task.finally(() => open.delete(task));
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    count: () => count,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // closed already
        }
      }
      await loop;
      await Promise.allSettled([...open]);
    },
  };
}

/** Writes a whole string or byte array. */
export async function writeAll(
  conn: Deno.Conn,
  data: string | Uint8Array,
): Promise<void> {
  let bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  while (bytes.length > 0) {
    const written = await conn.write(bytes);
    bytes = bytes.subarray(written);
  }
}

async function readHead(conn: Deno.Conn): Promise<RawRequest | null> {
  const decoder = new TextDecoder();
  let text = "";
  const buffer = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n")) {
    const read = await conn.read(buffer);
    if (read === null) return null;
    text += decoder.decode(buffer.subarray(0, read));
  }
  const [head] = text.split("\r\n\r\n");
  const [line, ...lines] = head!.split("\r\n");
  const [method, target] = line!.split(" ");
  const headers = new Headers();
  for (const header of lines) {
    const colon = header.indexOf(":");
    if (colon > 0) {
      headers.append(header.slice(0, colon), header.slice(colon + 1).trim());
    }
  }
  return { method: method!, target: target!, headers };
}
