import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { HttpClient } from "./http.ts";
import {
  collectUploadEntries,
  multipartBody,
  type MultipartPart,
  type UploadEntry,
} from "./upload.ts";
import { serve } from "../../tests/helpers/remote_servers.ts";
import { skillCorpus } from "../../tests/helpers/skill_fixture.ts";

// The real skills when ../shared is beside the clone, else generated ones.
const corpus = await skillCorpus();
const CANVAS = corpus.skill("canvas-design");
const ARTIFACTS = corpus.real
  ? corpus.skill("web-artifacts-builder")
  : corpus.skill("skill-creator");
const ARTIFACTS_SCRIPT = corpus.real
  ? "scripts/init-artifact.sh"
  : "scripts/init.sh";
const POSIX = Deno.build.os !== "windows";

async function sha256(data: Uint8Array | ArrayBuffer): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as BufferSource);
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

interface Received {
  name: string;
  filename: string | null;
  hash: string;
  size: number;
}

/** A server that parses each multipart request with Request.formData(). */
function receiver() {
  const requests: { bytes: number; parts: Received[] }[] = [];
  const server = serve(async (request) => {
    const raw = new Uint8Array(await request.arrayBuffer());
    const form = await new Response(raw, {
      headers: { "content-type": request.headers.get("content-type")! },
    }).formData();
    const parts: Received[] = [];
    for (const [name, value] of form) {
      if (typeof value === "string") {
        const bytes = new TextEncoder().encode(value);
        parts.push({
          name,
          filename: null,
          hash: await sha256(bytes),
          size: bytes.length,
        });
      } else {
        const bytes = new Uint8Array(await value.arrayBuffer());
        parts.push({
          name,
          filename: value.name,
          hash: await sha256(bytes),
          size: bytes.length,
        });
      }
    }
    requests.push({ bytes: raw.length, parts });
    return Response.json({ ok: true });
  });
  return { server, requests };
}

function partsOf(entries: readonly UploadEntry[]): MultipartPart[] {
  return entries.flatMap((entry) => [
    {
      name: "metadata",
      filename: "metadata",
      contentType: "application/json",
      content: JSON.stringify({
        path: `/w/${entry.relativePath}`,
        mode: entry.mode.toString(8),
      }),
    },
    {
      name: "file",
      filename: entry.relativePath,
      content: { path: entry.localPath, size: entry.size },
    },
  ]);
}

async function post(url: string, parts: MultipartPart[]): Promise<number> {
  const { body, contentType, length } = multipartBody(parts);
  const response = await new HttpClient({ baseUrl: url }).request({
    method: "POST",
    path: "/files/upload",
    body,
    headers: { "content-type": contentType },
  });
  await response.body?.cancel();
  return length;
}

Deno.test("upload: canvas-design and a .tar.gz arrive byte-identical in one request", async () => {
  const entries = [
    ...await collectUploadEntries(CANVAS),
    ...await collectUploadEntries(ARTIFACTS),
  ];
  assert(entries.some((e) => e.relativePath.endsWith(".ttf")));
  assert(entries.some((e) => e.relativePath.endsWith(".tar.gz")));
  const { server, requests } = receiver();
  await using _ = server;
  const length = await post(server.url, partsOf(entries));
  assertEquals(server.count(), 1);
  assertEquals(requests[0]!.bytes, length);
  const files = requests[0]!.parts.filter((p) => p.name === "file");
  assertEquals(files.length, entries.length);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const local = await Deno.readFile(entry.localPath);
    assertEquals(files[i]!.filename, entry.relativePath);
    assertEquals(files[i]!.size, entry.size);
    assertEquals(files[i]!.hash, await sha256(local), entry.relativePath);
  }
  const metadata = requests[0]!.parts.filter((p) => p.name === "metadata");
  assertEquals(metadata.length, entries.length);
  if (POSIX) {
    const script = entries.find((e) => e.relativePath === ARTIFACTS_SCRIPT);
    assert(script !== undefined && (script.mode & 0o100) !== 0);
  }
});

