/**
 * Security suite: conversation ids and roots, environment names, shell syntax
 * in tool parameters, secrets in every output channel, runaway work and a
 * thousand concurrent calls, in conversation mode.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertLess,
  assertRejects,
} from "../helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import { FallbackSearch } from "../../search/fallback.ts";
import { SearchTimeoutError } from "../../search/errors.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";
import {
  assertNoSecret,
  assertOk,
  assertRefused,
  SECRET_PEM,
  SECRET_TOKEN,
  securityCases,
  type World,
} from "./_harness.ts";

/** Prepares the configured skill, so its secrets are in every command's env. */
async function prepareApi(world: World): Promise<void> {
  assertOk(await world.call("skill", { name: "api" }), "Base directory");
}

/**
 * The live child processes of this process that run the fallback's matching
 * code (a Deno process whose main module is a `data:` URL) over `root` (its
 * read permission names it), so that other tests' searches do not count.
 */
function liveMatchers(root: string): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || Number(fields[1]) !== Deno.pid) continue;
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (
        /(^|\/|\0)(grep|find|bash)\0/.test(cmdline) && cmdline.includes(root)
      ) {
        found.push(Number(entry.name));
      }
    } catch {
      // ended
    }
  }
  return found;
}

const BAD_IDS = [
  "..",
  ".",
  "../other",
  "a/../../x",
  "/etc",
  "victim/../other",
  "a\u0000b",
  "%2e%2e",
  "\uff0e\uff0e",
  "a".repeat(129),
  "-rf",
  " victim",
];

const BAD_ENV_NAMES = [
  "A;touch pwned",
  "$(touch pwned)",
  "BASH_FUNC_x%%",
  "A B",
  "X=Y",
  "1ABC",
  "`id`",
  "",
  "A\nB",
];

