import { assertEquals, assertRejects } from "../tests/helpers/assert.ts";
import { mapLimited } from "./pool.ts";

Deno.test("mapLimited() keeps the order and the limit", async () => {
  let running = 0;
  let most = 0;
  const results = await mapLimited([5, 1, 4, 2, 3], 2, async (n) => {
    most = Math.max(most, ++running);
    await new Promise((resolve) => setTimeout(resolve, n));
    running--;
    return `#${n}`;
  });
  assertEquals(results, ["#5", "#1", "#4", "#2", "#3"]);
  assertEquals(most, 2);
});

Deno.test("mapLimited() starts nothing after a failure and waits for the started ones", async () => {
  const started: number[] = [];
  const finished: number[] = [];
  await assertRejects(
    () =>
      mapLimited([1, 2, 3, 4, 5, 6], 2, async (n) => {
        started.push(n);
        await new Promise((resolve) => setTimeout(resolve, n === 1 ? 1 : 20));
        if (n === 1) throw new Error("one failed");
        finished.push(n);
      }),
    Error,
    "one failed",
  );
  assertEquals(started, [1, 2]);
  assertEquals(finished, [2]);
});

Deno.test("mapLimited() stops at an aborted signal with its reason", async () => {
  const controller = new AbortController();
  const seen: number[] = [];
  await assertRejects(
    () =>
      mapLimited([1, 2, 3], 1, (n) => {
        seen.push(n);
        controller.abort(new RangeError("stop"));
        return Promise.resolve(n);
      }, { signal: controller.signal }),
    RangeError,
    "stop",
  );
  assertEquals(seen, [1]);
});

Deno.test("mapLimited() of nothing is nothing", async () => {
  assertEquals(await mapLimited([], 4, () => Promise.resolve(1)), []);
});
