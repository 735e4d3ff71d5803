import {
  assert,
  assertEquals,
  assertFalse,
  assertNotEquals,
  assertRejects,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import {
  copySkillFolder,
  type CopyStats,
  DEFAULT_COPY_EXCLUDES,
  isExcluded,
  type SkillFileEntry,
  stableSkillFolderName,
  walkSkillFiles,
} from "./copy.ts";
import { skillCorpus } from "../tests/helpers/skill_fixture.ts";

const POSIX = Deno.build.os !== "windows";
// The real skills when ../shared is beside the clone, else generated ones.
const corpus = await skillCorpus();
const CORPUS = corpus.root;

/** What a tree holds: every entry (files, folders, symlinks) by relative path. */
async function treeDigest(root: string): Promise<Map<string, string>> {
  const digest = new Map<string, string>();
  async function visit(dir: string, rel: string): Promise<void> {
    for await (const entry of Deno.readDir(dir)) {
      const path = hostPath.join(dir, entry.name);
      const entryRel = rel ? `${rel}/${entry.name}` : entry.name;
      const info = await Deno.lstat(path);
      const mode = POSIX ? (info.mode! & 0o777).toString(8) : "";
      if (info.isSymlink) {
        digest.set(entryRel, `link ${await Deno.readLink(path)}`);
      } else if (info.isDirectory) {
        digest.set(entryRel, `dir ${mode}`);
        await visit(path, entryRel);
      } else {
        const hash = await crypto.subtle.digest(
          "SHA-256",
          await Deno.readFile(path),
        );
        digest.set(
          entryRel,
          `file ${mode} ${
            Array.from(new Uint8Array(hash), (b) => b.toString(16)).join("")
          }`,
        );
      }
    }
  }
  await visit(root, "");
  return digest;
}

/** Only the regular files of a digest. */
function filesOf(digest: Map<string, string>): Map<string, string> {
  return new Map([...digest].filter(([, v]) => v.startsWith("file ")));
}

interface Fixture {
  base: string;
  skill: string;
  outside: string;
  [Symbol.asyncDispose](): Promise<void>;
}

const BINARY = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256);

/** A skill with secrets, symlinks, an executable and a binary file. */
async function fixture(): Promise<Fixture> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-copy-" }),
  );
  const skill = hostPath.join(base, "skill");
  const outside = hostPath.join(base, "outside");
  const write = async (rel: string, text: string, mode?: number) => {
    const path = hostPath.join(skill, rel);
    await Deno.mkdir(hostPath.dirname(path), { recursive: true });
    await Deno.writeTextFile(path, text);
    if (mode !== undefined && POSIX) await Deno.chmod(path, mode);
  };
  await write("SKILL.md", "---\nname: skill\ndescription: d\n---\nBody\n");
  await write("scripts/run.sh", "#!/bin/sh\necho run\n", 0o755);
  await write("scripts/lib.py", "print(1)\n", 0o644);
  await write("reference/deep/nested/notes.md", "notes\n");
  await write(".git/config", "[core]\n");
  await write("sub/.git", "gitdir: ../.git/modules/sub\n");
  await write(".env", "TOKEN=secret\n");
  await write(".env.local", "TOKEN=secret\n");
  await write("credentials.json", "{}\n");
  await write("config/id_rsa", "key\n");
  await write("config/server.pem", "pem\n");
  await write(".ssh/known_hosts", "host\n");
  await write("env.example.txt", "kept\n");
  await Deno.mkdir(hostPath.join(skill, "assets"));
  await Deno.writeFile(hostPath.join(skill, "assets/blob.bin"), BINARY);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(hostPath.join(outside, "secret.txt"), "outside\n");
  if (POSIX) {
    await Deno.symlink(
      hostPath.join(outside, "secret.txt"),
      hostPath.join(skill, "link-to-file"),
    );
    await Deno.symlink(outside, hostPath.join(skill, "link-to-dir"));
    await Deno.symlink("SKILL.md", hostPath.join(skill, "inside-link"));
  }
  return {
    base,
    skill,
    outside,
    async [Symbol.asyncDispose]() {
      await Deno.remove(base, { recursive: true });
    },
  };
}

