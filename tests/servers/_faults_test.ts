import { assertEquals, assertThrows } from "@std/assert";
import { FaultInjector, parseFaultSpec } from "./_faults.ts";

const ok = () => new Response("real body");

async function statusOf(
  handler: (request: Request) => Promise<Response>,
  method: string,
  path: string,
): Promise<number> {
  const response = await handler(new Request(`http://h${path}`, { method }));
  await response.body?.cancel();
  return response.status;
}

Deno.test("FaultInjector: rules match by method, exact path, {segment} and *, first rule wins, counts run out", async () => {
  const faults = new FaultInjector();
  const handler = faults.wrap(ok);
  faults.add({
    method: "GET",
    path: "/sandboxes/{id}",
    fault: { kind: "status", status: 404 },
  });
  faults.add({
    path: "/files/*",
    fault: { kind: "status", status: 500 },
    times: 2,
  });
  faults.add({ fault: { kind: "status", status: 418 }, times: 1 });
  assertEquals(await statusOf(handler, "GET", "/sandboxes/abc"), 404);
  assertEquals(
    await statusOf(handler, "DELETE", "/sandboxes/abc"),
    418,
    "other method: the catch-all",
  );
  assertEquals(
    await statusOf(handler, "DELETE", "/sandboxes/abc"),
    200,
    "the catch-all ran out",
  );
  assertEquals(
    await statusOf(handler, "GET", "/sandboxes/abc/x"),
    200,
    "{id} is one segment",
  );
  assertEquals(await statusOf(handler, "POST", "/files/a/b"), 500);
  assertEquals(await statusOf(handler, "GET", "/files/upload"), 500);
  assertEquals(await statusOf(handler, "GET", "/files/upload"), 200);
  assertEquals(faults.rules.length, 1);
  assertEquals(faults.count("status"), 4);
  faults.rules[0]!.remove();
  assertEquals(await statusOf(handler, "GET", "/sandboxes/abc"), 200);
  assertThrows(
    () => faults.add({ fault: { kind: "invalid-json" }, times: 0 }),
    RangeError,
  );
});

Deno.test("FaultInjector: invalid JSON keeps the status and headers; truncate announces the full length", async () => {
  const faults = new FaultInjector();
  const handler = faults.wrap(() =>
    new Response(JSON.stringify({ a: 1 }), {
      status: 201,
      headers: { "content-type": "application/json", "x-keep": "1" },
    })
  );
  faults.add({ fault: { kind: "invalid-json" }, times: 1 });
  const invalid = await handler(new Request("http://h/x"));
  assertEquals([invalid.status, invalid.headers.get("x-keep")], [201, "1"]);
  let parsed = true;
  try {
    JSON.parse(await invalid.text());
  } catch {
    parsed = false;
  }
  assertEquals(parsed, false);
});

Deno.test("parseFaultSpec: every kind, and clear errors for bad specs", () => {
  assertEquals(parseFaultSpec("/ping slow:5000"), {
    path: "/ping",
    fault: { kind: "slow", delayMs: 5000 },
  });
  assertEquals(parseFaultSpec("* /command reset-stream:2 x1"), {
    path: "/command",
    fault: { kind: "reset-stream", afterLines: 2 },
    times: 1,
  });
  assertEquals(parseFaultSpec("get /files/download truncate").method, "GET");
  for (
    const kind of [
      "reset",
      "invalid-json",
      "end-stream",
      "ignore-range",
      "ignore-sigterm",
    ]
  ) {
    assertEquals(parseFaultSpec(`/x ${kind}`).fault.kind, kind);
  }
  for (
    const bad of [
      "",
      "GET",
      "/x",
      "/x status",
      "/x status:abc",
      "/x nope",
      "/x reset x2 extra",
      "/x reset 2",
    ]
  ) {
    assertThrows(
      () => parseFaultSpec(bad),
      SyntaxError,
      "Cannot read the fault",
    );
  }
});
