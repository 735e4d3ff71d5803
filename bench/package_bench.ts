/**
 * Skill packages: `packSkill` (ZIP) against `zip -r -X -q` of the same
 * folder, for a real skill with fonts (`canvas-design`) and the generated
 * 5,000-file skill; verify + install of the 5,000-file package against
 * `unzip -q`; installing a 1 GiB package (peak memory).
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { generateManyFiles, MANY } from "./workspace_bench.ts";
import { installPackage, packSkill } from "../package/mod.ts";

const CANVAS = new URL(
  "../../shared/corpora/anthropics-skills/skills/canvas-design",
  import.meta.url,
).pathname;
const DATA = new URL("./.data/", import.meta.url).pathname;
const MANY_ZIP = `${DATA}many-small-files-skill.zip`;
const BIG = `${DATA}big-skill`;
const BIG_ZIP = `${DATA}big-skill.zip`;
const GIB = 1024 ** 3;

let scratch: string | undefined;
let counter = 0;

/** A fresh, not yet existing path in this child's scratch folder. */
function fresh(suffix = ""): string {
  if (scratch === undefined) {
    Deno.mkdirSync(DATA, { recursive: true });
    scratch = Deno.makeTempDirSync({ dir: DATA, prefix: "package-bench-" });
    const dir = scratch;
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(dir, { recursive: true });
    });
  }
  return `${scratch}/t${counter++}${suffix}`;
}

async function run(command: string, args: string[], cwd?: string) {
  const status = await new Deno.Command(command, {
    args,
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`${command} exited with ${status.code}`);
}

/** `zip -r -X -q OUT <name>` from the skill's parent folder. */
function zipR(dir: string): Promise<void> {
  const slash = dir.lastIndexOf("/");
  return run(
    "zip",
    ["-r", "-X", "-q", fresh(".zip"), dir.slice(slash + 1)],
    dir.slice(0, slash),
  );
}

async function packMany(): Promise<void> {
  await generateManyFiles();
  try {
    await Deno.stat(MANY_ZIP);
  } catch {
    await packSkill(MANY, { output: MANY_ZIP });
  }
}

/** A skill with one 1 GiB incompressible file, packed once. */
async function packBig(): Promise<void> {
  try {
    await Deno.stat(BIG_ZIP);
    return;
  } catch {
    // not made yet
  }
  await Deno.remove(BIG, { recursive: true }).catch(() => {});
  await Deno.mkdir(BIG, { recursive: true });
  await Deno.writeTextFile(
    `${BIG}/SKILL.md`,
    "---\nname: big-skill\ndescription: Benchmark skill with 1 GiB of data\n---\n",
  );
  {
    using file = await Deno.open(`${BIG}/data.bin`, {
      write: true,
      create: true,
      truncate: true,
    });
    const chunk = new Uint8Array(1 << 20);
    for (let written = 0; written < GIB; written += chunk.length) {
      for (let i = 0; i < chunk.length; i += 65536) {
        crypto.getRandomValues(chunk.subarray(i, i + 65536));
      }
      await file.write(chunk);
    }
  }
  await packSkill(BIG, { output: `${BIG_ZIP}.tmp` });
  await Deno.rename(`${BIG_ZIP}.tmp`, BIG_ZIP);
  await Deno.remove(BIG, { recursive: true });
}

function skipWithoutZip(): string | undefined {
  try {
    const zip = new Deno.Command("zip", { args: ["-v"], stdout: "null" })
      .outputSync();
    const unzip = new Deno.Command("unzip", { args: ["-v"], stdout: "null" })
      .outputSync();
    return zip.success && unzip.success ? undefined : "zip or unzip is missing";
  } catch {
    return "zip or unzip is missing (apt-get install zip unzip)";
  }
}

/** The cases. */
export const cases: BenchCase[] = [
  {
    id: "package-pack-canvas-design",
    title: "pack canvas-design (83 files, 5.5 MB) as a ZIP",
    module: import.meta.url,
    ours: {
      label: "packSkill (zip, to a file)",
      fn: () => packSkill(CANVAS, { output: fresh(".zip") }),
    },
    baseline: { label: "zip -r -X -q", fn: () => zipR(CANVAS) },
    iterations: 10,
    rounds: 3,
    maxRatio: 1.5,
    skipReason: skipWithoutZip,
  },
  {
    id: "package-pack-5000-files",
    title: "pack a generated skill of 5,000 small files as a ZIP",
    module: import.meta.url,
    setup: generateManyFiles,
    ours: {
      label: "packSkill (zip, to a file)",
      fn: () => packSkill(MANY, { output: fresh(".zip") }),
    },
    baseline: { label: "zip -r -X -q", fn: () => zipR(MANY) },
    iterations: 5,
    maxRatio: 1.5,
    skipReason: skipWithoutZip,
  },
  {
    id: "package-install-5000-files",
    title: "verify (digest) and install the 5,000-file package",
    module: import.meta.url,
    setup: packMany,
    ours: {
      label: "installPackage (digest, checks, atomic)",
      fn: () => installPackage({ path: MANY_ZIP }, { root: fresh() }),
    },
    baseline: {
      label: "unzip -q",
      fn: () => run("unzip", ["-q", MANY_ZIP, "-d", fresh()]),
    },
    iterations: 5,
    maxRatio: 1.5,
    skipReason: skipWithoutZip,
  },
  {
    id: "package-install-1gib",
    title:
      "install a 1 GiB package (one incompressible 1 GiB file), peak memory",
    module: import.meta.url,
    setup: packBig,
    ours: {
      label: "installPackage",
      fn: async () => {
        const root = fresh();
        await installPackage({ path: BIG_ZIP }, { root });
        await Deno.remove(root, { recursive: true });
      },
    },
    baseline: {
      label: "unzip -q",
      fn: async () => {
        const root = fresh();
        await run("unzip", ["-q", BIG_ZIP, "-d", root]);
        await Deno.remove(root, { recursive: true });
      },
    },
    iterations: 1,
    rounds: 2,
    noWarmup: true,
    maxRssMiB: 100,
    skipReason: skipWithoutZip,
  },
];

if (import.meta.main) await runChild(cases);