const EXPECTED_FILES = [
  "SKILL.md",
  "assets/blob.bin",
  "env.example.txt",
  "reference/deep/nested/notes.md",
  "scripts/lib.py",
  "scripts/run.sh",
];

Deno.test("isExcluded() leaves out the default secrets and .git anywhere", () => {
  for (
    const path of [
      ".git",
      ".git/config",
      "sub/.git",
      "a/b/.git/HEAD",
      ".env",
      "sub/.env",
      ".env.local",
      ".env.production",
      "credentials",
      "credentials.json",
      "config/credentials-prod.yaml",
      "id_rsa",
      "id_rsa.pub",
      "keys/ID_RSA",
      "id_ed25519",
      "deploy/id_ecdsa",
      "id_dsa.pub",
      ".git-credentials",
      ".pypirc",
      "signing/cert.p12",
      "cert.pfx",
      "server.pem",
      "tls/server.KEY",
      ".npmrc",
      ".netrc",
      ".ssh/config",
      "home/.ssh/id_ed25519",
      ".aws/credentials",
    ]
  ) {
    assert(isExcluded(path), `${path} should be excluded`);
  }
  for (
    const path of [
      "SKILL.md",
      "env.txt",
      "my.env",
      ".envrc",
      "docs/about-credentials.md",
      "keyboard.md",
      "identity.md",
      "p12.txt",
      "scripts/run.sh",
      "gitignore",
      ".gitignore",
      ".ssh", // a file named .ssh: the pattern is for folders
    ]
  ) {
    assertFalse(isExcluded(path), `${path} should be copied`);
  }
  assert(isExcluded(".ssh", undefined, { directory: true }));
  assertEquals(DEFAULT_COPY_EXCLUDES.length, 18);
});

Deno.test("isExcluded() lets a policy replace, widen and narrow the defaults", () => {
  assertFalse(isExcluded(".env", { excludes: [] }));
  assertFalse(isExcluded(".git/config", { excludes: ["*.log"] }));
  assert(isExcluded("out/run.log", { excludes: ["*.log"] }));
  const widened = { extraExcludes: ["node_modules/", "*.tmp"] };
  assert(isExcluded("node_modules/x/index.js", widened));
  assert(isExcluded("a/b.tmp", widened));
  assert(isExcluded(".env", widened));
  const narrowed = { includes: [".env.example"] };
  assertFalse(isExcluded(".env.example", narrowed));
  assert(isExcluded(".env.local", narrowed));
  const anchored = { excludes: ["assets/private/**", "/notes.txt", "a/*/c"] };
  assert(isExcluded("assets/private/x/y.png", anchored));
  assertFalse(isExcluded("other/assets/private/y.png", anchored));
  assert(isExcluded("notes.txt", anchored));
  assertFalse(isExcluded("sub/notes.txt", anchored));
  assert(isExcluded("a/b/c", anchored));
  assertFalse(isExcluded("a/b/x/c", anchored));
  assert(isExcluded("x/a.b", { excludes: ["**/a.?"] }));
  assert(isExcluded("a.b", { excludes: ["**/a.?"] }));
  assertThrows(() => isExcluded("x", { excludes: [""] }), TypeError);
  assertThrows(() => isExcluded("x", { excludes: ["/"] }), TypeError);
});

