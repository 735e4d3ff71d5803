/**
 * One Deno Sandbox connection: the WebSocket JSON-RPC 2.0 of the service
 * (text frames, ids from 0, every `result` an `{ok}` or `{error}`), its
 * stream notifications in both directions and the `ping` it expects every
 * 2 s. Deno's own `WebSocket` (its `headers` option carries the token and
 * the creation's configuration).
 *
 * @module
 */

/** An error the Deno Sandbox service gave (its own, not a file-system one). */
export class DenoSandboxError extends Error {
  /** The error's name. */
  override readonly name = "DenoSandboxError";
  /** The service's code, when it gave one. */
  readonly code: string | undefined;

  /**
   * Makes the error.
   *
   * @param message What failed.
   * @param code The service's code.
   */
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/**
 * A serialized error (`{constructorName, message, code?}`) as an `Error`:
 * one of `Deno.errors` when it names one (`NotFound`, ...), as the SDK does.
 */
function rebuilt(value: unknown, method: string): Error {
  const e = (value ?? {}) as Record<string, unknown>;
  const message = `${method}: ${String(e.message ?? "failed")}`;
  const code = typeof e.code === "string" ? e.code : undefined;
  const known = (Deno.errors as Record<string, unknown>)[
    String(e.constructorName)
  ];
  if (typeof known !== "function") return new DenoSandboxError(message, code);
  const error = new (known as new (message: string) => Error)(message);
  return code ? Object.assign(error, { code }) : error;
}

/** A stream the server sends (command output). */
interface Incoming {
  readonly chunks: Uint8Array[];
  done: boolean;
  error?: Error;
  wake?: () => void;
}

/** One open WebSocket to a sandbox. */
export class SandboxSocket {
  readonly #ws: WebSocket;
  readonly #pending = new Map<
    number,
    {
      resolve: (v: unknown) => void;
      reject: (e: Error) => void;
      method: string;
    }
  >();
  readonly #incoming = new Map<number, Incoming>();
  #nextId = 0;
  #nextStream = 1;
  #closed: Error | undefined;
  readonly #ping: ReturnType<typeof setInterval>;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (event) => this.#receive(String(event.data));
    ws.onclose = () =>
      this.#fail(new DenoSandboxError("the sandbox connection closed"));
    this.#ping = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, 2_000);
  }

