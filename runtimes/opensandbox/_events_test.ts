import { assertEquals, assertRejects } from "../../tests/helpers/assert.ts";
import {
  type ExecdEvent,
  ExecdProtocolError,
  readExecdEvents,
} from "./_events.ts";

/** A body that arrives in the given chunks (split anywhere, even in a character). */
function body(...chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return ReadableStream.from(
    chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c),
  );
}

async function events(
  stream: ReadableStream<Uint8Array>,
): Promise<ExecdEvent[]> {
  const out: ExecdEvent[] = [];
  for await (const event of readExecdEvents(stream)) out.push(event);
  return out;
}

Deno.test("readExecdEvents() reads bare JSON events separated by blank lines (the real execd)", async () => {
  const got = await events(body(
    '{"type":"init","text":"c1","timestamp":1}\n\n',
    '{"type":"stdout","text":"a","timestamp":2}\n\n{"type":"std',
    'out","text":"\\n","timestamp":3}\n\n',
    '{"type":"execution_complete","timestamp":4}\n\n',
  ));
  assertEquals(got.map((e) => [e.type, e.text]), [
    ["init", "c1"],
    ["stdout", "a"],
    ["stdout", "\n"],
    ["execution_complete", undefined],
  ]);
});

Deno.test("readExecdEvents() reads data: framing and skips comments, event:, id: and retry: lines", async () => {
  const got = await events(body(
    ": keep-alive\r\n",
    "retry: 1000\r\nid: 7\r\nevent: message\r\n",
    'data: {"type":"stderr",\r\ndata: "text":"x"}\r\n\r\n',
    'data:{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]}}\n\n',
  ));
  assertEquals(got, [
    { type: "stderr", text: "x" },
    {
      type: "error",
      error: {
        ename: "CommandExecError",
        evalue: "3",
        traceback: ["exit status 3"],
      },
    },
  ]);
});

Deno.test("readExecdEvents() keeps characters split across chunks and reads a last line without newline", async () => {
  const bytes = new TextEncoder().encode('{"type":"stdout","text":"é€"}');
  const got = await events(body(
    bytes.subarray(0, 27),
    bytes.subarray(27),
  ));
  assertEquals(got, [{ type: "stdout", text: "é€" }]);
});

Deno.test("readExecdEvents() refuses a line that is not an event object, quoting it", async () => {
  await assertRejects(
    () => events(body('{"type":"init","text":"c1"}\n\n<html>oops</html>\n')),
    ExecdProtocolError,
    `Cannot read the command's events: "<html>oops</html>" is not an event object`,
  );
  await assertRejects(
    () => events(body('data: {"text":"no type"}\n\n')),
    ExecdProtocolError,
    "is not an event object",
  );
});

Deno.test("readExecdEvents() passes on a broken connection", async () => {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"type":"init"}\n\n'));
      controller.error(new TypeError("connection reset"));
    },
  });
  await assertRejects(() => events(stream), TypeError, "connection reset");
});