Deno.test({
  name:
    "copySkillFolder() copies regular files byte-identical, keeps the executable bit, skips secrets and symlinks",
  async fn() {
    await using t = await fixture();
    const before = await treeDigest(t.skill);
    const target = hostPath.join(t.base, "ws/skills/copy");
    const progress: CopyStats[] = [];
    const stats = await copySkillFolder(t.skill, target, {
      onProgress: (s) => progress.push(s),
    });
    const copied = await treeDigest(target);
    assertEquals([...filesOf(copied).keys()].sort(), EXPECTED_FILES);
    // Progress reports bytes as well as files: the last report, every byte.
    let total = 0;
    for (const rel of EXPECTED_FILES) {
      total += (await Deno.stat(hostPath.join(target, rel))).size;
    }
    assertEquals(progress.at(-1)!.bytes, total);
    assertEquals(stats.bytes, total);
    for (const [rel, digest] of filesOf(copied)) {
      assertEquals(digest, before.get(rel), rel);
    }
    assertEquals(
      await Deno.readFile(hostPath.join(target, "assets/blob.bin")),
      BINARY,
    );
    if (POSIX) {
      const mode = (await Deno.stat(hostPath.join(target, "scripts/run.sh")))
        .mode!;
      assertEquals(mode & 0o777, 0o755);
      assertEquals(
        (await Deno.stat(hostPath.join(target, "scripts/lib.py"))).mode! &
          0o111,
        0,
      );
      assertEquals(
        [...copied.values()].filter((v) => v.startsWith("link")),
        [],
      );
      assertEquals(stats.skippedSymlinks, 3);
    }
    assertEquals(stats.files, EXPECTED_FILES.length);
    // .git (folder), sub/.git (file), .env, .env.local, credentials.json,
    // config/id_rsa, config/server.pem, .ssh (folder)
    assertEquals(stats.excluded, 8);
    assertEquals(progress.at(-1), stats);
    assertEquals(await treeDigest(t.skill), before, "source unchanged");
  },
});

Deno.test({
  name:
    "copySkillFolder() again overwrites source files, keeps generated ones, never writes through symlinks",
  async fn() {
    await using t = await fixture();
    const before = await treeDigest(t.skill);
    const target = hostPath.join(t.base, "copy");
    await copySkillFolder(t.skill, target);
    // What a bootstrap or a model might have done to the copy:
    await Deno.writeTextFile(hostPath.join(target, "SKILL.md"), "changed");
    await Deno.writeTextFile(hostPath.join(target, "generated.txt"), "mine");
    await Deno.mkdir(hostPath.join(target, "scripts/__pycache__"));
    await Deno.writeTextFile(
      hostPath.join(target, "scripts/__pycache__/lib.pyc"),
      "cache",
    );
    if (POSIX) {
      await Deno.chmod(hostPath.join(target, "scripts/lib.py"), 0o444);
      await Deno.remove(hostPath.join(target, "env.example.txt"));
      await Deno.symlink(
        hostPath.join(t.outside, "secret.txt"),
        hostPath.join(target, "env.example.txt"),
      );
      // A folder of the source replaced by a symlink to outside.
      await Deno.remove(hostPath.join(target, "reference"), {
        recursive: true,
      });
      await Deno.symlink(t.outside, hostPath.join(target, "reference"));
    }
    const stats = await copySkillFolder(t.skill, target);
    assertEquals(stats.files, EXPECTED_FILES.length);
    const copied = await treeDigest(target);
    for (const rel of EXPECTED_FILES) {
      assertEquals(copied.get(rel), before.get(rel), rel);
    }
    assertEquals(
      await Deno.readTextFile(hostPath.join(target, "generated.txt")),
      "mine",
    );
    assertEquals(
      await Deno.readTextFile(
        hostPath.join(target, "scripts/__pycache__/lib.pyc"),
      ),
      "cache",
    );
    assertEquals(
      await Deno.readTextFile(hostPath.join(t.outside, "secret.txt")),
      "outside\n",
    );
    assertEquals(
      [...(await treeDigest(t.outside)).keys()],
      ["secret.txt"],
      "nothing written outside",
    );
    assertEquals(await treeDigest(t.skill), before, "source unchanged");
  },
});

