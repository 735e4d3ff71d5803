import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "@std/assert";
import { hostPath } from "../_internal/std.ts";
import { packSkill } from "../package/mod.ts";
import { anthropicsSkills, sharedTest } from "../tests/helpers/shared_data.ts";

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

/** Whether util-linux's `script` is here to give a command a terminal. */
const HAS_SCRIPT = await new Deno.Command("script", {
  args: ["--version"],
  stdout: "null",
  stderr: "null",
}).output().then((out) => out.success, () => false);

/** The CLI in a pseudo-terminal (stdout and stderr both on it). */
async function cliOnTerminal(cwd: string, ...args: string[]) {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
  const command = [Deno.execPath(), "run", "-A", "--config", CONFIG, CLI]
    .concat(args).map(quote).join(" ");
  const out = await new Deno.Command("script", {
    args: ["-qfec", command, "/dev/null"],
    cwd,
    stdin: "null",
    env: { SHELL: "/bin/sh" },
  }).output();
  return { code: out.code, text: new TextDecoder().decode(out.stdout) };
}

function randomFile(bytes: number): Uint8Array {
  const data = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65536) {
    crypto.getRandomValues(data.subarray(at, Math.min(bytes, at + 65536)));
  }
  return data;
}

Deno.test({
  name:
    "pack and add of a large package show progress on a terminal (bytes, files, rate), nothing extra when stderr is not one",
  ignore: !HAS_SCRIPT,
  async fn() {
    const dir = await Deno.makeTempDir();
    // A package URL that trickles in over 1.5 s.
    let body: Uint8Array = new Uint8Array();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => {
        let sent = 0;
        const step = Math.ceil(body.length / 20);
        return new Response(
          new ReadableStream({
            async pull(controller) {
              if (sent >= body.length) return controller.close();
              await new Promise((resolve) => setTimeout(resolve, 75));
              controller.enqueue(body.slice(sent, sent + step));
              sent += step;
            },
          }),
        );
      },
    );
    try {
      await Deno.mkdir(`${dir}/big`);
      await Deno.writeTextFile(
        `${dir}/big/SKILL.md`,
        "---\nname: big\ndescription: A large skill.\n---\n",
      );
      // Random bytes do not compress: packing 128 MB takes well over the
      // second before the line shows (48 MB took under one on a quiet
      // machine now and then: two CI simulations of eight saw no line).
      await Deno.writeFile(`${dir}/big/data.bin`, randomFile(128_000_000));

      // Not a terminal: the digest on stdout, one line on stderr, as before.
      const plain = await cli(dir, "pack", "big", "-o", "plain.zip");
      assertEquals(plain.code, 0, plain.stderr);
      const size = (await Deno.stat(`${dir}/plain.zip`)).size;
      assertEquals(plain.stderr, `wrote plain.zip (${size} bytes, 2 files)\n`);

      // A terminal: one line rewritten in place, then cleared.
      const shown = await cliOnTerminal(dir, "pack", "big", "-o", "tty.zip");
      assertEquals(shown.code, 0, shown.text);
      assertMatch(
        shown.text,
        // deno-lint-ignore no-control-regex
        /\r\x1b\[Kskillrun: packing "big" \([0-9.]+ MB, [12] files?, [0-9.]+ MB\/s\) \[[0-9.]+ s\]/,
      );
      assertStringIncludes(shown.text, `\r\x1b[K${plain.stdout.trim()}\r\n`);
      assertStringIncludes(
        shown.text,
        `wrote tty.zip (${size} bytes, 2 files)`,
      );

      // add from a slow URL: the bytes read so far and their rate.
      await Deno.mkdir(`${dir}/small`);
      await Deno.writeTextFile(
        `${dir}/small/SKILL.md`,
        "---\nname: small\ndescription: A small skill.\n---\n",
      );
      await Deno.writeFile(`${dir}/small/data.bin`, randomFile(200_000));
      const small = await packSkill(`${dir}/small`);
      body = small.bytes!;
      const url = `http://127.0.0.1:${server.addr.port}/small.zip`;
      const quiet = await cli(dir, "add", url, "--digest", small.digest);
      assertEquals(quiet.code, 0, quiet.stderr);
      assertMatch(quiet.stderr, /^added small in [^\n]+\n$/);
      const loud = await cliOnTerminal(
        dir,
        "add",
        url,
        "--digest",
        small.digest,
        "--into",
        "tty-skills",
      );
      assertEquals(loud.code, 0, loud.text);
      assertMatch(
        loud.text,
        // deno-lint-ignore no-control-regex
        /\r\x1b\[Kskillrun: reading "http:\/\/127\.0\.0\.1:[0-9]+\/small\.zip" \([0-9.]+ KB, [0-9.]+ KB\/s\) \[[0-9.]+ s\]/,
      );
      assertStringIncludes(loud.text, `\r\x1b[Ksmall ${small.digest}\r\n`);
    } finally {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
