/**
 * Hostile packages: each is refused with a PackageError naming the entry (when
 * there is one), and nothing is left anywhere: not in the install root, not
 * beside it.
 */
import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  installPackage,
  type InstallPackageOptions,
  PackageError,
  type PackageErrorCode,
  packSkill,
} from "./mod.ts";
import {
  gzip,
  makeDeflatedZip,
  makeTar,
  makeZip,
  makeZipWithRawName,
  randomBytes,
  skillMd,
} from "../tests/helpers/package.ts";

const SKILL = { name: "s/SKILL.md", data: skillMd("s") };
const TAR_SKILL = { name: "s/SKILL.md", data: skillMd("s") };

interface Case {
  readonly title: string;
  readonly archive: () => Promise<Uint8Array | ReadableStream<Uint8Array>>;
  readonly code: PackageErrorCode;
  /** The entry the error must name. */
  readonly entry?: string;
  readonly options?: Partial<InstallPackageOptions>;
}

const zipCase = (
  title: string,
  entries: Parameters<typeof makeZip>[0],
  code: PackageErrorCode,
  entry?: string,
): Case => ({
  title: `zip: ${title}`,
  archive: () => Promise.resolve(makeZip([SKILL, ...entries])),
  code,
  ...(entry !== undefined ? { entry } : {}),
});

const tarCase = (
  title: string,
  entries: Parameters<typeof makeTar>[0],
  code: PackageErrorCode,
  entry?: string,
): Case => ({
  title: `tar.gz: ${title}`,
  archive: () => gzip(makeTar([TAR_SKILL, ...entries])),
  code,
  ...(entry !== undefined ? { entry } : {}),
});

const MIB = 1024 * 1024;