Deno.test("copySkillFolder() refuses a target inside the source or equal to it", async () => {
  await using t = await fixture();
  const before = await treeDigest(t.skill);
  for (const target of [t.skill, hostPath.join(t.skill, "sub/copy")]) {
    await assertRejects(
      () => copySkillFolder(t.skill, target),
      TypeError,
      "the target is inside the source",
    );
  }
  if (POSIX) {
    const alias = hostPath.join(t.base, "alias");
    await Deno.symlink(t.skill, alias);
    await assertRejects(
      () => copySkillFolder(t.skill, hostPath.join(alias, "copy")),
      TypeError,
      "the target is inside the source",
    );
  }
  assertEquals(await treeDigest(t.skill), before);
});

Deno.test("copySkillFolder() gives clear errors for a missing source, a file source and a file target", async () => {
  await using t = await fixture();
  await assertRejects(
    () => copySkillFolder(hostPath.join(t.base, "missing"), t.outside),
    Deno.errors.NotFound,
    "no such folder",
  );
  await assertRejects(
    () => copySkillFolder(hostPath.join(t.skill, "SKILL.md"), `${t.base}/copy`),
    Deno.errors.NotADirectory,
    "it is not a folder",
  );
  await assertRejects(
    () => copySkillFolder(t.skill, hostPath.join(t.outside, "secret.txt")),
    Deno.errors.NotADirectory,
    "it is not a folder",
  );
});

Deno.test("copySkillFolder() stops on abort", async () => {
  await using t = await fixture();
  await assertRejects(
    () =>
      copySkillFolder(t.skill, `${t.base}/copy`, {
        signal: AbortSignal.abort(),
      }),
    DOMException,
  );
  // Abort while copying: many files, aborted at the first progress report.
  const many = hostPath.join(t.base, "many");
  await Deno.mkdir(many);
  await Promise.all(
    Array.from(
      { length: 1200 },
      (_, i) => Deno.writeTextFile(hostPath.join(many, `f${i}.txt`), "x"),
    ),
  );
  const controller = new AbortController();
  await assertRejects(
    () =>
      copySkillFolder(many, `${t.base}/many-copy`, {
        signal: controller.signal,
        onProgress: () => controller.abort(),
      }),
    DOMException,
  );
  let count = 0;
  for await (const _ of Deno.readDir(`${t.base}/many-copy`)) count++;
  assert(count < 1200, `copied ${count} files after the abort`);
});

