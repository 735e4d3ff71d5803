/**
 * Copying a skill into a workspace: `copySkillFolder` against `cp -r` of the
 * same folder, each into a fresh target, for a real skill with fonts
 * (`canvas-design`, 83 files, 5.5 MB) and a generated skill of 5,000 small
 * files.
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { copySkillFolder } from "../workspace/copy.ts";

const CANVAS = new URL(
  "../../shared/corpora/anthropics-skills/skills/canvas-design",
  import.meta.url,
).pathname;
const DATA = new URL("./.data/", import.meta.url).pathname;
/** The generated 5,000-file skill (other bench files reuse it). */
export const MANY = `${DATA}many-small-files-skill`;
const MANY_FOLDERS = 50;
const MANY_PER_FOLDER = 100;

/** Generates the 5,000-file skill once (idempotent: a marker says it is whole). */
export async function generateManyFiles(): Promise<void> {
  const marker = `${MANY}/.complete`;
  try {
    await Deno.stat(marker);
    return;
  } catch {
    // not generated yet (or half-generated): build it again
  }
  await Deno.remove(MANY, { recursive: true }).catch(() => {});
  await Deno.mkdir(MANY, { recursive: true });
  await Deno.writeTextFile(
    `${MANY}/SKILL.md`,
    "---\nname: many-small-files-skill\ndescription: Benchmark skill\n---\n",
  );
  for (let d = 0; d < MANY_FOLDERS; d++) {
    const folder = `${MANY}/part-${String(d).padStart(2, "0")}`;
    await Deno.mkdir(folder);
    await Promise.all(
      Array.from({ length: MANY_PER_FOLDER }, (_, f) =>
        Deno.writeTextFile(
          `${folder}/file-${String(f).padStart(3, "0")}.txt`,
          `line ${d}-${f}\n`.repeat(1 + (f % 20)),
          f % 10 === 0 ? { mode: 0o755 } : {},
        )),
    );
  }
  await Deno.writeTextFile(marker, "");
}

let scratch: string | undefined;
let counter = 0;

/** A fresh, not yet existing target in this child's scratch folder. */
function freshTarget(): string {
  if (scratch === undefined) {
    Deno.mkdirSync(DATA, { recursive: true });
    scratch = Deno.makeTempDirSync({ dir: DATA, prefix: "copy-targets-" });
    const dir = scratch;
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(dir, { recursive: true });
    });
  }
  return `${scratch}/t${counter++}`;
}

async function cpR(source: string): Promise<void> {
  const status = await new Deno.Command("cp", {
    args: ["-r", source, freshTarget()],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`cp -r exited with ${status.code}`);
}

function skipWithoutCp(): string | undefined {
  return Deno.build.os === "windows" ? "cp -r is not available" : undefined;
}

/** The cases. */
export const cases: BenchCase[] = [
  {
    id: "workspace-copy-canvas-design",
    title: "copy canvas-design (83 files, 5.5 MB) into a fresh target",
    module: import.meta.url,
    ours: {
      label: "copySkillFolder",
      fn: () => copySkillFolder(CANVAS, freshTarget()),
    },
    baseline: { label: "cp -r", fn: () => cpR(CANVAS) },
    // Small and fast: more alternating rounds even out the disk's bursts.
    iterations: 20,
    rounds: 5,
    maxRatio: 1.5,
    skipReason: skipWithoutCp,
  },
  {
    id: "workspace-copy-5000-files",
    title: "copy a generated skill of 5,000 small files into a fresh target",
    module: import.meta.url,
    setup: generateManyFiles,
    ours: {
      label: "copySkillFolder",
      fn: () => copySkillFolder(MANY, freshTarget()),
    },
    baseline: { label: "cp -r", fn: () => cpR(MANY) },
    iterations: 5,
    maxRatio: 1.5,
    skipReason: skipWithoutCp,
  },
];

if (import.meta.main) await runChild(cases);
