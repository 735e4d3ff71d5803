import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { hostPath } from "../_internal/std.ts";
import { packSkill } from "../package/mod.ts";
import { anthropicsSkills, sharedTest } from "../_internal/shared_data.ts";

const CLI = hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url));
const CONFIG = hostPath.fromFileUrl(new URL("../deno.json", import.meta.url));
const CORPUS_DATA = anthropicsSkills();
const CORPUS = CORPUS_DATA.path;

async function cli(cwd: string, ...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, CLI, ...args],
    cwd,
    stdin: "null",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test({
  ...sharedTest(CORPUS_DATA, "cli pack, add, verify, index: the whole round"),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      // pack prints the digest packSkill computes, for both formats.
      const zip = await cli(
        dir,
        "pack",
        `${CORPUS}skill-creator`,
        "-o",
        "sc.zip",
      );
      assertEquals(zip.code, 0, zip.stderr);
      const expected = await packSkill(`${CORPUS}skill-creator`);
      assertEquals(zip.stdout.trim(), expected.digest);
      const tgz = await cli(
        dir,
        "pack",
        `${CORPUS}webapp-testing`,
        "--format",
        "tar.gz",
      );
      assertEquals(tgz.code, 0, tgz.stderr);
      assert((await Deno.stat(`${dir}/webapp-testing.tar.gz`)).isFile);

      // add: a local package with its digest, a folder; the lock records them.
      const added = await cli(
        dir,
        "add",
        "sc.zip",
        "--digest",
        expected.digest,
      );
      assertEquals(added.code, 0, added.stderr);
      assertEquals(added.stdout.trim(), `skill-creator ${expected.digest}`);
      assertEquals((await cli(dir, "add", `${CORPUS}frontend-design`)).code, 0);
      const lock = JSON.parse(
        await Deno.readTextFile(`${dir}/skills/skills.lock.json`),
      );
      assertEquals(Object.keys(lock.skills), [
        "frontend-design",
        "skill-creator",
      ]);
      assertEquals(lock.skills["skill-creator"].digest, expected.digest);
      assertEquals(lock.skills["skill-creator"].source, `${dir}/sc.zip`);

      // a wrong digest installs nothing and exits 1.
      const wrong = await cli(
        dir,
        "add",
        "webapp-testing.tar.gz",
        "--digest",
        `sha256:${"0".repeat(64)}`,
      );
      assertEquals(wrong.code, 1);
      assertStringIncludes(wrong.stderr, "expected sha256:000");
      // a URL without a digest is a usage error.
      const noDigest = await cli(dir, "add", "https://example.com/x.zip");
      assertEquals(noDigest.code, 2);
      assertStringIncludes(noDigest.stderr, "--digest");

      // verify: ok, then a changed file makes it exit 1 naming the file.
      const ok = await cli(dir, "verify");
      assertEquals(ok.code, 0, ok.stdout + ok.stderr);
      assertStringIncludes(ok.stdout, "ok  skill-creator");
      const installed = `${dir}/skills/sha256-${
        expected.digest.slice(7)
      }/skill-creator/SKILL.md`;
      await Deno.chmod(installed, 0o644);
      await Deno.writeTextFile(installed, "tampered", { append: true });
      const bad = await cli(dir, "verify", "skills");
      assertEquals(bad.code, 1);
      assertStringIncludes(bad.stdout, "MISMATCH  skill-creator");
      assertStringIncludes(bad.stdout, "SKILL.md: changed");

      // index: a well-known index of the packages, with absolute URLs.
      await Deno.mkdir(`${dir}/site`);
      await Deno.rename(`${dir}/sc.zip`, `${dir}/site/sc.zip`);
      await Deno.rename(
        `${dir}/webapp-testing.tar.gz`,
        `${dir}/site/webapp-testing.tar.gz`,
      );
      const indexed = await cli(
        dir,
        "index",
        "site",
        "--base-url",
        "https://skills.example/.well-known/agent-skills",
      );
      assertEquals(indexed.code, 0, indexed.stderr);
      const index = JSON.parse(
        await Deno.readTextFile(`${dir}/site/index.json`),
      );
      assertEquals(
        index.$schema,
        "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
      );
      assertEquals(index.skills[0], {
        name: "skill-creator",
        type: "archive",
        description: index.skills[0].description,
        url: "https://skills.example/.well-known/agent-skills/sc.zip",
        digest: expected.digest,
      });
      assertEquals(index.skills[1].name, "webapp-testing");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "cli add from a well-known index served on loopback",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    const site = `${dir}/site`;
    await Deno.mkdir(site);
    await packSkill(`${CORPUS}brand-guidelines`, { output: `${site}/bg.zip` });
    const indexed = await cli(dir, "index", "site");
    assertEquals(indexed.code, 0, indexed.stderr);
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        const path = new URL(request.url).pathname;
        const prefix = "/.well-known/agent-skills/";
        if (!path.startsWith(prefix)) {
          return new Response("no", { status: 404 });
        }
        try {
          return new Response(
            await Deno.readFile(`${site}/${path.slice(prefix.length)}`),
          );
        } catch {
          return new Response("no", { status: 404 });
        }
      },
    );
    try {
      const origin = `http://127.0.0.1:${server.addr.port}`;
      const added = await cli(
        dir,
        "add",
        `${origin}#brand-guidelines`,
        "--into",
        "vendor",
      );
      assertEquals(added.code, 0, added.stderr);
      assertStringIncludes(added.stdout, "brand-guidelines sha256:");
      const verified = await cli(dir, "verify", "vendor");
      assertEquals(verified.code, 0, verified.stdout);
      const missing = await cli(
        dir,
        "add",
        `${origin}#nope`,
        "--into",
        "vendor",
      );
      assertEquals(missing.code, 1);
      assertStringIncludes(missing.stderr, 'no skill named "nope"');
    } finally {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
