import {
  assert,
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import type { Skill } from "../../skill/types.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { SkillPreparationError, WorkspaceEscapeError } from "../errors.ts";
import { LocalSkillRuntime } from "./runtime.ts";

/** Writes a small skill folder and returns it as a loaded skill. */
async function makeSkill(
  parent: string,
  name: string,
  files: Record<string, string> = {},
): Promise<Skill> {
  const basePath = hostPath.join(parent, name);
  await Deno.mkdir(basePath, { recursive: true });
  const skillMd =
    `---\nname: ${name}\ndescription: The ${name} skill\n---\nDo it.\n`;
  await Deno.writeTextFile(hostPath.join(basePath, "SKILL.md"), skillMd);
  for (const [path, content] of Object.entries(files)) {
    const full = hostPath.join(basePath, path);
    await Deno.mkdir(hostPath.dirname(full), { recursive: true });
    await Deno.writeTextFile(full, content);
  }
  return {
    name,
    description: `The ${name} skill`,
    basePath,
    location: hostPath.join(basePath, "SKILL.md"),
    instructions: "Do it.\n",
    frontMatter: { name, description: `The ${name} skill` },
    warnings: [],
  };
}

/** Every file under a folder with its bytes, for byte-identity checks. */
async function snapshot(root: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  async function walk(dir: string): Promise<void> {
    for await (const entry of Deno.readDir(dir)) {
      const full = hostPath.join(dir, entry.name);
      if (entry.isDirectory) await walk(full);
      else {
        const bytes = await Deno.readFile(full);
        const digest = await crypto.subtle.digest("SHA-256", bytes);
        const hex = [...new Uint8Array(digest)]
          .map((b) => b.toString(16).padStart(2, "0")).join("");
        const info = await Deno.lstat(full);
        files.set(hostPath.relative(root, full), `${hex} ${info.mode}`);
      }
    }
  }
  await walk(root);
  return files;
}

async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("execute() runs in the process's current folder by default in plain mode", async () => {
  await using runtime = new LocalSkillRuntime();
  assertEquals(runtime.name, "local");
  assertEquals(runtime.cwd, Deno.cwd());
  const result = await runtime.execute({ command: "pwd" });
  assertEquals(result.stdout.trim(), await Deno.realPath(Deno.cwd()));
});

Deno.test("execute() resolves a relative working directory against cwd in plain mode", async () => {
  await withTemp(async (dir) => {
    await Deno.mkdir(`${dir}/sub`);
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    assertEquals(runtime.cwd, dir);
    const result = await runtime.execute({
      command: "pwd",
      cwd: "sub",
    });
    assertEquals(result.stdout.trim(), `${dir}/sub`);
    await runtime.fs.writeText("sub/a.txt", "via fs");
    assertEquals(await Deno.readTextFile(`${dir}/sub/a.txt`), "via fs");
  });
});

Deno.test("execute() validates its request", async () => {
  await using runtime = new LocalSkillRuntime();
  await assertRejects(() => runtime.execute({ command: "  " }), TypeError);
  await assertRejects(
    () => runtime.execute({ command: "true", timeoutMs: 0 }),
    RangeError,
  );
  await assertRejects(
    () => runtime.execute({ command: "true", env: { "A-B": "x" } }),
    TypeError,
  );
  await assertRejects(
    () => runtime.execute({ command: "true", maxOutputBytes: -1 }),
    RangeError,
  );
});

Deno.test("execute() caps output per the runtime's and the request's limit", async () => {
  await using runtime = new LocalSkillRuntime({ maxOutputBytes: 10 });
  const result = await runtime.execute({ command: "printf 0123456789abcdef" });
  assert(result.stdoutTruncated);
  assertEquals(result.stdoutBytes, 16);
  assertEquals(result.stdout, "01234\n[... 6 bytes omitted ...]\nbcdef");
  const wide = await runtime.execute({
    command: "printf 0123456789abcdef",
    maxOutputBytes: 100,
  });
  assertEquals(wide.stdout, "0123456789abcdef");
});

Deno.test("execute() stops at the timeout and at the signal, distinctly", async () => {
  await using runtime = new LocalSkillRuntime();
  const timedOut = await runtime.execute({
    command: "sleep 30",
    timeoutMs: 200,
  });
  assert(timedOut.timedOut);
  assertFalse(timedOut.aborted);
  assertEquals(timedOut.exitCode, -1);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const aborted = await runtime.execute({
    command: "sleep 30",
    signal: controller.signal,
  });
  assert(aborted.aborted);
  assertFalse(aborted.timedOut);
  assertEquals(aborted.exitCode, -1);
});

Deno.test("the environment goes base < option < prepared skills (later wins) < request", async () => {
  await withTemp(async (dir) => {
    Deno.env.set("SKILLRUN_TEST_INHERITED", "inherited");
    Deno.env.set("SKILLRUN_TEST_OVERRIDDEN", "inherited");
    try {
      const first = await makeSkill(dir, "first");
      const second = await makeSkill(dir, "second");
      await using runtime = new LocalSkillRuntime({
        cwd: dir,
        env: { SKILLRUN_TEST_OVERRIDDEN: "option", SHARED: "option" },
      });
      const show =
        'echo "$SKILLRUN_TEST_INHERITED $SKILLRUN_TEST_OVERRIDDEN $SHARED ${ONLY_FIRST:-unset}"';
      await runtime.prepare({
        skills: [{
          skill: first,
          config: new SkillRuntimeConfig({
            env: { SHARED: "first", ONLY_FIRST: "one" },
            bootstrap: [`${show} > boot.txt`],
          }),
        }],
      });
      // The bootstrap saw the skill's own values, without any export.
      assertEquals(
        await Deno.readTextFile(`${first.basePath}/boot.txt`),
        "inherited option first one\n",
      );
      await runtime.prepare({
        skills: [{
          skill: second,
          config: new SkillRuntimeConfig({
            env: { SHARED: "second" },
            bootstrap: [`${show} > boot.txt`],
          }),
        }],
      });
      assertEquals(
        await Deno.readTextFile(`${second.basePath}/boot.txt`),
        "inherited option second one\n",
      );
      // Every later command gets the merged environment; the later skill wins.
      for (let i = 0; i < 2; i++) {
        const result = await runtime.execute({ command: show });
        assertEquals(result.stdout, "inherited option second one\n");
      }
      // A request's value overrides everything, for that command only.
      const overridden = await runtime.execute({
        command: show,
        env: { SHARED: "request", SKILLRUN_TEST_INHERITED: "request" },
      });
      assertEquals(overridden.stdout, "request option request one\n");
      assertEquals(
        (await runtime.execute({ command: show })).stdout,
        "inherited option second one\n",
      );
      assertEquals(runtime.environment(), {
        SKILLRUN_TEST_OVERRIDDEN: "option",
        SHARED: "second",
        ONLY_FIRST: "one",
      });
    } finally {
      Deno.env.delete("SKILLRUN_TEST_INHERITED");
      Deno.env.delete("SKILLRUN_TEST_OVERRIDDEN");
    }
  });
});

Deno.test("a batch prepare merges the environment in the order of the request", async () => {
  await withTemp(async (dir) => {
    const a = await makeSkill(dir, "a");
    const b = await makeSkill(dir, "b");
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const prepared = await runtime.prepare({
      skills: [
        { skill: b, config: new SkillRuntimeConfig({ env: { WHO: "b" } }) },
        { skill: a, config: new SkillRuntimeConfig({ env: { WHO: "a" } }) },
      ],
    });
    assertEquals(prepared.map((p) => p.name), ["b", "a"]);
    assertEquals(
      (await runtime.execute({ command: 'printf "$WHO"' })).stdout,
      "a",
    );
  });
});

Deno.test("skills written for Deno find the deno that runs us", async () => {
  await using runtime = new LocalSkillRuntime();
  const result = await runtime.execute({
    command: 'printf "%s|%s" "$DENO_EXEC_PATH" "$(command -v deno)"',
  });
  const [execPath, found] = result.stdout.split("|");
  assertEquals(execPath, Deno.execPath());
  assert(found, "deno is on PATH");
  assertEquals(
    await Deno.realPath(found),
    await Deno.realPath(Deno.execPath()),
  );
  const version = await runtime.execute({
    command: 'deno eval "console.log(Deno.version.deno)"',
  });
  assertEquals(version.stdout.trim(), Deno.version.deno);
});

Deno.test("plain prepare bootstraps in the original folder, in order, once", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(dir, "ordered");
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const config = new SkillRuntimeConfig({
      bootstrap: ["echo one >> log", "echo two >> log", "echo three >> log"],
    });
    const [prepared] = await runtime.prepare({ skills: [{ skill, config }] });
    assertEquals(prepared?.basePath, skill.basePath);
    await runtime.prepare({ skills: [{ skill, config }] });
    assertEquals(
      await Deno.readTextFile(`${skill.basePath}/log`),
      "one\ntwo\nthree\n",
    );
  });
});