Deno.test("upload: the copy policy holds (secrets left out, symlinks not followed, exec bits kept)", async () => {
  const base = await Deno.makeTempDir({ prefix: "skillrun-upload-" });
  try {
    const skill = hostPath.join(base, "skill");
    await Deno.mkdir(hostPath.join(skill, "scripts"), { recursive: true });
    await Deno.mkdir(hostPath.join(skill, ".git"));
    await Deno.mkdir(hostPath.join(skill, ".ssh"));
    await Deno.writeTextFile(
      hostPath.join(skill, "SKILL.md"),
      "---\nname: s\n---\n",
    );
    await Deno.writeTextFile(
      hostPath.join(skill, "scripts", "run.sh"),
      "echo hi\n",
      { mode: 0o755 },
    );
    for (
      const secret of [
        ".env",
        ".env.local",
        "id_rsa",
        "ID_ED25519.pub",
        "server.pem",
        "credentials.json",
        ".npmrc",
        ".git/config",
        ".ssh/known_hosts",
      ]
    ) {
      await Deno.writeTextFile(
        hostPath.join(skill, secret),
        "TOKEN=do-not-upload",
      );
    }
    await Deno.writeTextFile(hostPath.join(base, "outside.txt"), "outside");
    await Deno.mkdir(hostPath.join(base, "outdir"));
    await Deno.writeTextFile(hostPath.join(base, "outdir", "x.txt"), "x");
    if (POSIX) {
      await Deno.symlink(
        hostPath.join(base, "outside.txt"),
        hostPath.join(skill, "link.txt"),
      );
      await Deno.symlink(
        hostPath.join(base, "outdir"),
        hostPath.join(skill, "linkdir"),
      );
    }
    const entries = await collectUploadEntries(skill);
    assertEquals(entries.map((e) => e.relativePath), [
      "SKILL.md",
      "scripts/run.sh",
    ]);
    if (POSIX) {
      assertEquals(entries[1]!.mode & 0o777, 0o755);
      assertEquals(entries[0]!.mode & 0o111, 0);
    }
    const { server, requests } = receiver();
    await using _ = server;
    await post(server.url, partsOf(entries));
    const sent = requests[0]!.parts.filter((p) => p.name === "file").map((p) =>
      p.filename
    );
    assertEquals(sent, ["SKILL.md", "scripts/run.sh"]);

    const widened = await collectUploadEntries(skill, {
      policy: { includes: [".env.local"], extraExcludes: ["*.sh"] },
    });
    assertEquals(widened.map((e) => e.relativePath), [
      ".env.local",
      "SKILL.md",
    ]);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("upload: 2,000 files, odd names and bytes that look like boundaries, in one request", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-upload-" });
  try {
    const parts: MultipartPart[] = [];
    const hashes: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const bytes = new TextEncoder().encode(
        `\r\n--boundary\r\n${"\0\xff".repeat(i % 7)}file ${i}\r\n--`,
      );
      const path = hostPath.join(dir, `f${i}`);
      await Deno.writeFile(path, bytes);
      hashes.push(await sha256(bytes));
      parts.push({
        name: "file",
        filename: `dir ${i % 3}/é ${i}.bin`,
        content: { path, size: bytes.length },
      });
    }
    const big = crypto.getRandomValues(new Uint8Array(65536));
    const bigBytes = new Uint8Array(700_000);
    for (let i = 0; i < bigBytes.length; i += big.length) {
      bigBytes.set(
        big.subarray(0, Math.min(big.length, bigBytes.length - i)),
        i,
      );
    }
    await Deno.writeFile(hostPath.join(dir, "big"), bigBytes);
    parts.push({
      name: "file",
      filename: "big.bin",
      content: { path: hostPath.join(dir, "big"), size: bigBytes.length },
    });
    hashes.push(await sha256(bigBytes));
    parts.push({ name: "file", filename: "empty", content: new Uint8Array(0) });
    hashes.push(await sha256(new Uint8Array(0)));
    parts.push({ name: "note", content: "plain ünïcode text" });
    const { server, requests } = receiver();
    await using _ = server;
    const length = await post(server.url, parts);
    assertEquals(server.count(), 1);
    assertEquals(requests[0]!.bytes, length);
    const got = requests[0]!.parts;
    assertEquals(got.length, parts.length);
    for (let i = 0; i < hashes.length; i++) {
      assertEquals(got[i]!.hash, hashes[i], `part ${i}`);
    }
    assertEquals(got[0]!.filename, "dir 0/é 0.bin");
    assertEquals(
      got.at(-1)!.hash,
      await sha256(new TextEncoder().encode("plain ünïcode text")),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("multipartBody: a file that shrank is an error of the stream, naming it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = hostPath.join(dir, "a.bin");
    await Deno.writeFile(path, new Uint8Array(300_000));
    const small = hostPath.join(dir, "b.bin");
    await Deno.writeFile(small, new Uint8Array(10));
    for (const [file, size] of [[path, 400_000], [small, 20]] as const) {
      const { body } = multipartBody([{
        name: "f",
        filename: "a",
        content: { path: file, size },
      }]);
      const error = await assertRejects(() => new Response(body).arrayBuffer());
      assertStringIncludes(String(error), "changed while uploading");
      assertStringIncludes(String(error), file);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("multipartBody: small files read ahead arrive in order; a vanished one is the stream's error at its turn", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const parts: MultipartPart[] = [];
    for (let i = 0; i < 100; i++) {
      const path = hostPath.join(dir, `f${i}.txt`);
      // sizes cross chunk boundaries: 0 to 60 KiB
      const text = String(i).padEnd((i * 613) % 61_440, "x");
      await Deno.writeTextFile(path, text);
      parts.push({
        name: "file",
        filename: `f${i}.txt`,
        content: { path, size: text.length },
      });
    }
    const boundary = "b-read-ahead";
    const whole = await new Response(multipartBody(parts, { boundary }).body)
      .text();
    const names = [...whole.matchAll(/filename="(f\d+)\.txt"/g)].map((m) =>
      m[1]
    );
    assertEquals(names, parts.map((_, i) => `f${i}`));
    for (
      const [i, chunk] of whole.split(`--${boundary}`).slice(1, -1)
        .entries()
    ) {
      const body = chunk.slice(chunk.indexOf("\r\n\r\n") + 4, -2);
      assertEquals(body, String(i).padEnd((i * 613) % 61_440, "x"));
    }

    const missing = hostPath.join(dir, "f70.txt");
    await Deno.remove(missing);
    const error = await assertRejects(() =>
      new Response(multipartBody(parts, { boundary }).body).arrayBuffer()
    );
    assert(error instanceof Deno.errors.NotFound, String(error));
    assertStringIncludes(String(error), "f70.txt");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
Deno.test("multipartBody: abort errors the stream and closes the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = hostPath.join(dir, "a.bin");
    await Deno.writeFile(path, new Uint8Array(2_000_000));
    const controller = new AbortController();
    const { body } = multipartBody(
      [{ name: "f", filename: "a", content: { path, size: 2_000_000 } }],
      { signal: controller.signal },
    );
    const reader = body.getReader();
    await reader.read();
    await reader.read();
    controller.abort(new DOMException("stop", "AbortError"));
    await assertRejects(() => reader.read(), DOMException, "stop");
    // cancel before any read closes nothing and throws nothing
    const again = multipartBody([{
      name: "f",
      filename: "a",
      content: { path, size: 2_000_000 },
    }]);
    await again.body.cancel();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("multipartBody refuses invalid parts and boundaries", () => {
  assertThrows(
    () => multipartBody([{ name: "", content: "x" }]),
    TypeError,
    "no name",
  );
  assertThrows(
    () => multipartBody([{ name: "f", content: { path: "/x", size: -1 } }]),
    TypeError,
    "size",
  );
  assertThrows(
    () => multipartBody([{ name: "f", content: 5 as unknown as string }]),
    TypeError,
  );
  assertThrows(
    () => multipartBody([], { boundary: "bad boundary\r\n" }),
    TypeError,
  );
  assertThrows(
    () => multipartBody([{ name: "f", contentType: "a\r\nX: y", content: "" }]),
    TypeError,
    "line break",
  );
  const empty = multipartBody([], { boundary: "b" });
  assertEquals(empty.length, "--b--\r\n".length);
});
