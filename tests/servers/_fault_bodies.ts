/**
 * The body faults of the fault injector (`_faults.ts`): a body cut after so
 * many bytes (a dropped connection, or a short body under its announced
 * length), an event stream cut after so many lines or ended before its
 * completion, and a body that is not valid JSON.
 *
 * @module
 */
import type { EndStreamFault, Fault, ResetStreamFault } from "./_faults.ts";

/** A dropped connection, without a stack trace in the server's log. */
class InjectedDrop extends Error {
  constructor() {
    super("injected fault: connection dropped");
    this.name = "InjectedDrop";
    this.stack = "";
  }
}

/** The answer with its body changed as a body fault says. */
export function applyToBody(fault: Fault, response: Response): Response {
  const body = response.body;
  const headers = new Headers(response.headers);
  const length = Number(headers.get("content-length") ?? NaN);
  const init = {
    status: response.status,
    statusText: response.statusText,
    headers,
  };
  switch (fault.kind) {
    case "invalid-json":
      response.body?.cancel().catch(() => {});
      headers.delete("content-length");
      return new Response('{"injected": "not json', init);
    case "reset":
    case "truncate": {
      if (body === null) return new Response(null, init);
      const limit = fault.kind === "reset"
        ? fault.afterBytes ??
          (Number.isFinite(length) ? Math.floor(length / 2) : 1)
        : fault.keepBytes ??
          (Number.isFinite(length) ? Math.floor(length / 2) : 0);
      // A truncated body keeps announcing the full length and ends early;
      // a reset errors the stream, which drops the connection.
      return new Response(
        cutAfterBytes(body, limit, fault.kind === "reset"),
        init,
      );
    }
    case "reset-stream":
    case "end-stream": {
      if (body === null) return new Response(null, init);
      headers.delete("content-length");
      return new Response(cutLines(body, fault), init);
    }
    default:
      return response;
  }
}

/** Lets the bytes already queued reach the socket before the connection drops. */
function flushPause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 30));
}

function cutAfterBytes(
  body: ReadableStream<Uint8Array>,
  limit: number,
  error: boolean,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= limit) {
        await reader.cancel().catch(() => {});
        if (error) {
          await flushPause();
          controller.error(new InjectedDrop());
        } else controller.close();
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        if (error) controller.error(new InjectedDrop());
        else controller.close();
        return;
      }
      const part = value.subarray(0, limit - sent);
      sent += part.length;
      if (part.length > 0) controller.enqueue(part);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

function defaultIsCompletion(line: string): boolean {
  const text = line.startsWith("data:") ? line.slice(5).trim() : line.trim();
  if (!text.startsWith("{")) return false;
  try {
    const type = (JSON.parse(text) as { type?: unknown }).type;
    return type === "execution_complete" || type === "error";
  } catch {
    return false;
  }
}

function cutLines(
  body: ReadableStream<Uint8Array>,
  fault: ResetStreamFault | EndStreamFault,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = "";
  let lines = 0;
  const afterLines = fault.kind === "reset-stream" ? fault.afterLines ?? 1 : 0;
  const isCompletion = fault.kind === "end-stream"
    ? fault.isCompletion ?? defaultIsCompletion
    : () => false;
  const stop = async (
    controller: ReadableStreamDefaultController<Uint8Array>,
  ): Promise<void> => {
    await reader.cancel().catch(() => {});
    // An error discards what is still queued: drop the connection on the
    // next pull, once the lines before it have gone out.
    if (fault.kind === "reset-stream") dropNext = true;
    else controller.close();
  };
  let dropNext = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (dropNext) {
        await flushPause();
        controller.error(new InjectedDrop());
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        if (pending !== "") controller.enqueue(encoder.encode(pending));
        controller.close();
        return;
      }
      pending += decoder.decode(value, { stream: true });
      let out = "";
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        if (fault.kind === "end-stream" && isCompletion(line)) {
          if (out !== "") controller.enqueue(encoder.encode(out));
          return await stop(controller);
        }
        out += pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        if (fault.kind === "reset-stream" && line.trim() !== "") {
          lines++;
          if (lines >= afterLines) {
            // The blank line that ends the event goes out with it.
            if (pending.startsWith("\n")) out += "\n";
            controller.enqueue(encoder.encode(out));
            return await stop(controller);
          }
        }
      }
      if (out !== "") controller.enqueue(encoder.encode(out));
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
