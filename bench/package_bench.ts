/**
 * Skill packages: `packSkill` (ZIP) against `zip -r -X -q` of the same
 * folder, for a real skill with fonts (`canvas-design`) and the generated
 * 5,000-file skill; verify + install of the 5,000-file package against
 * `unzip -q`; installing a 1 GiB package, ZIP and tar.gz (peak memory);
 * preparing a skill
 * in the OpenSandbox test server straight from its package against
 * preparing it from its folder (canvas-design, the 5,000-file skill).
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { generateManyFiles, MANY } from "./workspace_bench.ts";
import {
  installPackage,
  loadPackageSkill,
  type PackageSkill,
  packSkill,
} from "../package/mod.ts";
import { loadSkills } from "../skill/load.ts";
import type { Skill } from "../skill/types.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/runtime.ts";
import { startOpenSandboxServer } from "../tests/servers/opensandbox.ts";

const CANVAS = new URL(
  "../../shared/corpora/anthropics-skills/skills/canvas-design",
  import.meta.url,
).pathname;
const DATA = new URL("./.data/", import.meta.url).pathname;
const MANY_ZIP = `${DATA}many-small-files-skill.zip`;
const BIG = `${DATA}big-skill`;
const BIG_ZIP = `${DATA}big-skill.zip`;
const BIG_TAR_GZ = `${DATA}big-skill.tar.gz`;
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

/** A skill with one 1 GiB incompressible file, packed once in each format. */
async function packBig(): Promise<void> {
  const made = async (path: string) => {
    try {
      await Deno.stat(path);
      return true;
    } catch {
      return false;
    }
  };
  if (await made(BIG_ZIP) && await made(BIG_TAR_GZ)) return;
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
  for (
    const [format, path] of [["zip", BIG_ZIP], ["tar.gz", BIG_TAR_GZ]] as const
  ) {
    if (await made(path)) continue;
    await packSkill(BIG, { format, output: `${path}.tmp` });
    await Deno.rename(`${path}.tmp`, path);
  }
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

interface SandboxSetup {
  server: Awaited<ReturnType<typeof startOpenSandboxServer>>;
  sandboxId: string;
  cwd: string;
  skills: Map<string, { folder: Skill; pkg: PackageSkill }>;
}

let sandbox: Promise<SandboxSetup> | undefined;

/** One OpenSandbox test server and sandbox per child process. */
function sandboxReady(): Promise<SandboxSetup> {
  sandbox ??= (async () => {
    const cwd = fresh();
    await Deno.mkdir(cwd);
    const server = await startOpenSandboxServer();
    const runtime = new OpenSandboxSkillRuntime({ baseUrl: server.url, cwd });
    await runtime.execute({ command: "true" });
    const sandboxId = runtime.sandboxId!;
    // Not closed: closing deletes the sandbox it created.
    return { server, sandboxId, cwd, skills: new Map() };
  })();
  return sandbox;
}

/** The folder skill and the package skill (packed as tar.gz, in memory) of a folder. */
async function skillsOf(
  dir: string,
): Promise<{ folder: Skill; pkg: PackageSkill }> {
  const setup = await sandboxReady();
  let found = setup.skills.get(dir);
  if (!found) {
    const packed = await packSkill(dir, { format: "tar.gz" });
    const pkg = await loadPackageSkill({
      bytes: packed.bytes!,
      digest: packed.digest,
    });
    const [folder] = (await loadSkills(dir, { maxDepth: 0 })).skills;
    found = { folder: folder!, pkg };
    setup.skills.set(dir, found);
  }
  return found;
}

/** Prepares a skill into a fresh folder of the sandbox (a new runtime attached to it). */
async function prepareIn(dir: string, side: "folder" | "pkg"): Promise<void> {
  const setup = await sandboxReady();
  const skill = (await skillsOf(dir))[side];
  const runtime = new OpenSandboxSkillRuntime({
    baseUrl: setup.server.url,
    sandboxId: setup.sandboxId,
    cwd: setup.cwd,
    skillsRoot: `${setup.cwd}/s${counter++}`,
    // A loaded machine's disk can take longer than the default 30 s.
    requestTimeoutMs: 600_000,
  });
  await runtime.prepare({ skills: [{ skill }] });
  await runtime.close();
}

/**
 * Installing the 1 GiB package of one format (peak memory) against the
 * system's tool extracting it.
 */
function installBig(format: "zip" | "tar.gz"): BenchCase {
  const archive = format === "zip" ? BIG_ZIP : BIG_TAR_GZ;
  const [label, command, args] = format === "zip"
    ? ["unzip -q", "unzip", (root: string) => ["-q", archive, "-d", root]]
    : ["tar -xzf", "tar", (root: string) => ["-xzf", archive, "-C", root]];
  return {
    id: format === "zip"
      ? "package-install-1gib"
      : "package-install-1gib-tar-gz",
    title: `install a 1 GiB ${
      format === "zip" ? "" : "tar.gz "
    }package (one incompressible 1 GiB file), peak memory`,
    module: import.meta.url,
    setup: packBig,
    ours: {
      label: "installPackage",
      fn: async () => {
        const root = fresh();
        await installPackage({ path: archive }, { root });
        await Deno.remove(root, { recursive: true });
      },
    },
    baseline: {
      label,
      fn: async () => {
        const root = fresh();
        await Deno.mkdir(root);
        await run(command, args(root));
        await Deno.remove(root, { recursive: true });
      },
    },
    iterations: 1,
    rounds: 2,
    noWarmup: true,
    maxRssMiB: 100,
    ...(format === "zip" ? { skipReason: skipWithoutZip } : {}),
  };
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
  installBig("zip"),
  installBig("tar.gz"),
];

for (
  const [id, title, dir, setup, iterations] of [
    [
      "package-prepare-opensandbox-canvas-design",
      "prepare canvas-design (83 files, 5.5 MB) in the OpenSandbox test server",
      CANVAS,
      undefined,
      5,
    ],
    [
      "package-prepare-opensandbox-5000-files",
      "prepare the generated 5,000-file skill in the OpenSandbox test server",
      MANY,
      generateManyFiles,
      3,
    ],
  ] as const
) {
  cases.push({
    id,
    title,
    module: import.meta.url,
    ...(setup ? { setup } : {}),
    ours: {
      label: "straight from its package (tar.gz streamed, extracted there)",
      fn: () => prepareIn(dir, "pkg"),
    },
    baseline: {
      label: "from its folder (uploaded file by file)",
      fn: () => prepareIn(dir, "folder"),
    },
    iterations,
    rounds: 2,
  });
}

if (import.meta.main) {
  await runChild(cases);
  // The in-process test server would keep the child alive.
  if (sandbox) await (await sandbox).server.close();
  Deno.exit(0);
}
