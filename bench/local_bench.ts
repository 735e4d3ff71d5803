/**
 * Benchmarks of the local runtime, each beside a bare `Deno.Command` (or
 * `cp -r`) baseline: a tiny command, 1 GiB of output, 100 concurrent
 * commands, and a conversation `prepare` of a real and of a many-file skill;
 * and the isolated mode (bubblewrap) beside the plain one.
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import { BubblewrapLauncher } from "../runtimes/local/isolated.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import type { Skill } from "../skill/types.ts";

const ONE_GIB = 1024 * 1024 * 1024;
const DATA = new URL("./.data/local/", import.meta.url).pathname;
const MANY_FILES = `${DATA}many-files`;
const CANVAS = new URL(
  "../../shared/corpora/anthropics-skills/skills/canvas-design",
  import.meta.url,
).pathname;

let runtime: LocalSkillRuntime | undefined;
function plainRuntime(): LocalSkillRuntime {
  return runtime ??= new LocalSkillRuntime();
}

async function discard(stream: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.byteLength;
  return bytes;
}

async function bareDrain(
  command: string,
  options: { detached?: boolean; setsid?: boolean } = {},
): Promise<number> {
  const child = new Deno.Command(options.setsid ? "setsid" : "bash", {
    args: options.setsid ? ["bash", "-c", command] : ["-c", command],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: options.detached ?? false,
  }).spawn();
  const [bytes] = await Promise.all([
    discard(child.stdout),
    discard(child.stderr),
    child.status,
  ]);
  return bytes;
}

/** A temp root for this process's conversations, removed when it exits. */
let conversations: string | undefined;
let counter = 0;
function conversationsRoot(): string {
  if (!conversations) {
    conversations = Deno.makeTempDirSync({ prefix: "skillrun-bench-" });
    const root = conversations;
    globalThis.addEventListener("unload", () => {
      Deno.removeSync(root, { recursive: true });
    });
  }
  return conversations;
}

function skillAt(basePath: string, name: string): Skill {
  return {
    name,
    description: `The ${name} skill`,
    basePath,
    location: `${basePath}/SKILL.md`,
    instructions: "",
    frontMatter: {},
    warnings: [],
  };
}

async function prepareInFreshConversation(
  skill: Skill,
  options: { isolated?: boolean; bootstrap?: readonly string[] } = {},
): Promise<void> {
  await using local = await LocalSkillRuntime.create({
    conversationsRoot: conversationsRoot(),
    conversationId: `bench-${counter++}`,
    ...(options.isolated ? { launcher: await isolatedLauncher() } : {}),
  });
  const config = options.bootstrap
    ? { config: new SkillRuntimeConfig({ bootstrap: [...options.bootstrap] }) }
    : {};
  const [prepared] = await local.prepare({ skills: [{ skill, ...config }] });
  if (!prepared) throw new Error("Nothing prepared");
}

/** One sandbox launcher per child process (its checks are made once). */
let launcher: Promise<BubblewrapLauncher> | undefined;
function isolatedLauncher(): Promise<BubblewrapLauncher> {
  return launcher ??= BubblewrapLauncher.create();
}

let unhardened: Promise<LocalSkillRuntime> | undefined;
/** An isolated runtime without the descriptor and seccomp fences (for their cost). */
function unhardenedRuntime(): Promise<LocalSkillRuntime> {
  return unhardened ??= BubblewrapLauncher.create({ hardening: false }).then(
    (launcher) => new LocalSkillRuntime({ launcher }),
  );
}

let isolated: Promise<LocalSkillRuntime> | undefined;
function isolatedRuntime(): Promise<LocalSkillRuntime> {
  return isolated ??= isolatedLauncher().then((launcher) =>
    new LocalSkillRuntime({ launcher })
  );
}

