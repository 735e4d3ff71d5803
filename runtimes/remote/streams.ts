/**
 * Stream plumbing the remote kinds share: a reader of JSON events sent as
 * lines (NDJSON) or as server-sent events (`data:` frames), a reader of the
 * Connect protocol's enveloped messages, and the byte stream helpers of
 * streamed uploads (a tar of files made while it is sent,
 * chunks gathered to a size, a file read to exactly its size).
 *
 * @module
 */
import { createTarPacker } from "modern-tar";
import type { RemoteUploadFile } from "./fs.ts";
import { TextLineStream } from "../../_internal/std.ts";

/**
 * Yields the JSON values of a stream in order: one per line (NDJSON, or an
 * event server that writes bare JSON lines), or one per server-sent event
 * (`data:` lines joined, sent at the blank line). Blank lines and the SSE
 * fields `:`, `event:`, `id:` and `retry:` are skipped; `\r\n` ends a line as
 * `\n` does. The body is read to its end; a broken connection rejects with
 * the stream's error.
 *
 * @example NDJSON and SSE framing alike
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { readJsonEvents } from "./streams.ts";
 * const text = '{"a":1}\n\ndata: {"a":2}\n\n{"a":3}';
 * const seen = [];
 * for await (const value of readJsonEvents(new Blob([text]).stream(), JSON.parse)) {
 *   seen.push(value.a);
 * }
 * assertEquals(seen, [1, 2, 3]);
 * ```
 *
 * @param body The response body.
 * @param parse Turns one event's text into a value (throws on a bad one).
 * @returns The values.
 */
export async function* readJsonEvents<T>(
  body: ReadableStream<Uint8Array>,
  parse: (text: string) => T,
): AsyncGenerator<T> {
  let data: string[] = [];
  // One line: a value, or `undefined` (skipped, or a `data:` line kept).
  const take = (line: string): { value: T } | undefined => {
    if (line.trim() === "") {
      if (data.length === 0) return undefined;
      const joined = data.join("\n");
      data = [];
      return { value: parse(joined) };
    }
    if (line.startsWith(":") || /^(event|id|retry):/.test(line)) {
      return undefined;
    }
    if (line.startsWith("data:")) {
      data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
      return undefined;
    }
    return { value: parse(line) };
  };
  const lines = body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new TextLineStream(),
  );
  for await (const line of lines) {
    const taken = take(line);
    if (taken) yield taken.value;
  }
  if (data.length > 0) yield parse(data.join("\n"));
}

/**
 * The events of a stream read by {@linkcode readJsonEvents}: each a JSON
 * object with a string `type`; anything else is refused with the kind's
 * error, quoting the text (its first 80 characters).
 *
 * @example
 * ```ts
 * import { assertEquals, assertRejects } from "@std/assert";
 * import { readTypedEvents } from "./streams.ts";
 * const read = (text: string) =>
 *   Array.fromAsync(readTypedEvents(new Blob([text]).stream(), "the events", Error));
 * assertEquals(await read('{"type":"a"}\n'), [{ type: "a" }]);
 * await assertRejects(() => read("[1]\n"), Error, 'Cannot read the events: "[1]" is not an event object');
 * ```
 *
 * @param body The response body.
 * @param what What is read, for the error (`the command's events`).
 * @param ErrorClass The kind's error for a bad event.
 * @returns The events.
 */
export function readTypedEvents<T extends { readonly type: string }>(
  body: ReadableStream<Uint8Array>,
  what: string,
  ErrorClass: new (message: string) => Error,
): AsyncGenerator<T> {
  return readJsonEvents(body, (text) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (
      typeof value !== "object" || value === null || Array.isArray(value) ||
      typeof (value as { type?: unknown }).type !== "string"
    ) {
      const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
      throw new ErrorClass(
        `Cannot read ${what}: ${JSON.stringify(shown)} is not an event object`,
      );
    }
    return value as T;
  });
}

