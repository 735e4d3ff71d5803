/** The ZIP writer's limits: no ZIP64, so it refuses what would need it. */
import { assertEquals, assertStringIncludes, assertThrows } from "@std/assert";
import { ZipWriter } from "./_zip_writer.ts";
import { PackageError } from "./errors.ts";

Deno.test("ZipWriter refuses the 65,536th file (no ZIP64) with a clear error", () => {
  let bytes = 0;
  const zip = new ZipWriter((chunk) => bytes += chunk.byteLength);
  const empty = new Uint8Array([3, 0]); // an empty deflate stream
  for (let i = 0; i < 0xffff; i++) zip.add(`s/${i}`, 0o644, 0, 0, empty);
  const error = assertThrows(
    () => zip.add("s/one-more", 0o644, 0, 0, empty),
    PackageError,
  );
  assertEquals(error.code, "too-large");
  assertStringIncludes(error.message, "tar.gz");
  zip.end();
  // Local headers, data, central records and the end record of 65,535 files.
  let names = 0;
  for (let i = 0; i < 0xffff; i++) names += `s/${i}`.length;
  assertEquals(bytes, 0xffff * (30 + 2 + 46) + 2 * names + 22);
});
