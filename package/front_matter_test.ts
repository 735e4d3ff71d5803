/**
 * A package whose SKILL.md front matter is a YAML alias bomb: packing,
 * installing and indexing it finish at once (each in a child process with a
 * deadline, so code that hangs fails instead of hanging the suite).
 */
import { assert, assertEquals } from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const MOD = hostPath.toFileUrl(
  hostPath.fromFileUrl(new URL("./mod.ts", import.meta.url)),
).href;

/** Ten levels of nine aliases in `metadata`: some 600 bytes. */
function aliasBomb(name: string): string {
  const lines = [`  a0: &a0 [${Array(9).fill('"lol"').join(",")}]`];
  for (let level = 1; level <= 10; level++) {
    lines.push(
      `  a${level}: &a${level} [${Array(9).fill(`*a${level - 1}`).join(",")}]`,
    );
  }
  return `---\nname: ${name}\ndescription: Expands.\nmetadata:\n${
    lines.join("\n")
  }\n---\nBody\n`;
}

Deno.test("pack, install and index of a skill whose front matter is an alias bomb finish at once", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${dir}/bomb`);
    await Deno.writeTextFile(`${dir}/bomb/SKILL.md`, aliasBomb("bomb"));
    await Deno.mkdir(`${dir}/site`);
    const code = `
      import { installPackage, packSkill, writeSkillIndex } from ${
      JSON.stringify(MOD)
    };
      const dir = ${JSON.stringify(dir)};
      const packed = await packSkill(dir + "/bomb", { output: dir + "/site/bomb.zip" });
      const installed = await installPackage({ path: dir + "/site/bomb.zip" }, { root: dir + "/installed" });
      const index = await writeSkillIndex(dir + "/site");
      console.log(JSON.stringify({
        packed: packed.name, installed: installed.name, indexed: index.skills.length,
      }));
      Deno.exit(0);
    `;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", "--quiet", code],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const output = await child.output();
    clearTimeout(timer);
    const stderr = new TextDecoder().decode(output.stderr);
    assert(output.success, `did not finish: ${output.signal ?? stderr}`);
    // The name comes from the folder: the front matter is refused.
    assertEquals(JSON.parse(new TextDecoder().decode(output.stdout)), {
      packed: "bomb",
      installed: "bomb",
      indexed: 1,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