/**
 * Gathers small chunks into chunks of about `size` bytes (a compressor
 * writes many small ones; each would be a chunk on the wire).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { rechunk } from "./streams.ts";
 * const parts = ReadableStream.from([new Uint8Array(3), new Uint8Array(3), new Uint8Array(3)]);
 * const sizes = (await Array.fromAsync(parts.pipeThrough(rechunk(6)))).map((c) => c.length);
 * assertEquals(sizes, [6, 3]);
 * ```
 *
 * @param size The size of a chunk sent.
 * @returns The transform.
 */
export function rechunk(size: number): TransformStream<Uint8Array, Uint8Array> {
  let buffer = new Uint8Array(size);
  let used = 0;
  return new TransformStream({
    transform(chunk, out) {
      if (used + chunk.length > size && used > 0) {
        out.enqueue(buffer.subarray(0, used));
        buffer = new Uint8Array(size);
        used = 0;
      }
      if (chunk.length >= size) {
        out.enqueue(chunk);
        return;
      }
      buffer.set(chunk, used);
      used += chunk.length;
    },
    flush(out) {
      if (used > 0) out.enqueue(buffer.subarray(0, used));
    },
  });
}

/**
 * Exactly `size` bytes of a stream: the rest is dropped, and a shorter stream
 * is an error naming `name` (a file that shrank while it was sent).
 *
 * @example The first bytes of a stream
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { exactly } from "./streams.ts";
 * const stream = new Blob(["hello world"]).stream();
 * assertEquals(await new Response(exactly(stream, 5, "greeting")).text(), "hello");
 * ```
 *
 * @param stream The bytes.
 * @param size How many.
 * @param name What they are, for the error.
 * @returns The bytes, cut.
 */
export function exactly(
  stream: ReadableStream<Uint8Array>,
  size: number,
  name: string,
): ReadableStream<Uint8Array> {
  let left = size;
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        if (left <= 0) return;
        const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
        left -= part.length;
        out.enqueue(part);
      },
      flush() {
        if (left > 0) throw new Error(`"${name}" shrank while it was sent`);
      },
    }),
  );
}

/** How far the tar being made may run ahead of the request, in bytes. */
const TAR_WINDOW = 8 * 1024 * 1024;
/** Files up to this size go into the tar in one read. */
const WHOLE_FILE_BYTES = 1024 * 1024;
const ENCODER = new TextEncoder();

/** A tar of files being made while it is sent (see {@linkcode tarOfFiles}). */
export interface StreamedTar {
  /** The tar, gzipped when asked, in chunks of 64 KiB. */
  readonly body: ReadableStream<Uint8Array>;
  /** Settles once every file was fed (rejects with the first failure). */
  readonly fed: Promise<void>;
  /** Stops the feeding (the request failed); resolves once it stopped. */
  stop(): Promise<void>;
}

/**
 * A tar of files (regular files only, named by their remote path without
 * the leading `/`, each with its mode, 0644 when none is given) made as the
 * request takes it: at most 8 MiB run ahead, so memory stays bounded.
 *
 * @example Two files in a tar
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { tarOfFiles } from "./streams.ts";
 * const tar = tarOfFiles([
 *   { remotePath: "/w/a.txt", content: "a" },
 *   { remotePath: "/w/b.txt", content: new Uint8Array([98]) },
 * ], { gzip: false });
 * const bytes = new Uint8Array(await new Response(tar.body).arrayBuffer());
 * await tar.fed;
 * assertEquals(new TextDecoder().decode(bytes.subarray(0, 7)), "w/a.txt");
 * ```
 *
 * @param files The files.
 * @param options Whether to gzip it, and a signal that stops the feeding.
 * @returns The tar.
 */
