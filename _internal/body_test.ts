import { assertEquals, assertRejects } from "@std/assert";
import { BodyTooLargeError, readCapped } from "./body.ts";

function chunks(...parts: string[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(parts.map((p) => new TextEncoder().encode(p)));
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

Deno.test("readCapped() truncates at the cap across chunks and cancels the rest", async () => {
  let cancelled = false;
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(new TextEncoder().encode("abcd"));
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  const bytes = await readCapped(stream, { maxBytes: 6, overflow: "truncate" });
  assertEquals(text(bytes), "abcdab");
  assertEquals(cancelled, true);
  assertEquals(pulls <= 3, true);
  assertEquals(
    text(
      await readCapped(chunks("ab", "c"), {
        maxBytes: 0,
        overflow: "truncate",
      }),
    ),
    "",
  );
});

Deno.test("readCapped() with overflow error takes a body up to the cap and refuses one byte more", async () => {
  assertEquals(
    text(
      await readCapped(chunks("ab", "cd"), { maxBytes: 4, overflow: "error" }),
    ),
    "abcd",
  );
  const error = await assertRejects(
    () => readCapped(chunks("ab", "cde"), { maxBytes: 4, overflow: "error" }),
    BodyTooLargeError,
  );
  assertEquals(error.maxBytes, 4);
  assertEquals(
    (await readCapped(null, { maxBytes: 1, overflow: "error" })).length,
    0,
  );
  assertEquals(
    text(
      await readCapped(chunks("ab"), { maxBytes: Infinity, overflow: "error" }),
    ),
    "ab",
  );
});

Deno.test("readCapped() keeps what arrived when truncating a failing stream, and throws when refusing", async () => {
  const failing = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("ab"));
      },
      pull(controller) {
        controller.error(new Error("reset"));
      },
    });
  assertEquals(
    text(await readCapped(failing(), { maxBytes: 10, overflow: "truncate" })),
    "ab",
  );
  await assertRejects(
    () => readCapped(failing(), { maxBytes: 10, overflow: "error" }),
    Error,
    "reset",
  );
});
