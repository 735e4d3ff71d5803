import {
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "../helpers/assert.ts";
import {
  GrepCollector,
  MAX_CONCURRENT_SEARCHES,
  planGrep,
  SearchSlots,
} from "../../search/_plan.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";

Deno.test("planGrep() checks numbers and the output mode", async () => {
  const fs = new LocalFileSystem({ cwd: Deno.cwd() });
  const range = await assertRejects(() =>
    planGrep(fs, { pattern: "a", context: -1 }, true)
  );
  assertInstanceOf(range, RangeError);
  assertStringIncludes((range as Error).message, 'Invalid context "-1"');
  const mode = await assertRejects(() =>
    planGrep(fs, { pattern: "a", outputMode: "lines" as "content" }, true)
  );
  assertStringIncludes((mode as Error).message, 'Invalid output mode "lines"');
});

Deno.test("GrepCollector applies offset, head limit and counts the rest", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const plan = await planGrep(
      new LocalFileSystem({ cwd: dir }),
      { pattern: "a", offset: 1, headLimit: 2 },
      true,
    );
    const collector = new GrepCollector(plan);
    for (const path of ["a", "b", "c", "d"]) {
      collector.add({ path, count: 1, lines: [] });
    }
    const result = collector.result("fallback");
    assertEquals(result.mode === "files_with_matches" ? result.files : [], [
      `${dir}/b`,
      `${dir}/c`,
    ]);
    assertEquals(result.totalEntries, 4);
    assertEquals(result.headLimitReached, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SearchSlots runs at most 4 searches at once, in order, and a waiter's abort leaves the queue", async () => {
  const slots = new SearchSlots();
  const signal = new AbortController().signal;
  const releases = await Promise.all(
    Array.from(
      { length: MAX_CONCURRENT_SEARCHES },
      () => slots.acquire(signal),
    ),
  );
  const order: number[] = [];
  const aborted = new AbortController();
  const leaving = slots.acquire(aborted.signal);
  const waiting = [1, 2].map((n) =>
    slots.acquire(signal).then((release) => {
      order.push(n);
      return release;
    })
  );
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(order, [], "no slot was free");
  aborted.abort(new Error("gone"));
  await assertRejects(() => leaving, Error, "gone");
  releases[0]!();
  releases[0]!(); // twice: once only
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(order, [1]);
  releases[1]!();
  const [first, second] = await Promise.all(waiting);
  assertEquals(order, [1, 2]);
  first!();
  second!();
  releases[2]!();
  releases[3]!();
  // All free again: four start at once.
  const again = await Promise.all(
    Array.from(
      { length: MAX_CONCURRENT_SEARCHES },
      () => slots.acquire(signal),
    ),
  );
  again.forEach((release) => release());
});