securityCases("runtime", [
  {
    name: "conversation ids that try to escape are refused and create nothing",
    async attack(world) {
      for (const id of BAD_IDS) {
        await assertRejects(
          () =>
            LocalSkillRuntime.create({
              conversationsRoot: world.root,
              conversationId: id,
            }),
          TypeError,
        );
      }
      const names = [...Deno.readDirSync(world.root)].map((e) => e.name).sort();
      assertEquals(names, ["other", "victim"]);
    },
    async control() {
      const root = await Deno.realPath(await Deno.makeTempDir());
      try {
        await using runtime = await LocalSkillRuntime.create({
          conversationsRoot: root,
          conversationId: "thread.2026-12_01",
        });
        assertEquals(runtime.workspace, `${root}/thread.2026-12_01`);
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    },
  },
  {
    name: "conversations roots that try to escape are refused",
    async attack() {
      for (
        const root of ["relative/root", "/", "/tmp/..", "//", "", "  "]
      ) {
        await assertRejects(
          () =>
            LocalSkillRuntime.create({
              conversationsRoot: root,
              conversationId: "x",
            }),
          TypeError,
        );
      }
    },
    async control(world) {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: `${world.root}/./nested/../`,
        conversationId: "victim",
      });
      assertEquals(runtime.workspace, world.workspace);
    },
  },
  {
    name: "a workspace planted beforehand as a symlink to outside is refused",
    async setup(world) {
      await Deno.symlink(world.outside, `${world.root}/planted`);
    },
    async attack(world) {
      await assertRejects(
        () =>
          LocalSkillRuntime.create({
            conversationsRoot: world.root,
            conversationId: "planted",
          }),
        TypeError,
        "symbolic link",
      );
      assert(
        !(await Deno.stat(`${world.outside}/skills`).catch(() => null)),
        "skills/ was made outside",
      );
    },
    async control(world) {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: world.root,
        conversationId: "victim",
      });
      assertEquals(runtime.workspace, world.workspace);
    },
  },
  {
    name:
      "environment names that try injection are refused, values stay literal",
    async attack(world) {
      for (const name of BAD_ENV_NAMES) {
        await assertRejects(
          () =>
            world.runtime.execute({ command: "true", env: { [name]: "1" } }),
          TypeError,
        );
        let refused = false;
        try {
          new SkillRuntimeConfig({ env: { [name]: "1" } });
        } catch (error) {
          refused = error instanceof TypeError;
        }
        assert(refused, `config accepted ${JSON.stringify(name)}`);
      }
      assert(!(await Deno.stat(`${world.workspace}/pwned`).catch(() => null)));
    },
    async control(world) {
      const result = await world.runtime.execute({
        command: 'printf %s "$VALUE"',
        env: { VALUE: "$(touch pwned); `id`" },
      });
      assertEquals(result.stdout, "$(touch pwned); `id`");
      assert(!(await Deno.stat(`${world.workspace}/pwned`).catch(() => null)));
    },
  },
  {
    name: "shell syntax in every tool parameter is never run",
    async attack(world) {
      const evil = [
        "$(touch pwned)",
        "`touch pwned`",
        "; touch pwned",
        "| touch pwned",
        "&& touch pwned",
        "$(touch ../../outside/pwned)",
      ];
      for (const [i, s] of evil.entries()) {
        await world.call("read", { file_path: s });
        await world.call("write", { file_path: `w${i}.txt`, content: s });
        await world.call("edit", {
          file_path: `w${i}.txt`,
          old_string: s,
          new_string: `${s}!`,
        });
        await world.call("ls", { path: s });
        await world.call("glob", { pattern: s });
        await world.call("grep", { pattern: s, glob: s, type: "ts" });
        await world.call("grep", { pattern: s, path: s });
        await world.call("publish_file", {
          file_path: "alive.txt",
          file_name: s.replace(/\//g, "_"),
          content_type: "text/plain",
        });
      }
      assert(!(await Deno.stat(`${world.workspace}/pwned`).catch(() => null)));
    },
    async control(world) {
      assertOk(
        await world.call("read", { file_path: "w0.txt" }),
        "$(touch pwned)!",
      );
      assertOk(
        await world.call("grep", { pattern: "touch", output_mode: "count" }),
      );
    },
  },
  {
    name:
      "secrets never reach bash output, whole, multi-line or cut at the collector's boundary",
    async attack(world) {
      await prepareApi(world);
      const direct = await world.sh(
        'echo "$API_TOKEN"; printf "%s\\n" "$API_KEY_PEM"; echo "$API_TOKEN" >&2; exit 3',
      );
      assertNoSecret(direct.text);
      assert(direct.text.includes("[redacted]"), direct.text);
      // The tool keeps 15 000 characters of head and of tail: each cut
      // falls 10 characters into a secret.
      const cut = await world.sh(
        "head -c 14990 /dev/zero | tr '\\0' x; printf %s \"$API_TOKEN\"; head -c 50000 /dev/zero | tr '\\0' z; printf %s \"$API_TOKEN\"; head -c 14990 /dev/zero | tr '\\0' y",
      );
      assert(cut.text.includes("characters omitted"), cut.text.slice(0, 100));
      assertNoSecret(cut.text);
    },
    async control(world) {
      await prepareApi(world);
      assertOk(
        await world.sh("echo $MODE production"),
        "[redacted] production",
      );
    },
  },
  {
    name:
      "secrets never reach read, grep, ls, glob, publish_file or their errors",
    async attack(world) {
      await prepareApi(world);
      await Deno.writeTextFile(
        `${world.workspace}/leak.txt`,
        `token ${SECRET_TOKEN}\n${SECRET_PEM}\n${
          "x".repeat(1990)
        }${SECRET_TOKEN}\n`,
      );
      await Deno.writeTextFile(
        `${world.workspace}/${SECRET_TOKEN}.txt`,
        "named\n",
      );
      const outputs = [
        await world.call("read", { file_path: "leak.txt" }),
        await world.call("grep", { pattern: ".", output_mode: "content" }),
        await world.call("grep", { pattern: "named", output_mode: "count" }),
        await world.call("grep", {
          pattern: "PRIVATE|MII|k3Y",
          output_mode: "content",
          context: 3,
        }),
        await world.call("ls", {}),
        await world.call("glob", { pattern: "*.txt" }),
        await world.call("read", { file_path: `missing-${SECRET_TOKEN}` }),
        await world.call("publish_file", { file_path: `${SECRET_TOKEN}.txt` }),
        await world.call("write", {
          file_path: `${SECRET_TOKEN}/x`,
          content: "",
        }),
      ];
      for (const output of outputs) assertNoSecret(output.text);
      assertNoSecret(world.kit.tool("skill")!.description);
    },
    async control(world) {
      assertOk(await world.call("read", { file_path: "alive.txt" }), "alive");
      assert(world.kit.tool("skill")!.description.includes("production data"));
    },
  },
  {
    name:
      "a failing bootstrap's error never shows part of a secret at its tail cut or at the collector's cut",
    world: {
      // The collector keeps 1 500 bytes of head and of tail: each of its
      // cuts falls 10 bytes into a secret; the error shows the last 2 000
      // characters; the first secret straddles that cut too.
      maxOutputBytes: 3000,
      bootstrap: [
        'if [ -e ../../second ]; then head -c 1490 /dev/zero | tr "\\0" x >&2; printf %s "$API_TOKEN" >&2; head -c 5000 /dev/zero | tr "\\0" z >&2; printf %s "$API_TOKEN" >&2; head -c 1490 /dev/zero | tr "\\0" y >&2; exit 2; fi; printf %s "$API_TOKEN" >&2; head -c 1990 /dev/zero | tr "\\0" x >&2; exit 1',
      ],
    },
    async attack(world) {
      const first = await world.call("skill", { name: "api" });
      assertRefused(first, "bootstrap command 1 of 1 exited with code 1");
      assertNoSecret(first.text);
      assertOk(await world.call("write", { file_path: "second", content: "" }));
      const second = await world.call("skill", { name: "api" });
      assertRefused(second, "bootstrap command 1 of 1 exited with code 2");
      assert(second.text.includes("bytes omitted"), second.text.slice(0, 300));
      assertNoSecret(second.text);
    },
    async control(world) {
      assertOk(await world.call("read", { file_path: "alive.txt" }));
    },
  },
  {
    name:
      "a catastrophic regex answers at once without ripgrep (the shell engine: grep -E, re2js), and no process is left",
    world: { useRipgrep: false, limits: { searchTimeoutMs: 4000 } },
    async setup(world) {
      await Deno.writeTextFile(
        `${world.workspace}/evil.txt`,
        `${"a".repeat(40)}b\n`,
      );
    },
    async attack(world) {
      const start = performance.now();
      const result = await world.call("grep", { pattern: "(a+)+$" });
      assertOk(result);
      assertEquals(result.text.includes("evil.txt"), false, result.text);
      assertLess(performance.now() - start, 4000);
      // No child process that searched is left.
      await new Promise((r) => setTimeout(r, 200));
      assertEquals(
        liveMatchers(world.workspace),
        [],
        "a matching process survived",
      );
    },
    async control(world) {
      assertOk(await world.call("grep", { pattern: "a+b$" }), "evil.txt");
    },
  },
  {
    name:
      "a catastrophic regex is harmless over the file system interface (re2js, linear time), and a long match stops at its time limit",
    async setup(world) {
      await Deno.writeTextFile(
        `${world.workspace}/evil.txt`,
        `${"a".repeat(40)}b\n`,
      );
      await Deno.writeTextFile(
        `${world.workspace}/big.txt`,
        `${"ab".repeat(500)}\n`.repeat(20_000),
      );
    },
    async attack(world) {
      const search = new FallbackSearch({
        fs: new LocalFileSystem({ cwd: world.workspace }),
        local: false,
      });
      const start = performance.now();
      const evil = await search.grep({
        pattern: "(a+)+$",
        path: `${world.workspace}/evil.txt`,
        timeoutMs: 4000,
      });
      assertEquals(evil.totalEntries, 0);
      assertLess(performance.now() - start, 4000);
      // 20 MB that `(.*a){12}[xy]` costs re2js about 1 s per MB: stopped
      // inside the file, between windows of lines.
      const slow = performance.now();
      await assertRejects(
        () => search.grep({ pattern: "(.*a){12}[xy]", timeoutMs: 500 }),
        SearchTimeoutError,
      );
      assertLess(performance.now() - slow, 2500);
    },
    async control() {
      const dir = await Deno.makeTempDir();
      try {
        await Deno.writeTextFile(`${dir}/evil.txt`, `${"a".repeat(40)}b\n`);
        const result = await new FallbackSearch({
          fs: new LocalFileSystem({ cwd: dir }),
          local: false,
        }).grep({ pattern: "a+b$", outputMode: "count" });
        assertEquals(result.totalEntries, 1);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  },
  {
    name: "a catastrophic regex is harmless with ripgrep",
    world: { useRipgrep: true, limits: { searchTimeoutMs: 5000 } },
    async setup(world) {
      await Deno.writeTextFile(
        `${world.workspace}/evil.txt`,
        `${"a".repeat(40)}b\n`,
      );
    },
    async attack(world) {
      const start = performance.now();
      assertOk(
        await world.call("grep", { pattern: "(a+)+$" }),
        "No files found",
      );
      assertLess(performance.now() - start, 5000);
    },
    async control(world) {
      assertOk(await world.call("grep", { pattern: "a+b$" }), "evil.txt");
    },
  },
  {
    name:
      "a command printing forever is stopped at its timeout with bounded output",
    async attack(world) {
      const start = performance.now();
      const result = await world.call("bash", {
        command: "yes leak",
        timeout: 1500,
      });
      assertRefused(result, "timed out");
      assertLess(result.text.length, 40_000);
      assertLess(performance.now() - start, 15_000);
    },
    async control(world) {
      assertOk(await world.call("bash", { command: "yes ok | head -3" }), "ok");
    },
  },
  {
    name:
      "1,000 concurrent tool calls all answer, escapes refused, nothing outside touched",
    async attack(world) {
      await Deno.mkdir(`${world.workspace}/many`);
      const calls: Promise<[string, boolean]>[] = [];
      for (let i = 0; i < 1000; i++) {
        // Mostly file calls; one in 25 a grep, one in 25 a glob (each engine
        // runs 4 searches at once; the rest wait within their time limit).
        const kind = i % 25 === 6
          ? 6
          : i % 25 === 7
          ? 7
          : i % 10 === 6 || i % 10 === 7
          ? 0
          : i % 10;
        const call = kind < 3
          ? world.call("read", { file_path: "alive.txt" })
          : kind < 5
          ? world.call("write", {
            file_path: `many/f${i}.txt`,
            content: `n${i}`,
          })
          : kind === 5
          ? world.call("ls", { path: "many" })
          : kind === 6
          ? world.call("grep", { pattern: "alive", output_mode: "count" })
          : kind === 7
          ? world.call("glob", { pattern: "many/*.txt" })
          : kind === 8
          ? world.call("read", { file_path: `${world.outside}/secret.txt` })
          : world.call("write", {
            file_path: `../../outside/f${i}.txt`,
            content: "x",
          });
        calls.push(
          call.then((r) => [`${kind} ${r.text.slice(0, 200)}`, r.isError]),
        );
      }
      const start = performance.now();
      const results = await Promise.all(calls);
      assertLess(performance.now() - start, 60_000);
      for (const [kind, isError] of results) {
        assertEquals(isError, kind[0] === "8" || kind[0] === "9", kind);
      }
    },
    async control(world) {
      const listed = await world.call("ls", { path: "many", limit: 1000 });
      assertOk(listed, "f994.txt");
    },
  },
]);
