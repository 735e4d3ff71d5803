import { assertEquals, assertStringIncludes } from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { hostDenoDir } from "../tests/helpers/testing.ts";

const CLI = hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url));

async function cliIn(cwd: string, home: string, ...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // The cache stays this Deno's: under the temporary HOME it would be cold.
    env: {
      NO_COLOR: "1",
      HOME: home,
      USERPROFILE: home,
      DENO_DIR: await hostDenoDir(),
    },
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

async function writeSkill(folder: string, name: string, body: string) {
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    `${folder}/SKILL.md`,
    `---\nname: ${name}\ndescription: The ${name} skill.\n---\n${body}`,
  );
}

Deno.test("cli list --scope project,user: the standard places, the project's copy winning with a warning", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir());
  const home = await Deno.realPath(await Deno.makeTempDir());
  try {
    await writeSkill(`${cwd}/.agents/skills/both`, "both", "project\n");
    await writeSkill(`${home}/.agents/skills/both`, "both", "user\n");
    await writeSkill(`${home}/.claude/skills/mine`, "mine", "user\n");
    const run = await cliIn(
      cwd,
      home,
      "list",
      "--json",
      "--scope",
      "project,user",
    );
    assertEquals(run.code, 0, run.stderr);
    const listed = JSON.parse(run.stdout) as {
      name: string;
      basePath: string;
    }[];
    assertEquals(listed.map((s) => [s.name, s.basePath]), [
      ["both", `${cwd}/.agents/skills/both`],
      ["mine", `${home}/.claude/skills/mine`],
    ]);
    assertStringIncludes(run.stderr, `${home}/.agents/skills/both/SKILL.md`);
    const bad = await cliIn(cwd, home, "list", "--scope", "workspace");
    assertEquals(bad.code, 2);
    assertStringIncludes(
      bad.stderr,
      `Option "--scope" takes "project" and "user", not "workspace"`,
    );
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await Deno.remove(home, { recursive: true });
  }
});