  /**
   * Opens a connection and waits until it is open.
   *
   * @param url The `ws(s)://` URL.
   * @param headers The upgrade's headers.
   * @param timeoutMs The longest wait.
   * @returns The connection.
   * @throws {DenoSandboxError} The upgrade failed.
   */
  static open(
    url: string,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<SandboxSocket> {
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve, reject) => {
      const fail = () => {
        clearTimeout(timer);
        ws.onopen = ws.onerror = ws.onclose = null;
        try {
          ws.close();
        } catch { /* closed */ }
        reject(
          new DenoSandboxError(
            `Cannot connect to ${
              url.replace(/\?.*$/, "")
            }: the upgrade was refused or failed`,
          ),
        );
      };
      const timer = setTimeout(fail, timeoutMs);
      ws.onerror = fail;
      ws.onclose = fail;
      ws.onopen = () => {
        clearTimeout(timer);
        ws.onerror = null;
        resolve(new SandboxSocket(ws));
      };
    });
  }

  /** Whether the connection is gone. */
  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /**
   * Calls a method; its `{ok}` value, or its `{error}` thrown.
   *
   * @param method The method.
   * @param params Its parameters (unset options left out).
   * @param signal Stops waiting.
   * @returns The `ok` value.
   */
  call(
    method: string,
    params: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    const answer = new Promise<unknown>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method });
    });
    this.#ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    if (!signal) return answer;
    return new Promise((resolve, reject) => {
      const abort = () => {
        this.#pending.delete(id);
        reject(signal.reason);
      };
      if (signal.aborted) return abort();
      signal.addEventListener("abort", abort, { once: true });
      answer.then(resolve, reject).finally(() =>
        signal.removeEventListener("abort", abort)
      );
    });
  }

  /**
   * A server stream's bytes (command output), from its first chunk.
   *
   * @param streamId The stream.
   * @param signal Stops reading.
   */
  async *read(
    streamId: number,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    const stream = this.#stream(streamId);
    const abort = () => stream.wake?.();
    signal?.addEventListener("abort", abort);
    try {
      while (true) {
        if (stream.chunks.length > 0) {
          yield stream.chunks.shift()!;
          continue;
        }
        if (stream.error) throw stream.error;
        if (stream.done) return;
        signal?.throwIfAborted();
        await new Promise<void>((resolve) => stream.wake = resolve);
      }
    } finally {
      signal?.removeEventListener("abort", abort);
      this.#incoming.delete(streamId);
    }
  }

  /**
   * Sends bytes as a stream of this client and returns its id; the stream
   * starts before the id is returned (the request naming it follows).
   *
   * @param chunks The bytes.
   * @returns The stream's id and the sending (resolves once all is sent).
   */
  send(
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  ): { streamId: number; sent: Promise<void> } {
    const streamId = this.#nextStream++;
    this.#notify("$sandbox.stream.start", { streamId });
    const sent = (async () => {
      for await (const chunk of chunks) {
        if (this.#closed) throw this.#closed;
        while (this.#ws.bufferedAmount > 8 << 20) {
          await new Promise((r) => setTimeout(r, 5));
        }
        this.#notify("$sandbox.stream.enqueue", {
          streamId,
          data: chunk.toBase64(),
        });
      }
      this.#notify("$sandbox.stream.end", { streamId });
    })();
    return { streamId, sent };
  }

  /** Closes the connection (pending calls fail). */
  close(): void {
    this.#fail(new DenoSandboxError("the sandbox connection was closed"));
    try {
      this.#ws.close();
    } catch { /* closed */ }
  }

  #notify(method: string, params: Record<string, unknown>): void {
    if (!this.#closed) {
      this.#ws.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
    }
  }

  #stream(id: number): Incoming {
    let stream = this.#incoming.get(id);
    if (!stream) this.#incoming.set(id, stream = { chunks: [], done: false });
    return stream;
  }

  #receive(text: string): void {
    if (text === "pong") return;
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text);
    } catch {
      this.#ws.close(4000, "Invalid JSON");
      return;
    }
    if (typeof message.id === "number" && message.method === undefined) {
      const call = this.#pending.get(message.id);
      if (!call) return;
      this.#pending.delete(message.id);
      const error = message.error as Record<string, unknown> | undefined;
      const result = message.result as Record<string, unknown> | undefined;
      if (error) {
        call.reject(
          new DenoSandboxError(
            `${call.method}: ${String(error.message ?? "protocol error")}`,
            String(error.code ?? ""),
          ),
        );
      } else if (result && "error" in result) {
        call.reject(rebuilt(result.error, call.method));
      } else call.resolve(result?.ok ?? null);
      return;
    }
    const params = (message.params ?? {}) as Record<string, unknown>;
    if (typeof params.streamId !== "number") return;
    const stream = this.#stream(params.streamId);
    if (message.method === "$sandbox.stream.enqueue") {
      stream.chunks.push(Uint8Array.fromBase64(String(params.data ?? "")));
    } else if (message.method === "$sandbox.stream.end") {
      stream.done = true;
    } else if (message.method === "$sandbox.stream.error") {
      stream.error = rebuilt(params.error, "stream");
    } else if (message.method !== "$sandbox.stream.start") return;
    stream.wake?.();
  }

  #fail(error: Error): void {
    if (this.#closed) return;
    this.#closed = error;
    clearInterval(this.#ping);
    for (const call of this.#pending.values()) call.reject(error);
    this.#pending.clear();
    for (const stream of this.#incoming.values()) {
      if (!stream.done) stream.error ??= error;
      stream.wake?.();
    }
  }
}