Deno.test("copySkillFolder() copies every corpus skill byte-identical (fonts, archives, PDFs)", async () => {
  const base = await Deno.makeTempDir({ prefix: "skillrun-corpus-" });
  try {
    const names = [];
    for await (const entry of Deno.readDir(CORPUS)) {
      if (entry.isDirectory) names.push(entry.name);
    }
    assert(
      names.includes(corpus.name("canvas-design")),
      `no corpus at ${CORPUS}`,
    );
    assert(names.length >= (corpus.real ? 10 : 4));
    for (const name of names) {
      const source = hostPath.join(CORPUS, name);
      const target = hostPath.join(base, name);
      const before = await treeDigest(source);
      const stats = await copySkillFolder(source, target);
      const expected = new Map(
        [...filesOf(before)].filter(([rel]) => !isExcluded(rel)),
      );
      assertEquals(filesOf(await treeDigest(target)), expected, name);
      assertEquals(stats.files, expected.size);
      assertEquals(await treeDigest(source), before, `${name} unchanged`);
    }
    // The font-heavy skill really carries binaries.
    const fonts = [
      ...filesOf(await treeDigest(`${base}/${corpus.name("canvas-design")}`)),
    ].filter(([rel]) => rel.endsWith(".ttf"));
    assert(
      fonts.length >= (corpus.real ? 20 : 2),
      `only ${fonts.length} fonts`,
    );
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("walkSkillFiles() yields regular files in a stable order with size and executable bit", async () => {
  await using t = await fixture();
  const files: SkillFileEntry[] = [];
  for await (const file of walkSkillFiles(t.skill)) files.push(file);
  assertEquals(files.map((f) => f.relativePath), [
    "SKILL.md",
    "env.example.txt",
    "assets/blob.bin",
    "reference/deep/nested/notes.md",
    "scripts/lib.py",
    "scripts/run.sh",
  ]);
  const blob = files.find((f) => f.relativePath === "assets/blob.bin")!;
  assertEquals(blob.size, BINARY.length);
  assertEquals(blob.path, hostPath.join(t.skill, "assets", "blob.bin"));
  if (POSIX) {
    assertEquals(
      files.filter((f) => f.executable).map((f) => f.relativePath),
      ["scripts/run.sh"],
    );
    assertEquals(
      files.find((f) => f.relativePath === "scripts/run.sh")!.mode,
      0o755,
    );
  }
  const all: string[] = [];
  for await (const f of walkSkillFiles(t.skill, { excludes: [] })) {
    all.push(f.relativePath);
  }
  assert(all.includes(".env") && all.includes(".git/config"));
  assertFalse(all.some((p) => p.startsWith("link-to")), "symlinks skipped");
  await assertRejects(async () => {
    for await (
      const _ of walkSkillFiles(t.skill, undefined, {
        signal: AbortSignal.abort(),
      })
    ) {
      // never reached
    }
  }, DOMException);
});

Deno.test("stableSkillFolderName() is stable across processes and distinct per source path", async () => {
  const skill = { name: "pdf", basePath: "/skills/pdf" };
  const name = stableSkillFolderName(skill);
  assertEquals(name, stableSkillFolderName({ ...skill }));
  assertEquals(
    name,
    stableSkillFolderName({ name: "pdf", basePath: "/skills/pdf/" }),
  );
  assertNotEquals(
    name,
    stableSkillFolderName({ name: "pdf", basePath: "/other/pdf" }),
  );
  assert(/^pdf-[0-9a-f]{12}$/.test(name), name);
  assert(
    /^my-skill-[0-9a-f]{12}$/.test(
      stableSkillFolderName({ name: "my skill!", basePath: "/a" }),
    ),
  );
  assert(
    /^skill-[0-9a-f]{12}$/.test(
      stableSkillFolderName({ name: "技能", basePath: "/a" }),
    ),
  );
  assert(
    /^x-[0-9a-f]{12}$/.test(
      stableSkillFolderName({ name: "../x", basePath: "/a" }),
    ),
  );
  const long = stableSkillFolderName({ name: "a".repeat(200), basePath: "/" });
  assert(long.length <= 48 + 13, long);
  // Another process computes the same name.
  const module = new URL("./copy.ts", import.meta.url).href;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `--config=${
        hostPath.fromFileUrl(new URL("../deno.json", import.meta.url))
      }`,
      `import { stableSkillFolderName } from ${JSON.stringify(module)};
       console.log(stableSkillFolderName(${JSON.stringify(skill)}));`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(
    new TextDecoder().decode(output.stdout).trim(),
    name,
    new TextDecoder().decode(output.stderr),
  );
});

Deno.test("walkSkillFiles reports what it leaves out (links, not excluded ones) to onSkipped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/SKILL.md`, "x");
    await Deno.symlink("SKILL.md", `${dir}/link`);
    await Deno.symlink("SKILL.md", `${dir}/.env`); // excluded anyway
    const skipped: string[] = [];
    const files: string[] = [];
    for await (
      const file of walkSkillFiles(dir, undefined, {
        onSkipped: (entry) =>
          skipped.push(`${entry.kind}:${entry.relativePath}`),
      })
    ) files.push(file.relativePath);
    assertEquals(files, ["SKILL.md"]);
    assertEquals(skipped, ["symlink:link"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