Deno.test("a failing bootstrap stops the rest, caches nothing, and a retry succeeds", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(dir, "flaky");
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const flag = `${dir}/ready`;
    const config = new SkillRuntimeConfig({
      env: { FLAKY_MODE: "on" },
      bootstrap: [
        "echo first >> log",
        `test -f ${flag} || { echo "not ready" >&2; exit 3; }`,
        "echo third >> log",
      ],
    });
    const error = await assertRejects(
      () => runtime.prepare({ skills: [{ skill, config }] }),
      SkillPreparationError,
    );
    assertEquals(error.exitCode, 3);
    assertEquals(error.commandIndex, 1);
    assertStringIncludes(error.message, "bootstrap command 2 of 3");
    assertStringIncludes(error.message, "not ready");
    assertEquals(await Deno.readTextFile(`${skill.basePath}/log`), "first\n");
    // Nothing recorded: its environment is withdrawn too.
    assertEquals(runtime.environment().FLAKY_MODE, undefined);

    await Deno.writeTextFile(flag, "");
    await runtime.prepare({ skills: [{ skill, config }] });
    assertEquals(
      await Deno.readTextFile(`${skill.basePath}/log`),
      "first\nfirst\nthird\n",
    );
    assertEquals(runtime.environment().FLAKY_MODE, "on");
  });
});

