import {
  assert,
  assertEquals,
  assertFalse,
  assertLess,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { collectStream, OutputCollector } from "./collector.ts";

const encoder = new TextEncoder();

/** What the collector must keep, computed the simple way. */
function expected(all: Uint8Array, maxBytes: number): Uint8Array {
  if (all.byteLength <= maxBytes) return all;
  const head = Math.ceil(maxBytes / 2);
  const tail = maxBytes - head;
  const out = new Uint8Array(maxBytes);
  out.set(all.subarray(0, head));
  out.set(all.subarray(all.byteLength - tail), head);
  return out;
}

Deno.test("OutputCollector keeps everything under the cap", () => {
  const collector = new OutputCollector({ maxBytes: 100 });
  collector.push(encoder.encode("hello "));
  collector.push(encoder.encode("world"));
  assertEquals(collector.text(), "hello world");
  assertEquals(collector.totalBytes, 11);
  assertFalse(collector.truncated);
});

Deno.test("OutputCollector keeps exactly the cap without a marker", () => {
  const collector = new OutputCollector({ maxBytes: 10 });
  collector.push(encoder.encode("0123456789"));
  assertEquals(collector.text(), "0123456789");
  assertFalse(collector.truncated);
  collector.push(encoder.encode("a"));
  assert(collector.truncated);
  assertEquals(collector.text(), "01234\n[... 1 bytes omitted ...]\n6789a");
});

Deno.test("OutputCollector keeps the start and the end for any chunking", () => {
  // A deterministic pseudo-random generator so a failure can be replayed.
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  for (let round = 0; round < 300; round++) {
    const maxBytes = Math.floor(random() * 64);
    const total = Math.floor(random() * 400);
    const all = new Uint8Array(total).map((_, i) => (i * 7 + round) & 0xff);
    const collector = new OutputCollector({ maxBytes });
    let offset = 0;
    while (offset < total) {
      const size = Math.min(total - offset, 1 + Math.floor(random() * 90));
      collector.push(all.subarray(offset, offset + size));
      offset += size;
    }
    assertEquals(
      collector.bytes(),
      expected(all, maxBytes),
      `round ${round}: maxBytes ${maxBytes}, total ${total}`,
    );
    assertEquals(collector.totalBytes, total);
    assertEquals(collector.truncated, total > maxBytes);
  }
});

Deno.test("OutputCollector does not retain or depend on the caller's buffer", () => {
  const collector = new OutputCollector({ maxBytes: 8 });
  const buffer = encoder.encode("abcdefghij");
  collector.push(buffer);
  buffer.fill(0x21);
  assertEquals(
    collector.text(),
    "abcd\n[... 2 bytes omitted ...]\nghij",
  );
});

Deno.test("OutputCollector.text() does not split a character at the cut", () => {
  // "é" is 2 bytes, "€" is 3 bytes, "😀" is 4 bytes.
  const text = "aé€😀".repeat(50);
  const bytes = encoder.encode(text);
  for (let maxBytes = 2; maxBytes < 40; maxBytes++) {
    const collector = new OutputCollector({ maxBytes });
    collector.push(bytes);
    const out = collector.text();
    assertFalse(out.includes("\uFFFD"), `maxBytes ${maxBytes}: ${out}`);
    const match = /^(.*)\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n(.*)$/s.exec(
      out,
    );
    assert(match, out);
    const [, head = "", omitted = "", tail = ""] = match;
    assert(text.startsWith(head), `head ${head}`);
    assert(text.endsWith(tail), `tail ${tail}`);
    assertEquals(
      encoder.encode(head).byteLength + Number(omitted) +
        encoder.encode(tail).byteLength,
      bytes.byteLength,
    );
  }
});

Deno.test("OutputCollector with a zero cap counts but keeps nothing", () => {
  const collector = new OutputCollector({ maxBytes: 0 });
  collector.push(encoder.encode("abc"));
  assertEquals(collector.text(), "\n[... 3 bytes omitted ...]\n");
  assertEquals(collector.totalBytes, 3);
});

Deno.test("OutputCollector refuses a bad cap", () => {
  assertThrows(() => new OutputCollector({ maxBytes: -1 }), RangeError);
  assertThrows(() => new OutputCollector({ maxBytes: 1.5 }), RangeError);
  assertThrows(() => new OutputCollector({ maxBytes: NaN }), RangeError);
});

Deno.test("OutputCollector stays small while collecting 256 MiB", () => {
  const collector = new OutputCollector({ maxBytes: 1024 * 1024 });
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const start = performance.now();
  for (let i = 0; i < 4096; i++) collector.push(chunk);
  const elapsed = performance.now() - start;
  assertEquals(collector.totalBytes, 256 * 1024 * 1024);
  assertEquals(collector.bytes().byteLength, 1024 * 1024);
  // 256 MiB through a collector is a few tens of ms; a generous bound.
  assertLess(elapsed, 5000);
});

Deno.test("collectStream() reads a stream to its end", async () => {
  const collector = new OutputCollector({ maxBytes: 4 });
  const total = await collectStream(
    new Blob(["abc", "def", "ghi"]).stream(),
    collector,
  );
  assertEquals(total, 9);
  assertEquals(collector.text(), "ab\n[... 5 bytes omitted ...]\nhi");
});

Deno.test("collectStream() stops at its signal and keeps what it read", async () => {
  const controller = new AbortController();
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      pulls++;
      if (pulls === 1) c.enqueue(encoder.encode("first"));
      // Afterwards never enqueue: the stream hangs like a pipe held open.
    },
  });
  const collector = new OutputCollector({ maxBytes: 100 });
  const done = collectStream(stream, collector, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 20));
  controller.abort();
  assertEquals(await done, 5);
  assertEquals(collector.text(), "first");
});

Deno.test("collectStream() reads a byte stream into a reused buffer and stops at its signal", async () => {
  const controller = new AbortController();
  let pulls = 0;
  const stream = new ReadableStream({
    type: "bytes",
    pull(c) {
      pulls++;
      if (pulls <= 3) {
        const request = c.byobRequest;
        if (!request?.view) throw new Error("expected a BYOB read");
        const view = new Uint8Array(
          request.view.buffer,
          request.view.byteOffset,
          request.view.byteLength,
        );
        view.set(encoder.encode(`chunk${pulls};`));
        request.respond(7);
      }
      // Then hang, like a pipe held open.
    },
  });
  const collector = new OutputCollector({ maxBytes: 100 });
  const done = collectStream(stream, collector, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 20));
  controller.abort();
  assertEquals(await done, 21);
  assertEquals(collector.text(), "chunk1;chunk2;chunk3;");
});
