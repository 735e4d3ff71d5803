/**
 * The folder tree the search tools' tests use. Test-only.
 *
 * @module
 */

/**
 * Writes a small tree with hidden files, spaces and unicode in names, nested
 * folders and heavy folders (`.git`, `node_modules`). Modification times
 * increase in the order the files are listed here.
 *
 * @param root An empty folder.
 */
export async function makeTree(root: string): Promise<void> {
  const files: [string, string][] = [
    ["src/a.ts", "const a = 1;\n// TODO: a\nexport { a };\n"],
    ["src/deep/b1.ts", "b1\n"],
    ["src/deep/b22.ts", "b22 TODO\n"],
    [".hidden.txt", "hidden TODO\n"],
    ["with space/c.md", "# C\n\nTODO c\n"],
    ["my file.md", "# Title\nTODO one\nmiddle\nTODO two\n\nlast TODO\n"],
    ["技能.txt", "unicode todo TODO\n"],
    [".git/config", "TODO git\n"],
    ["node_modules/pkg/index.js", "// TODO nm\n"],
  ];
  let time = 1_700_000_000;
  for (const [path, content] of files) {
    const full = `${root}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(full, content);
    await Deno.utime(full, time, time);
    time += 60;
  }
  await Deno.writeFile(
    `${root}/src/blob.bin`,
    new Uint8Array([0x54, 0x4f, 0x44, 0x4f, 0, 1]),
  );
  await Deno.utime(`${root}/src/blob.bin`, 1_600_000_000, 1_600_000_000);
}