Deno.test("a bootstrap timeout fails the preparation and a retry runs it again", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(dir, "slow");
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const config = new SkillRuntimeConfig({
      bootstrap: [
        {
          command: `echo try >> log; test -f ${dir}/fast || sleep 30`,
          timeoutMs: 300,
        },
        "echo after >> log",
      ],
    });
    const error = await assertRejects(
      () => runtime.prepare({ skills: [{ skill, config }] }),
      SkillPreparationError,
    );
    assert(error.timedOut);
    assertEquals(error.exitCode, -1);
    assertStringIncludes(error.message, "timed out after 300 ms");
    assertEquals(await Deno.readTextFile(`${skill.basePath}/log`), "try\n");
    await Deno.writeTextFile(`${dir}/fast`, "");
    await runtime.prepare({ skills: [{ skill, config }] });
    assertEquals(
      await Deno.readTextFile(`${skill.basePath}/log`),
      "try\ntry\nafter\n",
    );
  });
});

Deno.test("20 concurrent preparations of one skill bootstrap it once", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(dir, "shared");
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const config = new SkillRuntimeConfig({
      bootstrap: ["sleep 0.2; echo ran >> count"],
    });
    const results = await Promise.all(
      Array.from(
        { length: 20 },
        () => runtime.prepare({ skills: [{ skill, config }] }),
      ),
    );
    assertEquals(new Set(results.map((r) => r[0]?.basePath)).size, 1);
    assertEquals(
      await Deno.readTextFile(`${skill.basePath}/count`),
      "ran\n",
    );
  });
});