const CASES: Case[] = [
  zipCase(
    "parent slip ../",
    [{ name: "../evil.txt", data: "x" }],
    "unsafe-path",
    "../evil.txt",
  ),
  zipCase(
    "nested slip s/../../",
    [{ name: "s/../../evil.txt", data: "x" }],
    "unsafe-path",
    "s/../../evil.txt",
  ),
  zipCase(
    "absolute path",
    [{ name: "/tmp/evil.txt", data: "x" }],
    "unsafe-path",
    "/tmp/evil.txt",
  ),
  zipCase(
    "drive letter C:/",
    [{ name: "C:/evil.txt", data: "x" }],
    "unsafe-path",
    "C:/evil.txt",
  ),
  zipCase(
    "drive-relative C:",
    [{ name: "C:evil.txt", data: "x" }],
    "unsafe-path",
    "C:evil.txt",
  ),
  zipCase(
    "backslash slip",
    [{ name: "s\\..\\..\\evil.txt", data: "x" }],
    "unsafe-path",
    "s\\..\\..\\evil.txt",
  ),
  zipCase(
    "'.' segment",
    [{ name: "s/./x.txt", data: "x" }],
    "unsafe-path",
    "s/./x.txt",
  ),
  zipCase(
    "symlink",
    [{ name: "s/link", data: "/etc/passwd", mode: 0o120777 }],
    "link",
    "s/link",
  ),
  zipCase(
    "character device",
    [{ name: "s/tty", mode: 0o020644 }],
    "special-file",
    "s/tty",
  ),
  zipCase(
    "block device",
    [{ name: "s/disk", mode: 0o060644 }],
    "special-file",
    "s/disk",
  ),
  zipCase(
    "fifo",
    [{ name: "s/pipe", mode: 0o010644 }],
    "special-file",
    "s/pipe",
  ),
  zipCase(
    "duplicate name",
    [{ name: "s/a.txt", data: "1" }, { name: "s/a.txt", data: "2" }],
    "duplicate",
    "s/a.txt",
  ),
  zipCase(
    "names differing only by case",
    [{ name: "s/Read.md", data: "1" }, { name: "s/read.md", data: "2" }],
    "duplicate",
    "s/read.md",
  ),
  zipCase(
    "a file where a folder is",
    [{ name: "s/a", data: "1" }, { name: "s/a/b", data: "2" }],
    "duplicate",
    "s/a/b",
  ),
  {
    title: "zip: name that is not UTF-8",
    archive: () =>
      Promise.resolve(
        makeZipWithRawName("s/", new Uint8Array([0xff, 0xfe, 0x41])),
      ),
    code: "unsafe-path",
  },
  {
    title: "zip: bomb by ratio (40 MiB of zeros, default limits)",
    archive: () =>
      Promise.resolve(makeDeflatedZip({
        "s/SKILL.md": new TextEncoder().encode(skillMd("s")),
        "s/zeros.bin": new Uint8Array(40 * MIB),
      })),
    code: "ratio",
    entry: "s/zeros.bin",
  },
  {
    title: "zip: bomb by size (2 MiB over a 1 MiB limit)",
    archive: () =>
      Promise.resolve(makeDeflatedZip({
        "s/SKILL.md": new TextEncoder().encode(skillMd("s")),
        "s/big.bin": new Uint8Array(2 * MIB),
      })),
    code: "too-large",
    entry: "s/big.bin",
    options: { limits: { maxBytes: MIB } },
  },
  {
    title: "zip: 100,000 entries",
    archive: () => {
      const files: Record<string, Uint8Array> = {
        "s/SKILL.md": new TextEncoder().encode(skillMd("s")),
      };
      for (let i = 0; i < 100_000; i++) files[`s/f${i}`] = new Uint8Array(0);
      return Promise.resolve(makeDeflatedZip(files));
    },
    code: "too-many-entries",
    entry: "s/f19999",
  },
  {
    title: "zip: SKILL.md missing",
    archive: () =>
      Promise.resolve(makeZip([{ name: "s/README.md", data: "x" }])),
    code: "no-skill",
  },
  {
    title: "zip: two skills",
    archive: () =>
      Promise.resolve(
        makeZip([SKILL, { name: "t/SKILL.md", data: skillMd("t") }]),
      ),
    code: "several-skills",
  },
  {
    title: "zip: a skill with a stray top-level file",
    archive: () =>
      Promise.resolve(makeZip([SKILL, { name: "stray.txt", data: "x" }])),
    code: "several-skills",
  },
  {
    title: "zip: truncated",
    archive: () => {
      const bytes = makeZip([SKILL, {
        name: "s/a.txt",
        data: "x".repeat(5000),
      }]);
      return Promise.resolve(bytes.subarray(0, Math.floor(bytes.length / 2)));
    },
    code: "corrupt",
  },
  {
    title: "zip: neither ZIP nor tar.gz",
    archive: () =>
      Promise.resolve(
        new TextEncoder().encode("just some text, not an archive"),
      ),
    code: "bad-format",
  },
  tarCase(
    "parent slip ../",
    [{ name: "../evil.txt", data: "x" }],
    "unsafe-path",
    "../evil.txt",
  ),
  tarCase(
    "absolute path",
    [{ name: "/tmp/evil.txt", data: "x" }],
    "unsafe-path",
    "/tmp/evil.txt",
  ),
  tarCase(
    "symlink",
    [{ name: "s/link", type: "2", linkname: "/etc/passwd" }],
    "link",
    "s/link",
  ),
  tarCase(
    "hard link",
    [{ name: "s/hard", type: "1", linkname: "s/SKILL.md" }],
    "link",
    "s/hard",
  ),
  tarCase(
    "character device",
    [{ name: "s/tty", type: "3" }],
    "special-file",
    "s/tty",
  ),
  tarCase(
    "block device",
    [{ name: "s/disk", type: "4" }],
    "special-file",
    "s/disk",
  ),
  tarCase("fifo", [{ name: "s/pipe", type: "6" }], "special-file", "s/pipe"),
  tarCase(
    "duplicate name",
    [{ name: "s/a.txt", data: "1" }, { name: "s/a.txt", data: "2" }],
    "duplicate",
    "s/a.txt",
  ),
  tarCase(
    "names differing only by case",
    [{ name: "s/A.txt", data: "1" }, { name: "s/a.txt", data: "2" }],
    "duplicate",
    "s/a.txt",
  ),
  {
    title: "tar.gz: name that is not UTF-8",
    archive: () =>
      gzip(
        makeTar([TAR_SKILL, {
          name: new Uint8Array([0x73, 0x2f, 0xff, 0xfe]),
          data: "x",
        }]),
      ),
    code: "unsafe-path",
  },
  {
    title: "tar.gz: bomb by ratio (40 MiB of zeros)",
    archive: () =>
      gzip(
        makeTar([TAR_SKILL, {
          name: "s/zeros.bin",
          data: new Uint8Array(40 * MIB),
        }]),
      ),
    code: "ratio",
    entry: "s/zeros.bin",
  },
  {
    title: "tar.gz: truncated",
    archive: async () => {
      const bytes = await gzip(
        makeTar([TAR_SKILL, { name: "s/a.bin", data: randomBytes(50_000) }]),
      );
      return bytes.subarray(0, Math.floor(bytes.length / 2));
    },
    code: "corrupt",
  },
  {
    // The central directory says s/abcdefghij.txt, the local header (the
    // name a streaming reader would use) ../../x/evil.txt: same length, so
    // every offset still holds.
    title: "zip: a local header naming its entry differently",
    archive: () => {
      const zip = makeZip([SKILL, { name: "s/abcdefghij.txt", data: "x" }]);
      const central = new TextEncoder().encode("s/abcdefghij.txt");
      const evil = new TextEncoder().encode("../../x/evil.txt");
      const at = indexOfBytes(zip, central);
      assert(at > 0 && indexOfBytes(zip, central, at + 1) > at);
      zip.set(evil, at); // the first copy is the local header's
      return Promise.resolve(zip);
    },
    code: "corrupt",
    entry: "s/abcdefghij.txt",
  },
  {
    title: "wrong digest",
    archive: () => Promise.resolve(makeZip([SKILL])),
    code: "digest-mismatch",
    options: { digest: `sha256:${"0".repeat(64)}` },
  },
];

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from = 0) {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

function assertNothingLeft(base: string): void {
  const outside = [...Deno.readDirSync(base)].map((e) => e.name).sort();
  assertEquals(outside, ["root"], "nothing written beside the install root");
  const inside = [...Deno.readDirSync(`${base}/root`)].map((e) => e.name);
  assertEquals(inside, [], "nothing left in the install root");
}

for (const c of CASES) {
  Deno.test(`hostile package refused: ${c.title}`, async () => {
    const base = await Deno.makeTempDir();
    try {
      const root = `${base}/root`;
      await Deno.mkdir(root);
      const error = await assertRejects(
        async () => installPackage(await c.archive(), { root, ...c.options }),
        PackageError,
      );
      assertEquals(error.code, c.code, error.message);
      if (c.entry !== undefined) {
        assertEquals(error.entry, c.entry, error.message);
        assert(error.message.includes(JSON.stringify(c.entry)), error.message);
      }
      assertNothingLeft(base);
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  });
}

Deno.test("hostile package refused: a digest that changes mid-stream", async () => {
  const base = await Deno.makeTempDir();
  try {
    const root = `${base}/root`;
    await Deno.mkdir(root);
    await Deno.mkdir(`${base}/a`);
    await Deno.writeTextFile(`${base}/a/SKILL.md`, skillMd("a"));
    await Deno.writeTextFile(`${base}/a/data.txt`, "one ".repeat(20_000));
    const a = await packSkill(`${base}/a`);
    await Deno.writeTextFile(`${base}/a/data.txt`, "two ".repeat(20_000));
    const b = await packSkill(`${base}/a`);
    await Deno.remove(`${base}/a`, { recursive: true });
    // The first half of the package the digest names, then the rest of another.
    const half = Math.floor(a.bytes!.length / 2);
    const stream = ReadableStream.from([
      a.bytes!.subarray(0, half),
      b.bytes!.subarray(half),
    ]);
    const error = await assertRejects(
      () => installPackage(stream, { root, digest: a.digest }),
      PackageError,
    );
    assertEquals(error.code, "digest-mismatch");
    assert(error.message.includes(a.digest));
    assertNothingLeft(base);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("hostile package refused: a source failing mid-stream leaves nothing", async () => {
  const base = await Deno.makeTempDir();
  try {
    const root = `${base}/root`;
    await Deno.mkdir(root);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 3) controller.enqueue(new Uint8Array(1000));
        else controller.error(new Error("connection reset"));
      },
    });
    const error = await assertRejects(
      () => installPackage(stream, { root }),
      PackageError,
    );
    assertEquals(error.code, "source");
    assert(error.message.includes("connection reset"));
    assertNothingLeft(base);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