function noBwrap(): string | undefined {
  try {
    const output = new Deno.Command("bwrap", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return output.success ? undefined : "bwrap does not run here";
  } catch {
    return "bwrap is not installed (apt-get install bubblewrap)";
  }
}

function noCanvas(): string | undefined {
  try {
    Deno.statSync(`${CANVAS}/SKILL.md`);
    return undefined;
  } catch {
    return `the corpus is missing at ${CANVAS}`;
  }
}

async function copyWithCp(source: string): Promise<void> {
  const target = `${conversationsRoot()}/cp-${counter++}`;
  const output = await new Deno.Command("cp", {
    args: ["-r", source, target],
    stdin: "null",
  }).output();
  if (!output.success) throw new Error(`cp failed: ${output.code}`);
}

async function makeManyFiles(): Promise<void> {
  try {
    const info = await Deno.stat(`${MANY_FILES}/SKILL.md`);
    if (info.isFile) return;
  } catch {
    // make it
  }
  await Deno.mkdir(MANY_FILES, { recursive: true });
  await Deno.writeTextFile(
    `${MANY_FILES}/SKILL.md`,
    "---\nname: many-files\ndescription: 5,000 small files\n---\n",
  );
  for (let dir = 0; dir < 50; dir++) {
    const folder = `${MANY_FILES}/d${dir}`;
    await Deno.mkdir(folder, { recursive: true });
    for (let file = 0; file < 100; file++) {
      await Deno.writeTextFile(
        `${folder}/f${file}.txt`,
        `file ${dir}/${file}\n`.repeat(8),
      );
    }
  }
}

/** The cases, for `bench/main.ts`. */
export const cases: BenchCase[] = [
  {
    id: "local-execute-true",
    title: 'local execute({ command: "true" })',
    module: import.meta.url,
    // A few ms each: many iterations and rounds, so a 10 % target is not
    // decided by the noise of a shared machine.
    iterations: 100,
    rounds: 5,
    maxRatio: 1.1,
    ours: {
      label: "execute",
      fn: async () => {
        const result = await plainRuntime().execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
    },
    // The bare primitive that gives the same guarantee: the command in its own
    // process group (a detached spawn, which makes Deno fork instead of
    // posix_spawn: its setsid runs in a pre_exec hook), pipes drained.
    baseline: {
      label: "bare detached spawn + drain",
      fn: () => bareDrain("true", { detached: true }),
    },
    // No process group at all: reported as information, not the baseline.
    extra: [{
      label: "bare Deno.Command (no group)",
      fn: () => new Deno.Command("bash", { args: ["-c", "true"] }).output(),
    }],
  },
  {
    // Issue 26: the three in one process, iteration after iteration (order
    // reversed every other time), so a loaded machine hits them alike.
    id: "local-execute-true-paired",
    title:
      'local execute({ command: "true" }) beside a bare detached and a bare plain spawn, interleaved',
    module: import.meta.url,
    iterations: 100,
    rounds: 3,
    interleaved: true,
    ours: {
      label: "execute",
      fn: async () => {
        const result = await plainRuntime().execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
    },
    baseline: {
      label: "bare detached spawn + drain",
      fn: () => bareDrain("true", { detached: true }),
    },
    extra: [{
      label: "bare plain spawn + drain (no group)",
      fn: () => bareDrain("true"),
    }, {
      label: "bare plain spawn of setsid bash + drain",
      fn: () => bareDrain("true", { setsid: true }),
    }],
  },
  {
    id: "local-execute-1gib",
    title: "local execute: 1 GiB to stdout",
    module: import.meta.url,
    iterations: 3,
    maxRatio: 1.2,
    maxRssDeltaMiB: 32,
    ours: {
      label: "execute",
      fn: async () => {
        const result = await plainRuntime().execute({
          command: `head -c ${ONE_GIB} /dev/zero`,
        });
        if (result.stdoutBytes !== ONE_GIB) throw new Error("short output");
      },
    },
    baseline: {
      label: "bare drain",
      fn: async () => {
        const bytes = await bareDrain(`head -c ${ONE_GIB} /dev/zero`);
        if (bytes !== ONE_GIB) throw new Error("short output");
      },
    },
    extra: [{
      label: "no pipe (> /dev/null)",
      fn: () =>
        new Deno.Command("bash", {
          args: ["-c", `head -c ${ONE_GIB} /dev/zero > /dev/null`],
        }).output(),
    }],
  },
  {
    id: "local-execute-100-concurrent",
    title: "local execute: 100 concurrent `echo $N`",
    module: import.meta.url,
    iterations: 5,
    ours: {
      label: "execute",
      fn: async () => {
        const results = await Promise.all(
          Array.from(
            { length: 100 },
            (_, n) =>
              plainRuntime().execute({
                command: 'echo "$N"',
                env: { N: String(n) },
              }),
          ),
        );
        results.forEach((result, n) => {
          if (result.stdout !== `${n}\n`) throw new Error(`wrong output ${n}`);
        });
      },
    },
    extra: [{
      label: "bare detached spawn + drain",
      fn: () =>
        Promise.all(
          Array.from(
            { length: 100 },
            () => bareDrain("echo 1", { detached: true }),
          ),
        ),
    }],
    baseline: {
      label: "bare Deno.Command",
      fn: async () => {
        const decoder = new TextDecoder();
        const outputs = await Promise.all(
          Array.from(
            { length: 100 },
            (_, n) =>
              new Deno.Command("bash", {
                args: ["-c", 'echo "$N"'],
                env: { N: String(n) },
              }).output(),
          ),
        );
        outputs.forEach((output, n) => {
          if (decoder.decode(output.stdout) !== `${n}\n`) {
            throw new Error(`wrong output ${n}`);
          }
        });
      },
    },
  },
  {
    id: "local-prepare-canvas-design",
    title: "local conversation prepare of canvas-design",
    module: import.meta.url,
    iterations: 10,
    rounds: 5,
    maxRatio: 1.5,
    skipReason: noCanvas,
    ours: {
      label: "prepare",
      fn: () => prepareInFreshConversation(skillAt(CANVAS, "canvas-design")),
    },
    baseline: { label: "cp -r", fn: () => copyWithCp(CANVAS) },
  },
  {
    id: "local-prepare-5000-files",
    title: "local conversation prepare of a 5,000-file skill",
    module: import.meta.url,
    iterations: 5,
    maxRatio: 1.5,
    setup: makeManyFiles,
    ours: {
      label: "prepare",
      fn: () => prepareInFreshConversation(skillAt(MANY_FILES, "many-files")),
    },
    baseline: { label: "cp -r", fn: () => copyWithCp(MANY_FILES) },
  },
  {
    id: "local-isolated-execute-true",
    title: 'isolated execute({ command: "true" }) vs plain',
    module: import.meta.url,
    iterations: 30,
    rounds: 5,
    maxRatio: 3,
    skipReason: noBwrap,
    ours: {
      label: "isolated execute",
      fn: async () => {
        const result = await (await isolatedRuntime()).execute({
          command: "true",
        });
        if (result.exitCode !== 0) throw new Error(result.stderr);
      },
    },
    baseline: {
      label: "plain execute",
      fn: async () => {
        const result = await plainRuntime().execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
    },
    extra: [{
      label: "bare bwrap (a minimal sandbox: /usr, proc, dev, tmp; no limits)",
      fn: () =>
        new Deno.Command("bwrap", {
          args: [
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--",
            "bash",
            "-c",
            "true",
          ],
        }).output(),
    }],
  },
  {
    id: "local-isolated-hardening",
    title:
      'isolated execute({ command: "true" }): with the descriptor and setuid/AF_UNIX fences vs without',
    module: import.meta.url,
    iterations: 30,
    rounds: 5,
    maxRatio: 1.1,
    skipReason: noBwrap,
    ours: {
      label: "hardened (stdio only, seccomp)",
      fn: async () => {
        const result = await (await isolatedRuntime()).execute({
          command: "true",
        });
        if (result.exitCode !== 0) throw new Error(result.stderr);
      },
    },
    baseline: {
      label: "hardening: false",
      fn: async () => {
        const result = await (await unhardenedRuntime()).execute({
          command: "true",
        });
        if (result.exitCode !== 0) throw new Error(result.stderr);
      },
    },
  },
  {
    id: "local-isolated-prepare-canvas-design",
    title: "isolated conversation prepare of canvas-design vs plain",
    module: import.meta.url,
    iterations: 10,
    rounds: 5,
    maxRatio: 1.2,
    skipReason: () => noBwrap() ?? noCanvas(),
    ours: {
      label: "isolated prepare",
      fn: () =>
        prepareInFreshConversation(skillAt(CANVAS, "canvas-design"), {
          isolated: true,
        }),
    },
    baseline: {
      label: "plain prepare",
      fn: () => prepareInFreshConversation(skillAt(CANVAS, "canvas-design")),
    },
    extra: [{
      label: "isolated prepare + bootstrap `true`",
      fn: () =>
        prepareInFreshConversation(skillAt(CANVAS, "canvas-design"), {
          isolated: true,
          bootstrap: ["true"],
        }),
    }, {
      label: "plain prepare + bootstrap `true`",
      fn: () =>
        prepareInFreshConversation(skillAt(CANVAS, "canvas-design"), {
          bootstrap: ["true"],
        }),
    }],
  },
];

if (import.meta.main) await runChild(cases);