Deno.test("conversation mode copies skills into the workspace and fences paths", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(`${dir}/src`, "pdf", {
      "scripts/tool.sh": "echo tool v1\n",
    });
    await Deno.chmod(`${skill.basePath}/scripts/tool.sh`, 0o755);
    const before = await snapshot(skill.basePath);
    const root = `${dir}/conversations`;
    const workspace = `${root}/thread.2026-07`;
    {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "thread.2026-07",
      });
      assertEquals(runtime.workspace, workspace);
      assertEquals(runtime.cwd, workspace);
      const [prepared] = await runtime.prepare({
        skills: [{
          skill,
          config: new SkillRuntimeConfig({
            bootstrap: ["./scripts/tool.sh > built.txt; pwd >> built.txt"],
          }),
        }],
      });
      assert(prepared);
      assert(prepared.basePath.startsWith(`${workspace}/skills/`));
      assertEquals(
        await Deno.readTextFile(`${prepared.basePath}/built.txt`),
        `tool v1\n${prepared.basePath}\n`,
      );
      // The default working directory is the workspace.
      assertEquals(
        (await runtime.execute({ command: "pwd" })).stdout.trim(),
        workspace,
      );
      // Explicit working directories: inside works, outside is refused.
      assertEquals(
        (await runtime.execute({
          command: "pwd",
          cwd: prepared.basePath,
        })).stdout.trim(),
        prepared.basePath,
      );
      const escape = await assertRejects(
        () => runtime.execute({ command: "pwd", cwd: dir }),
        WorkspaceEscapeError,
      );
      assertStringIncludes(escape.message, workspace);
      await assertRejects(
        () => runtime.execute({ command: "pwd", cwd: "../" }),
        WorkspaceEscapeError,
      );
      // The file system is fenced too.
      await runtime.fs.writeText("out/report.txt", "done");
      assertEquals(
        await Deno.readTextFile(`${workspace}/out/report.txt`),
        "done",
      );
      const fsEscape = await assertRejects(
        () =>
          runtime.fs.readText(`${dir}/src/pdf/SKILL.md`, { maxBytes: 1000 }),
        WorkspaceEscapeError,
      );
      assertStringIncludes(fsEscape.message, workspace);
      // A file made in the copy, and a source file changed in the copy.
      await Deno.writeTextFile(`${prepared.basePath}/cache.bin`, "generated");
      await Deno.writeTextFile(
        `${prepared.basePath}/scripts/tool.sh`,
        "echo tampered\n",
      );
    }
    // The source changes, then a new runtime object reuses the conversation.
    await Deno.writeTextFile(
      `${skill.basePath}/scripts/tool.sh`,
      "echo tool v2\n",
    );
    const changed = await snapshot(skill.basePath);
    {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "thread.2026-07",
      });
      const [prepared] = await runtime.prepare({
        skills: [{
          skill,
          config: new SkillRuntimeConfig({
            bootstrap: ["./scripts/tool.sh > built.txt"],
          }),
        }],
      });
      assert(prepared);
      // Same stable folder; source files overwritten; generated files kept.
      assertEquals(
        await Deno.readTextFile(`${prepared.basePath}/scripts/tool.sh`),
        "echo tool v2\n",
      );
      assertEquals(
        await Deno.readTextFile(`${prepared.basePath}/built.txt`),
        "tool v2\n",
      );
      assertEquals(
        await Deno.readTextFile(`${prepared.basePath}/cache.bin`),
        "generated",
      );
      assertEquals(
        await Deno.readTextFile(`${workspace}/out/report.txt`),
        "done",
      );
    }
    // The source was never modified by any of it.
    assertEquals(await snapshot(skill.basePath), changed);
    assertNotEquals(changed, before);
    assertEquals(
      [...changed.keys()].sort(),
      [...before.keys()].sort(),
    );
  });
});

Deno.test({
  name:
    "prepare() refuses to copy a skill through a symlink in the workspace that points outside",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTemp(async (dir) => {
      const skill = await makeSkill(`${dir}/src`, "pdf");
      const root = `${dir}/conversations`;
      const outside = `${dir}/outside`;
      await Deno.mkdir(outside);
      let copy: string;
      {
        await using runtime = await LocalSkillRuntime.create({
          conversationsRoot: root,
          conversationId: "c1",
        });
        const [prepared] = await runtime.prepare({ skills: [{ skill }] });
        copy = prepared!.basePath;
        // A command replaces the copy with a link to a folder outside.
        await runtime.execute({
          command: `rm -rf "${copy}" && ln -s "${outside}" "${copy}"`,
        });
      }
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "c1",
      });
      const error = await assertRejects(
        () => runtime.prepare({ skills: [{ skill }] }),
        SkillPreparationError,
      );
      assertStringIncludes(error.message, 'Cannot prepare skill "pdf"');
      assertStringIncludes(error.message, "outside the workspace");
      assertInstanceOf(error.cause, WorkspaceEscapeError);
      // Nothing was written outside.
      assertEquals(
        await Array.fromAsync(Deno.readDir(outside)),
        [],
      );
      // The same through the `skills/` folder itself.
      await Deno.remove(copy);
      await Deno.remove(`${root}/c1/skills`, { recursive: true });
      await Deno.symlink(outside, `${root}/c1/skills`);
      await using again = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "c1",
      });
      await assertRejects(
        () => again.prepare({ skills: [{ skill }] }),
        SkillPreparationError,
        "outside the workspace",
      );
      assertEquals(await Array.fromAsync(Deno.readDir(outside)), []);
    });
  },
});

