import { assert, assertEquals, assertMatch } from "@std/assert";
import { formatBytes, packageProgress } from "./_progress.ts";

Deno.test("the pack/add progress line: on a terminal bytes, files and rate, rewritten in place, escaped, cleared", async () => {
  const written: string[] = [];
  const line = packageProgress({
    subject: "evil\x1b[2Jdir",
    terminal: true,
    write: (text) => written.push(text),
    quietMs: 0,
    everyMs: 0,
  });
  line.onProgress!({ stage: "pack", bytes: 0, files: 0 });
  await new Promise((resolve) => setTimeout(resolve, 150));
  line.onProgress!({ stage: "pack", bytes: 12_345_678, files: 3 });
  line.done();
  assertEquals(written.length, 3, JSON.stringify(written));
  assertMatch(
    written[1]!,
    // deno-lint-ignore no-control-regex
    /^\r\x1b\[Kskillrun: packing "evil\\u001b\[2Jdir" \(12\.3 MB, 3 files, [0-9.]+ MB\/s\) \[[0-9.]+ s\]$/,
  );
  assert(!written.join("").includes("\n"), "never a new line");
  assertEquals(written.at(-1), "\r\x1b[K");
});

Deno.test("the pack/add progress line: nothing off a terminal, nothing for quick work", () => {
  const written: string[] = [];
  const off = packageProgress({
    subject: "x",
    terminal: false,
    write: (text) => written.push(text),
  });
  assertEquals(off.onProgress, undefined);
  off.done();
  const quick = packageProgress({
    subject: "x",
    terminal: true,
    write: (text) => written.push(text),
  });
  quick.onProgress!({ stage: "read", bytes: 10, files: 0 });
  quick.done();
  assertEquals(written, []);
});

Deno.test("formatBytes", () => {
  assertEquals(formatBytes(512), "512 B");
  assertEquals(formatBytes(1500), "1.5 KB");
  assertEquals(formatBytes(412_300_000), "412.3 MB");
  assertEquals(formatBytes(2_000_000_000), "2.0 GB");
});
