import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "@std/assert";
import { buildSkillTools } from "../tools/builder.ts";
import {
  INDEX_PATH,
  installFromIndex,
  installFromPath,
  installFromUrl,
  loadLockedPackages,
  lockPackage,
  PackageError,
  packSkill,
  readLock,
  verifyLock,
  writeSkillIndex,
} from "../package/mod.ts";
import { sha256Of } from "../package/_digest.ts";
import { anthropicsSkills, sharedTest } from "./helpers/shared_data.ts";

const CORPUS_DATA = anthropicsSkills();
const CORPUS = CORPUS_DATA.path;

/** A loopback HTTP server publishing a folder at /.well-known/agent-skills/. */
function serveSite(files: Map<string, Uint8Array>) {
  const hits: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const path = new URL(request.url).pathname;
      hits.push(path);
      const body = files.get(path);
      return body
        ? new Response(body as Uint8Array<ArrayBuffer>)
        : new Response("not found", { status: 404 });
    },
  );
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    hits,
    close: () => server.shutdown(),
  };
}

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "a well-known index served over HTTP: archive and skill-md entries install, are locked, and verify",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    const files = new Map<string, Uint8Array>();
    const site = serveSite(files);
    try {
      // The publisher's side: packages in a folder, indexed by `writeSkillIndex`.
      const publish = `${dir}/publish`;
      await Deno.mkdir(publish);
      await packSkill(`${CORPUS}canvas-design`, {
        output: `${publish}/canvas-design.zip`,
      });
      await packSkill(`${CORPUS}theme-factory`, {
        format: "tar.gz",
        output: `${publish}/theme-factory.tar.gz`,
      });
      const index = await writeSkillIndex(publish);
      assertEquals(index.skills.map((s) => s.name), [
        "canvas-design",
        "theme-factory",
      ]);
      const skillMd = await Deno.readFile(`${CORPUS}brand-guidelines/SKILL.md`);
      const withSkillMd = {
        ...index,
        skills: [...index.skills, {
          name: "brand-guidelines",
          type: "skill-md" as const,
          url: "/.well-known/agent-skills/brand-guidelines/SKILL.md",
          digest: sha256Of(skillMd),
        }],
      };
      const base = "/.well-known/agent-skills/";
      files.set(
        INDEX_PATH,
        new TextEncoder().encode(JSON.stringify(withSkillMd)),
      );
      files.set(
        `${base}canvas-design.zip`,
        await Deno.readFile(`${publish}/canvas-design.zip`),
      );
      files.set(
        `${base}theme-factory.tar.gz`,
        await Deno.readFile(`${publish}/theme-factory.tar.gz`),
      );
      files.set(`${base}brand-guidelines/SKILL.md`, skillMd);

      // The client's side.
      const into = `${dir}/skills`;
      for (
        const name of ["canvas-design", "theme-factory", "brand-guidelines"]
      ) {
        const pkg = await installFromIndex(site.origin, name, { root: into });
        assertEquals(pkg.name, name);
        await lockPackage(into, pkg, `${site.origin}#${name}`);
      }
      // The skill-md entry became a package of that one file, byte for byte.
      const locked = await loadLockedPackages(into);
      assertEquals(await Deno.readFile(`${locked[0]!.path}/SKILL.md`), skillMd);
      assertEquals(locked[0]!.files.map((f) => f.path), ["SKILL.md"]);
      const lock = await readLock(into);
      assertEquals(Object.keys(lock.skills), [
        "brand-guidelines",
        "canvas-design",
        "theme-factory",
      ]);
      assert((await verifyLock(into)).every((check) => check.ok));
      await using kit = await buildSkillTools({
        skills: await loadLockedPackages(into),
      });
      assertEquals(kit.skills.map((s) => s.name), [
        "brand-guidelines",
        "canvas-design",
        "theme-factory",
      ]);

      // A second install of a locked digest is served from the cache.
      const before = site.hits.length;
      await installFromIndex(site.origin, "canvas-design", { root: into });
      assertEquals(site.hits.slice(before), [INDEX_PATH]);

      // The site now serves other bytes under the same index digest: refused.
      files.set(
        `${base}theme-factory.tar.gz`,
        await Deno.readFile(`${publish}/canvas-design.zip`),
      );
      const error = await assertRejects(
        () =>
          installFromIndex(site.origin, "theme-factory", {
            root: `${dir}/other`,
          }),
        PackageError,
      );
      assertEquals(error.code, "digest-mismatch");
      // A skill the index does not have.
      const missing = await assertRejects(
        () => installFromIndex(site.origin, "nope", { root: into }),
        PackageError,
      );
      assertStringIncludes(missing.message, '"canvas-design"');
    } finally {
      await site.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "the lock detects a changed package: verify fails and buildSkillTools refuses it",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const into = `${dir}/skills`;
      const pkg = await installFromPath(`${CORPUS}algorithmic-art`, {
        root: into,
      });
      await lockPackage(into, pkg, "algorithmic-art");
      assert((await verifyLock(into))[0]!.ok);
      const file = `${pkg.path}/SKILL.md`;
      await Deno.chmod(file, 0o644);
      await Deno.writeTextFile(file, "\nchanged", { append: true });
      const [check] = await verifyLock(into);
      assert(!check!.ok);
      assert(check!.problems.some((p) => p.startsWith("SKILL.md: changed")));
      const error = await assertRejects(
        async () =>
          await buildSkillTools({ skills: await loadLockedPackages(into) }),
        Error,
      );
      assertStringIncludes(error.message, "SKILL.md: changed");
      // An added file is found too.
      await Deno.writeTextFile(
        file,
        await Deno.readTextFile(`${CORPUS}algorithmic-art/SKILL.md`),
      );
      assert((await verifyLock(into))[0]!.ok);
      await Deno.writeTextFile(`${pkg.path}/extra.sh`, "rm -rf /");
      assert(
        (await verifyLock(into))[0]!.problems.includes("extra.sh: added"),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "installFromUrl needs the digest and checks it; local archives and folders install",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    const files = new Map<string, Uint8Array>();
    const site = serveSite(files);
    try {
      const packed = await packSkill(`${CORPUS}internal-comms`, {
        output: `${dir}/ic.zip`,
      });
      files.set("/ic.zip", await Deno.readFile(`${dir}/ic.zip`));
      await assertRejects(
        () => installFromUrl(`${site.origin}/ic.zip`, "", { root: `${dir}/r` }),
        TypeError,
      );
      await assertRejects(
        () =>
          installFromUrl("http://example.com/ic.zip", packed.digest, {
            root: `${dir}/r`,
          }),
        TypeError,
      );
      const wrong = await assertRejects(
        () =>
          installFromUrl(`${site.origin}/ic.zip`, `sha256:${"e".repeat(64)}`, {
            root: `${dir}/r`,
          }),
        PackageError,
      );
      assertEquals(wrong.code, "digest-mismatch");
      const missing = await assertRejects(
        () =>
          installFromUrl(`${site.origin}/gone.zip`, packed.digest, {
            root: `${dir}/r`,
          }),
        PackageError,
      );
      assertStringIncludes(missing.message, "HTTP 404");
      const pkg = await installFromUrl(`${site.origin}/ic.zip`, packed.digest, {
        root: `${dir}/r`,
      });
      assertEquals(pkg.source, `${site.origin}/ic.zip`);
      const fromFile = await installFromPath(`${dir}/ic.zip`, {
        root: `${dir}/r2`,
      });
      const fromFolder = await installFromPath(`${CORPUS}internal-comms`, {
        root: `${dir}/r3`,
      });
      assertEquals(fromFile.digest, packed.digest);
      assertEquals(fromFolder.digest, packed.digest);
    } finally {
      await site.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a skill-md entry of an index is locked with both digests (the index's and the package's), and verify checks both", async () => {
  const dir = await Deno.makeTempDir();
  const skillMd = new TextEncoder().encode(
    "---\nname: notes\ndescription: Writes notes. Use for notes.\n---\n\n# Notes\n",
  );
  const published = sha256Of(skillMd);
  const files = new Map<string, Uint8Array>();
  files.set(
    INDEX_PATH,
    new TextEncoder().encode(JSON.stringify({
      $schema: "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
      skills: [{
        name: "notes",
        type: "skill-md",
        description: "Writes notes.",
        url: "/.well-known/agent-skills/notes/SKILL.md",
        digest: published,
      }],
    })),
  );
  files.set("/.well-known/agent-skills/notes/SKILL.md", skillMd);
  const site = serveSite(files);
  try {
    const into = `${dir}/skills`;
    const pkg = await installFromIndex(site.origin, "notes", { root: into });
    assertEquals(pkg.sourceDigest, published);
    assert(pkg.digest !== published, "the package is skillrun's own");
    await lockPackage(into, pkg, `${site.origin}#notes`);
    const entry = (await readLock(into)).skills.notes!;
    assertEquals([entry.sourceDigest, entry.digest], [published, pkg.digest]);
    assertEquals((await verifyLock(into)).map((c) => c.ok), [true]);
    // A lock whose source digest is not the index's fails verify, naming it.
    const lockPath = `${into}/skills.lock.json`;
    const lock = JSON.parse(await Deno.readTextFile(lockPath));
    lock.skills.notes.sourceDigest = `sha256:${"1".repeat(64)}`;
    await Deno.writeTextFile(lockPath, JSON.stringify(lock));
    const [check] = await verifyLock(into);
    assertEquals(check!.ok, false);
    assertStringIncludes(check!.problems.join("\n"), published);
  } finally {
    await site.close();
    await Deno.remove(dir, { recursive: true });
  }
});