Deno.test("LocalSkillRuntime.create() validates the conversation", async () => {
  await withTemp(async (dir) => {
    await assertRejects(
      () =>
        LocalSkillRuntime.create({
          conversationsRoot: dir,
          conversationId: "../x",
        }),
      TypeError,
    );
    await assertRejects(
      () =>
        LocalSkillRuntime.create({
          conversationsRoot: "relative/root",
          conversationId: "abc",
        }),
      TypeError,
    );
    await assertRejects(
      () => LocalSkillRuntime.create({ conversationId: "abc" }),
      TypeError,
    );
    assertThrows(
      () =>
        new LocalSkillRuntime({ conversationsRoot: dir, conversationId: "a" }),
      TypeError,
    );
    // Nothing was created for a refused conversation.
    assertEquals([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("close() is idempotent, deletes nothing, and later calls fail clearly", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(`${dir}/src`, "kept");
    const root = `${dir}/conversations`;
    let runtime: LocalSkillRuntime;
    {
      await using scoped = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "c1",
      });
      runtime = scoped;
      await scoped.prepare({
        skills: [{
          skill,
          config: new SkillRuntimeConfig({
            env: { KEPT: "yes" },
            bootstrap: ["touch made-by-bootstrap"],
          }),
        }],
      });
      await scoped.fs.writeText("output.txt", "result");
      assertEquals(scoped.environment().KEPT, "yes");
    }
    // `await using` closed it.
    assert(runtime.closed);
    await runtime.close();
    await runtime[Symbol.asyncDispose]();
    const error = await assertRejects(
      () => runtime.execute({ command: "true" }),
      Error,
    );
    assertStringIncludes(error.message, "closed");
    await assertRejects(() => runtime.prepare({ skills: [] }), Error, "closed");
    await assertRejects(() => runtime.fs.stat("output.txt"), Error, "closed");
    assertThrows(() => runtime.environment(), Error, "closed");
    // Nothing deleted.
    assertEquals(await Deno.readTextFile(`${root}/c1/output.txt`), "result");
    // The skill copies (beside them, the record of what was prepared).
    const copies = [...Deno.readDirSync(`${root}/c1/skills`)].filter((e) =>
      e.isDirectory
    );
    assertEquals(copies.length, 1);
    const copy = `${root}/c1/skills/${copies[0]!.name}`;
    await Deno.stat(`${copy}/made-by-bootstrap`);
    await Deno.stat(`${copy}/SKILL.md`);
    await Deno.stat(`${skill.basePath}/SKILL.md`);
  });
});

Deno.test("execute() refuses a missing working directory with a clear error", async () => {
  await withTemp(async (dir) => {
    await using runtime = new LocalSkillRuntime({ cwd: dir });
    const error = await assertRejects(
      () => runtime.execute({ command: "true", cwd: "missing" }),
    );
    assertInstanceOf(error, Error);
    assertStringIncludes(error.message, `${dir}/missing`);
  });
});

Deno.test("search finds files in the workspace, fenced, with either engine", async () => {
  await withTemp(async (dir) => {
    await Deno.mkdir(`${dir}/outside`);
    await Deno.writeTextFile(`${dir}/outside/secret.md`, "needle outside\n");
    for (const useRipgrep of ["auto", false] as const) {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: `${dir}/conversations`,
        conversationId: `search-${useRipgrep}`,
        useRipgrep,
      });
      await runtime.fs.writeText("notes/todo.md", "first\nneedle inside\n");
      const grep = await runtime.search.grep({
        pattern: "needle",
        outputMode: "content",
      });
      assert(grep.mode === "content");
      assertEquals(grep.lines.map((l) => l.lineNumber), [2]);
      assertStringIncludes(grep.lines[0]!.path, "todo.md");
      const glob = await runtime.search.glob({ pattern: "**/*.md" });
      assertEquals(glob.files.length, 1);
      await assertRejects(
        () =>
          runtime.search.grep({ pattern: "needle", path: `${dir}/outside` }),
        WorkspaceEscapeError,
      );
      await runtime.close();
      await assertRejects(
        () => runtime.search.ls({ path: "." }),
        Error,
        "closed",
      );
    }
  });
});

Deno.test("a resumed conversation never follows its prepared-skills record out of the workspace", async () => {
  await withTemp(async (dir) => {
    const skill = await makeSkill(`${dir}/src`, "rec");
    const root = `${dir}/conversations`;
    const config = new SkillRuntimeConfig({
      bootstrap: ["echo booted >> ../../boot.log"],
    });
    const prepare = async () => {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: root,
        conversationId: "c1",
      });
      await runtime.prepare({ skills: [{ skill, config }] });
    };
    await prepare();
    await prepare();
    assertEquals(await Deno.readTextFile(`${root}/c1/boot.log`), "booted\n");
    // A command replaces the record with a link to a file outside.
    const outside = `${dir}/outside.json`;
    await Deno.writeTextFile(outside, "kept");
    const record = `${root}/c1/skills/.skillrun-prepared.json`;
    await Deno.remove(record);
    await Deno.symlink(outside, record);
    await prepare();
    assertEquals(await Deno.readTextFile(outside), "kept");
    assertEquals(
      await Deno.readTextFile(`${root}/c1/boot.log`),
      "booted\nbooted\n",
    );
    assert(!(await Deno.lstat(record)).isSymlink);
  });
});
