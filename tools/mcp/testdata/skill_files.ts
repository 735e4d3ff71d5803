// A folder of skills for the MCP tests, made fresh in a temp folder: text,
// binary, a secret, a large file and symlinks (inside and out).

/** The bytes of the binary file `notes/data/blob.bin` (NUL and 0xff bytes). */
export const BLOB: Uint8Array = new Uint8Array([0, 1, 2, 255, 254, 0, 65, 66]);

/** The test's largest resource, in bytes (the large file has one more). */
export const SMALL_LIMIT = 1024;

/** What the skills folder holds. */
export interface SkillFiles extends AsyncDisposable {
  /** The temp folder (skills under `skills/`, a secret beside it). */
  readonly root: string;
  /** The folder of skills. */
  readonly skills: string;
}

/**
 * Makes `<temp>/skills/{notes,greet}` and `<temp>/outside.txt`.
 *
 * @returns The folders; dispose to delete them.
 */
export async function makeSkillFiles(): Promise<SkillFiles> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  const skills = `${root}/skills`;
  const notes = `${skills}/notes`;
  await Deno.mkdir(`${notes}/scripts`, { recursive: true });
  await Deno.mkdir(`${notes}/data`, { recursive: true });
  await Deno.writeTextFile(
    `${notes}/SKILL.md`,
    "---\nname: notes\ndescription: Keeps notes in a file.\n---\n" +
      "# Notes\n\nRun `bash scripts/hello.sh` to greet.\n",
  );
  await Deno.writeTextFile(`${notes}/scripts/hello.sh`, "echo héllo\n", {
    mode: 0o755,
  });
  await Deno.writeFile(`${notes}/data/blob.bin`, BLOB);
  await Deno.writeTextFile(`${notes}/data/with space é.txt`, "spaced\n");
  await Deno.writeTextFile(
    `${notes}/data/big.txt`,
    "x".repeat(SMALL_LIMIT + 1),
  );
  await Deno.writeTextFile(`${notes}/.env`, "TOKEN=secret-value\n");
  await Deno.writeTextFile(`${root}/outside.txt`, "outside secret\n");
  await Deno.symlink(`${root}/outside.txt`, `${notes}/data/escape.txt`);
  await Deno.symlink(`${notes}/scripts`, `${notes}/linked-scripts`);
  await Deno.mkdir(`${skills}/greet`);
  await Deno.writeTextFile(
    `${skills}/greet/SKILL.md`,
    "---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n",
  );
  return {
    root,
    skills,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/** Decodes base64 into bytes. */
export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
