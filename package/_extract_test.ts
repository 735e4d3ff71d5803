/**
 * The flat-memory path of large ZIP entries (`extractLargeEntry`), reached
 * with small archives by lowering the thresholds: stored and deflated
 * entries come out byte for byte, and damaged ones are refused naming the
 * entry. The end-to-end install of a package over 64 MiB (read from its
 * spool file, its entry over 1 MiB) is in `pack_test.ts`.
 */
import { assert, assertEquals, assertRejects } from "@std/assert";
import { crc32 } from "node:zlib";
import { extractArchive, type ZipThresholds } from "./_extract.ts";
import { resolveLimits } from "./_entries.ts";
import { sha256Of } from "./_digest.ts";
import { PackageError } from "./mod.ts";
import { makeZip, randomBytes, skillMd } from "../tests/helpers/package.ts";

/** Every file entry over 1 KiB takes the large-entry path. */
const LOW: ZipThresholds = { inMemoryArchiveBytes: 0, largeEntryBytes: 1024 };

const encoder = new TextEncoder();

/** Text that compresses well, over several of the path's 64 KiB buffers. */
function text(n: number): Uint8Array {
  const line = encoder.encode("the quick brown fox jumps over the lazy dog\n");
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = line[i % line.length]! ^ (i >> 16 & 1);
  return out;
}

const FILES: Record<string, Uint8Array> = {
  "s/SKILL.md": encoder.encode(skillMd("s")),
  "s/random.bin": randomBytes(300_000),
  "s/text.txt": text(1_000_000),
  "s/empty.txt": new Uint8Array(0),
};

/** A ZIP of FILES, deflated (level 6) or stored (level 0). */
function zipOf(level: 0 | 6): Uint8Array {
  return makeZip(
    Object.entries(FILES).map(([name, data]) => ({ name, data })),
    { level },
  );
}

/** Offsets of an entry's local header and central directory record. */
function locate(
  zip: Uint8Array,
  name: string,
): { local: number; central: number } {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const bytes = encoder.encode(name);
  const nameAt = (at: number) => bytes.every((byte, i) => zip[at + i] === byte);
  let central = -1;
  for (let i = 0; i + 46 <= zip.length; i++) {
    if (
      view.getUint32(i, true) === 0x02014b50 &&
      view.getUint16(i + 28, true) === bytes.length && nameAt(i + 46)
    ) {
      central = i;
      break;
    }
  }
  assert(central >= 0, `no central record for ${name}`);
  return { local: view.getUint32(central + 42, true), central };
}

async function withArchive(
  zip: Uint8Array,
  fn: (path: string, target: string) => Promise<void>,
): Promise<void> {
  const base = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${base}/p.zip`, zip);
    await Deno.mkdir(`${base}/out`);
    await fn(`${base}/p.zip`, `${base}/out`);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

function extract(path: string, size: number, target: string) {
  return extractArchive(
    path,
    size,
    "zip",
    target,
    resolveLimits(),
    undefined,
    LOW,
  );
}

for (const level of [6, 0] as const) {
  Deno.test(`large ZIP entries (${level ? "deflated" : "stored"}) come out byte for byte`, async () => {
    const zip = zipOf(level);
    await withArchive(zip, async (path, target) => {
      const { files } = await extract(path, zip.length, target);
      for (const [name, data] of Object.entries(FILES)) {
        const got = await Deno.readFile(`${target}/${name}`);
        assertEquals(got.length, data.length, name);
        assert(got.every((byte, i) => byte === data[i]), name);
        assertEquals(files.get(name)?.digest, sha256Of(data), name);
      }
    });
  });
}

/** A damaged copy of the deflated ZIP is refused, naming `s/text.txt`. */
async function assertRefused(
  damage: (zip: Uint8Array, view: DataView) => void,
  message: RegExp,
): Promise<void> {
  const zip = zipOf(6);
  damage(zip, new DataView(zip.buffer));
  await withArchive(zip, async (path, target) => {
    const error = await assertRejects(
      () => extract(path, zip.length, target),
      PackageError,
    );
    assertEquals(error.code, "corrupt", error.message);
    assertEquals(error.entry, "s/text.txt", error.message);
    assert(message.test(error.message), error.message);
  });
}

Deno.test("large ZIP entry refused: compressed data damaged", async () => {
  await assertRefused((zip) => {
    const { local } = locate(zip, "s/text.txt");
    // Inside the entry's deflate stream, past its first block header (in
    // the runtime zlib's stream these bytes hold codes whose distances then
    // reach before the start).
    for (let i = 100; i < 160; i++) zip[local + 40 + i]! ^= 0xff;
  }, /damaged|CRC-32/);
});

Deno.test("large ZIP entry refused: CRC-32 of the directory does not match", async () => {
  await assertRefused((zip, view) => {
    const { local, central } = locate(zip, "s/text.txt");
    const wrong = (crc32(FILES["s/text.txt"]!) ^ 1) >>> 0;
    view.setUint32(central + 16, wrong, true);
    view.setUint32(local + 14, wrong, true);
  }, /CRC-32/);
});

Deno.test("large ZIP entry refused: more bytes than its declared size", async () => {
  await assertRefused((zip, view) => {
    const { local, central } = locate(zip, "s/text.txt");
    view.setUint32(central + 24, 500_000, true);
    view.setUint32(local + 22, 500_000, true);
  }, /more bytes than its header says/);
});

Deno.test("large ZIP entry refused: local header not the directory's", async () => {
  await assertRefused((zip) => {
    const { local } = locate(zip, "s/text.txt");
    zip[local + 30 + 2] = "X".charCodeAt(0); // s/Xext.txt
  }, /local header names it differently/);
});

Deno.test("large ZIP entry refused: compressed size past the archive's end", async () => {
  await assertRefused((zip, view) => {
    const { central } = locate(zip, "s/text.txt");
    view.setUint32(central + 20, zip.length, true);
  }, /past the end|truncated|ends early/);
});

Deno.test("large ZIP entry refused: compressed stream ends before its data", async () => {
  await assertRefused((zip, view) => {
    const { local, central } = locate(zip, "s/text.txt");
    // The directory claims the entry's data is 16 bytes longer than the
    // deflate stream (the bytes after it are the next entry's header).
    const size = view.getUint32(central + 20, true) + 16;
    view.setUint32(central + 20, size, true);
    view.setUint32(local + 18, size, true);
  }, /after its compressed stream/);
});