export function tarOfFiles(
  files: readonly RemoteUploadFile[],
  options: { readonly gzip: boolean; readonly signal?: AbortSignal },
): StreamedTar {
  const { signal } = options;
  const { readable, controller } = createTarPacker();
  // What the request has taken of the tar: the feeding waits while more
  // than TAR_WINDOW bytes are ahead of it.
  let fed = 0;
  let taken = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  const counted = readable.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        taken += chunk.length;
        wake?.();
        out.enqueue(chunk);
      },
    }),
  );
  const feeding = (async () => {
    for (const file of files) {
      signal?.throwIfAborted();
      while (fed - taken > TAR_WINDOW && !stopped) {
        await new Promise<void>((resolve) => wake = resolve);
      }
      if (stopped) return;
      const content = file.content;
      const size = typeof content === "string"
        ? ENCODER.encode(content).length
        : content instanceof Uint8Array
        ? content.length
        : content.size;
      const entry = controller.add({
        name: file.remotePath.replace(/^\/+/, ""),
        size,
        mode: (file.mode ?? 0o644) & 0o7777,
      });
      fed += 512 + size;
      if (typeof content !== "string" && !(content instanceof Uint8Array)) {
        if (content.size > WHOLE_FILE_BYTES) {
          using opened = await Deno.open(content.path);
          await exactly(opened.readable, content.size, content.path).pipeTo(
            entry,
          );
          continue;
        }
        // Small files whole: one read instead of a stream each.
        const bytes = await Deno.readFile(content.path);
        if (bytes.length < content.size) {
          throw new Error(`"${content.path}" shrank while it was sent`);
        }
        const writer = entry.getWriter();
        await writer.write(bytes.subarray(0, content.size));
        await writer.close();
        continue;
      }
      const writer = entry.getWriter();
      await writer.write(
        typeof content === "string" ? ENCODER.encode(content) : content,
      );
      await writer.close();
    }
    controller.finalize();
  })();
  feeding.catch((error) => controller.error(error));
  const packed = options.gzip
    ? counted.pipeThrough(
      new CompressionStream("gzip") as unknown as TransformStream<
        Uint8Array,
        Uint8Array
      >,
    )
    : counted;
  return {
    body: packed.pipeThrough(rechunk(64 * 1024)),
    fed: feeding,
    async stop() {
      stopped = true;
      wake?.();
      await feeding.catch(() => {});
    },
  };
}

/**
 * Frames one Connect message: `[flags:1][length:4 big-endian][JSON]`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { connectEnvelope } from "./streams.ts";
 * assertEquals([...connectEnvelope({}, 2)], [2, 0, 0, 0, 2, 123, 125]);
 * ```
 *
 * @param message The message.
 * @param flags `0`, or `2` for the end of a stream.
 * @returns The bytes.
 */
export function connectEnvelope(
  message: unknown,
  flags = 0,
): Uint8Array<ArrayBuffer> {
  const json = new TextEncoder().encode(JSON.stringify(message));
  const bytes = new Uint8Array(5 + json.length);
  bytes[0] = flags;
  new DataView(bytes.buffer).setUint32(1, json.length);
  bytes.set(json, 5);
  return bytes;
}

/**
 * Reads the enveloped messages of a Connect stream.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { connectEnvelope, readConnectStream } from "./streams.ts";
 * const body = new Blob([connectEnvelope({ a: 1 }), connectEnvelope({}, 2)]).stream();
 * const seen = [];
 * for await (const message of readConnectStream(body)) seen.push(message);
 * assertEquals(seen, [{ flags: 0, message: { a: 1 } }, { flags: 2, message: {} }]);
 * ```
 *
 * @param body The response body.
 * @param broken Makes the error of a frame that is cut or not JSON.
 * @returns Each message with its flags.
 */
export async function* readConnectStream(
  body: ReadableStream<Uint8Array>,
  broken: (reason: string) => Error = (reason) =>
    new Error(`Cannot read the stream: ${reason}`),
): AsyncGenerator<{ flags: number; message: Record<string, unknown> }> {
  let buffer = new Uint8Array(0);
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    const joined = new Uint8Array(buffer.length + chunk.length);
    joined.set(buffer);
    joined.set(chunk, buffer.length);
    buffer = joined;
    while (buffer.length >= 5) {
      const length = new DataView(buffer.buffer, buffer.byteOffset)
        .getUint32(1);
      if (buffer.length < 5 + length) break;
      const flags = buffer[0]!;
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(decoder.decode(buffer.subarray(5, 5 + length)));
      } catch {
        throw broken("a stream message is not JSON");
      }
      buffer = buffer.slice(5 + length);
      yield { flags, message };
    }
  }
  if (buffer.length > 0) {
    throw broken("the stream ended inside a message");
  }
}
