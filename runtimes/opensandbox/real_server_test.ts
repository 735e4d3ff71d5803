/**
 * The OpenSandbox runtime against what the real execd binary does (facts in
 * `../shared/specs/README.md`, "Measured on the real execd binary"), on the
 * test server that now answers as it does.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertLess,
  assertStringIncludes,
} from "../../_internal/assert.ts";
import { makeSkill, startTestServer } from "./_testing.ts";

Deno.test("prepare() uploads a skill of more than 500 files in requests of at most 500 files (the real part limit), byte-identical", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const files: Record<string, string | Uint8Array> = {};
  for (let i = 0; i < 1200; i++) {
    files[`data/d${i % 7}/f${i}.txt`] = `file ${i}\n`;
  }
  files["bin/blob.bin"] = new Uint8Array(300_000).map((_, i) =>
    (i * 31) & 0xff
  );
  const skill = await makeSkill(`${server.dir}/src`, "many", files);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const uploads = server.server.requests.filter((r) =>
    r.route === "/files/upload"
  );
  // 1202 files (SKILL.md included): 500 + 500 + 202.
  assertEquals(uploads.map((r) => r.status), [200, 200, 200]);
  assertEquals(
    await Deno.readTextFile(`${prepared!.basePath}/data/d2/f1199.txt`),
    "file 1199\n",
  );
  assertEquals(
    await Deno.readFile(`${prepared!.basePath}/bin/blob.bin`),
    files["bin/blob.bin"],
  );
  const count = await runtime.execute({
    command: "find . -type f | wc -l",
    workingDirectory: prepared!.basePath,
  });
  assertEquals(count.stdout.trim(), "1202");
});
