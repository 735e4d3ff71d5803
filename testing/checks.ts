/**
 * The checks of the conformance kit, one per item of the checklist a runtime
 * author follows. Each check drives a runtime only through the
 * `SkillRuntime` contract (its `prepare`, `execute`, `fs`, `environment` and
 * `close`); skill sources and download targets are local files of the kit.
 * Commands are POSIX shell (`bash -c`) and runtime paths are joined with `/`.
 *
 * @module
 */
import { delay } from "../_internal/async.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import type {
  ExecuteResult,
  PreparedSkill,
  SkillRuntime,
} from "../runtimes/types.ts";
import type { Skill } from "../skill/types.ts";
import {
  type Harness,
  join,
  messageOf,
  type RuntimeMode,
  settle,
} from "./_harness.ts";

/** Which modes a check needs. */
export type CheckModes = "one" | "each" | "workspace";

/** One check of the kit. */
export interface ConformanceCheck {
  /** A stable id, e.g. `prepare-count-order`. */
  readonly id: string;
  /** What it checks, as a test step's name. */
  readonly title: string;
  /**
   * `one`: runs once, in plain mode when the runtime has one, else in a
   * workspace; `each`: runs in every mode the runtime has; `workspace`: only
   * in workspace mode (ignored, saying so, for a runtime without one).
   */
  readonly modes: CheckModes;
  /**
   * Runs the check against runtimes opened through the harness.
   *
   * @param harness The check's harness.
   * @param mode The mode to open runtimes in.
   * @returns When the runtime passed.
   */
  run(harness: Harness, mode: RuntimeMode): Promise<void>;
}

/** A bootstrap that appends one line to `$CONFORMANCE_LOG` per run. */
const LOG_RUN = 'echo run >> "$CONFORMANCE_LOG"';

/** Lines of a runtime file, 0 when it does not exist. */
async function countLines(
  runtime: SkillRuntime,
  path: string,
): Promise<number> {
  const info = await runtime.fs.stat(path);
  if (info === null) return 0;
  const text = await runtime.fs.readText(path, { maxBytes: 1 << 20 });
  return text.split("\n").filter((line) => line !== "").length;
}

/** Prepares one skill and returns it. */
async function prepareOne(
  runtime: SkillRuntime,
  skill: Skill,
  config?: SkillRuntimeConfig,
): Promise<PreparedSkill> {
  const [prepared] = await runtime.prepare({
    skills: [config ? { skill, config } : { skill }],
  });
  if (!prepared) throw new Error("prepare() returned no skill for one asked");
  return prepared;
}

/** Runs a command that must exit 0 and returns its stdout. */
async function run(
  h: Harness,
  runtime: SkillRuntime,
  command: string,
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const result = await runtime.execute({
    command,
    timeoutMs: 30_000,
    ...options,
  });
  h.expect(
    result.exitCode === 0 && !result.timedOut,
    `"${command}" exited with ${result.exitCode}${
      result.timedOut ? " (timed out)" : ""
    }: ${result.stderr.slice(0, 500)}`,
  );
  return result.stdout;
}

/** Whether a prepared skill is the source folder itself (used in place). */
/** Expects a settled call to have succeeded; the message gets its error. */
function expectOk(
  h: Harness,
  settled: { readonly ok: boolean; readonly error?: unknown },
  message: string,
): void {
  h.expect(
    settled.ok,
    settled.ok ? message : `${message}: ${messageOf(settled.error)}`,
  );
}

/**
 * After a preparation that failed (its bootstrap logged one run into
 * `<name>-boot.log` and waits for `<name>-flag`): sets the flag, checks that
 * the next `prepare()` retries and succeeds, and that the bootstrap ran twice.
 */
async function expectRetried(
  h: Harness,
  runtime: SkillRuntime,
  skill: Skill,
  config: SkillRuntimeConfig,
  name: string,
  failure: string,
): Promise<void> {
  const wd = runtime.cwd;
  await runtime.fs.writeText(join(wd, `${name}-flag`), "");
  const retried = await settle(prepareOne(runtime, skill, config));
  expectOk(h, retried, `the next prepare() must retry and succeed`);
  const runs = await countLines(runtime, join(wd, `${name}-boot.log`));
  h.expect(
    runs === 2,
    `the bootstrap ran ${runs} times over ${failure} and a retried preparation (expected 2: nothing cached)`,
  );
}

function inPlace(prepared: PreparedSkill, skill: Skill): boolean {
  return prepared.basePath === skill.basePath;
}

/** Deterministic bytes of every value, line ends and invalid UTF-8 included. */
function binaryFixture(): Uint8Array {
  const bytes = new Uint8Array(70_000);
  for (let i = 0; i < 256; i++) bytes[i] = i;
  bytes.set([13, 10, 10, 13, 0xc3, 0x28, 0xff, 0xfe, 0, 0], 256);
  let state = 0x2545f491;
  for (let i = 266; i < bytes.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  return bytes;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function localNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

const prepareCountOrder: ConformanceCheck = {
  id: "prepare-count-order",
  title: "prepare() returns as many skills as asked, in the same order",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const c = await h.skill("charlie");
    const a = await h.skill("alpha");
    const b = await h.skill("bravo");
    h.expect(
      (await runtime.prepare({ skills: [] })).length === 0,
      "prepare() of no skill must return none",
    );
    const prepared = await runtime.prepare({
      skills: [{ skill: c }, { skill: a }, { skill: b }],
    });
    const names = prepared.map((p) => p.name);
    h.expect(
      names.join() === [c, a, b].map((s) => s.name).join(),
      `prepare() of [${c.name}, ${a.name}, ${b.name}] returned [${names}]`,
    );
    const bases = new Set(prepared.map((p) => p.basePath));
    h.expect(bases.size === 3, "each skill must get its own base path");
    for (const [index, skill] of [c, a, b].entries()) {
      const one = prepared[index]!;
      h.expect(
        one.skill.name === skill.name,
        `prepared[${index}].skill is not the skill asked for`,
      );
      const text = await runtime.fs.readText(join(one.basePath, "SKILL.md"), {
        maxBytes: 1 << 16,
      });
      h.expect(
        text.includes(skill.instructions.trim()),
        `${one.basePath}/SKILL.md is not the skill's SKILL.md`,
      );
    }
    const again = await runtime.prepare({
      skills: [{ skill: b }, { skill: c }, { skill: b }],
    });
    h.expect(
      again.map((p) => p.name).join() === [b, c, b].map((s) => s.name).join(),
      `prepare() of [${b.name}, ${c.name}, ${b.name}] returned [${
        again.map((p) => p.name)
      }]`,
    );
  },
};

const prepareIdempotent: ConformanceCheck = {
  id: "prepare-idempotent",
  title:
    "prepare() is idempotent per skill: one bootstrap for repeated and concurrent calls",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const log = join(runtime.cwd, "idempotent-boot.log");
    const skill = await h.skill("idem");
    const config = new SkillRuntimeConfig({
      env: { CONFORMANCE_LOG: log },
      bootstrap: [LOG_RUN],
    });
    const concurrent = await Promise.all(
      [1, 2, 3].map(() => prepareOne(runtime, skill, config)),
    );
    const twice = await runtime.prepare({
      skills: [{ skill, config }, { skill, config }],
    });
    const later = await prepareOne(runtime, skill, config);
    const bases = new Set(
      [...concurrent, ...twice, later].map((p) => p.basePath),
    );
    h.expect(
      bases.size === 1,
      `one skill got several base paths: ${[...bases].join(", ")}`,
    );
    const runs = await countLines(runtime, log);
    h.expect(
      runs === 1,
      `the bootstrap ran ${runs} times for one skill prepared 6 times (3 of them at once); expected once`,
    );
  },
};

const environmentInjected: ConformanceCheck = {
  id: "environment-injected",
  title:
    "the configured environment reaches the bootstrap and every later command",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    // Spaces, quotes and `$`: a value is passed as it is, never through a shell.
    const value = `a b 'c' "d" $HOME \`x\` ;e`;
    const skill = await h.skill("env");
    const other = await h.skill("env-other");
    const config = new SkillRuntimeConfig({
      env: { CONFORMANCE_VALUE: value },
      bootstrap: ["printf '%s' \"$CONFORMANCE_VALUE\" > bootstrap-env.txt"],
    });
    const prepared = await prepareOne(runtime, skill, config);
    const seen = await runtime.fs.readText(
      join(prepared.basePath, "bootstrap-env.txt"),
      { maxBytes: 1 << 16 },
    );
    h.expect(
      seen === value,
      `the bootstrap saw CONFORMANCE_VALUE=${JSON.stringify(seen)}`,
    );
    const echo = "printf '%s' \"${CONFORMANCE_VALUE-unset}\"";
    for (const attempt of [1, 2]) {
      const out = await run(h, runtime, `unset CONFORMANCE_VALUE; ${echo}`);
      h.expect(out === "unset", "unset inside one command must stay local");
      const got = await run(h, runtime, echo);
      h.expect(
        got === value,
        `command ${attempt} after prepare saw CONFORMANCE_VALUE=${
          JSON.stringify(got)
        }`,
      );
    }
    const inBase = await run(h, runtime, echo, {
      cwd: prepared.basePath,
    });
    h.expect(
      inBase === value,
      `a command in the skill's folder saw ${JSON.stringify(inBase)}`,
    );
    const overridden = await run(h, runtime, echo, {
      env: { CONFORMANCE_VALUE: "from-request" },
    });
    h.expect(
      overridden === "from-request",
      `a request's env must override the configuration's: got ${
        JSON.stringify(overridden)
      }`,
    );
    await prepareOne(
      runtime,
      other,
      new SkillRuntimeConfig({ env: { CONFORMANCE_OTHER: "second" } }),
    );
    const both = await run(
      h,
      runtime,
      'printf \'%s|%s\' "$CONFORMANCE_VALUE" "$CONFORMANCE_OTHER"',
    );
    h.expect(
      both === `${value}|second`,
      `after a second skill, a command saw ${JSON.stringify(both)}`,
    );
    const environment = runtime.environment();
    h.expect(
      environment.CONFORMANCE_VALUE === value &&
        environment.CONFORMANCE_OTHER === "second",
      "environment() must hold every prepared skill's configured variables",
    );
  },
};

const bootstrapAfterUpload: ConformanceCheck = {
  id: "bootstrap-after-upload",
  title:
    "the bootstrap runs after an actual upload (or on the first local preparation), never without",
  modes: "each",
  async run(h, mode) {
    const first = await h.open(mode);
    const log = join(first.cwd, "upload-boot.log");
    const skill = await h.skill("upload", { "data.txt": "source v1" });
    const config = new SkillRuntimeConfig({
      env: { CONFORMANCE_LOG: log },
      bootstrap: [LOG_RUN],
    });
    const sourceData = `${skill.basePath}/data.txt`;
    const prepared = await prepareOne(first, skill, config);
    const data = join(prepared.basePath, "data.txt");
    h.expect(
      await countLines(first, log) === 1,
      "the first preparation in a fresh runtime must run the bootstrap once",
    );
    h.expect(
      await first.fs.readText(data, { maxBytes: 1024 }) === "source v1",
      "the prepared skill must hold the source's files",
    );
    // A mark in the prepared copy: an upload (or copy) replaces it.
    await first.fs.writeText(data, "changed in the runtime");
    await first.close();

    const step = async (what: string) => {
      const runtime = await h.open(mode);
      const before = await countLines(runtime, log);
      const again = await prepareOne(runtime, skill, config);
      const after = await countLines(runtime, log);
      const content = await runtime.fs.readText(
        join(again.basePath, "data.txt"),
        { maxBytes: 1024 },
      );
      const uploaded = content === await Deno.readTextFile(sourceData);
      const ran = after - before;
      h.expect(
        uploaded ? ran === 1 : ran === 0,
        uploaded
          ? `${what}: the skill was uploaded again but the bootstrap ran ${ran} times (expected once)`
          : `${what}: nothing was uploaded but the bootstrap ran ${ran} times (expected none)`,
      );
      await runtime.close();
      return content;
    };
    await step("a new runtime on the same state");
    await Deno.writeTextFile(sourceData, "source v2");
    const content = await step("a new runtime after the source changed");
    h.expect(
      content === "source v2",
      `after the source changed, a new runtime served ${
        JSON.stringify(content)
      } instead of the new content`,
    );
  },
};

const failedBootstrapNotCached: ConformanceCheck = {
  id: "failed-bootstrap-not-cached",
  title:
    "a failing bootstrap caches nothing (no skill, no environment) and the next call retries",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const wd = runtime.cwd;
    const secret = `sk-conformance-${crypto.randomUUID()}`;
    const skill = await h.skill("failing");
    const config = new SkillRuntimeConfig({
      env: {
        CONFORMANCE_LOG: join(wd, "failing-boot.log"),
        CONFORMANCE_FLAG: join(wd, "failing-flag"),
        CONFORMANCE_TOKEN: secret,
      },
      bootstrap: [
        LOG_RUN,
        'echo "token=$CONFORMANCE_TOKEN" >&2; test -f "$CONFORMANCE_FLAG" || exit 7',
      ],
    });
    const failed = await settle(prepareOne(runtime, skill, config));
    h.expect(!failed.ok, "prepare() must reject when a bootstrap exits 7");
    const message = messageOf(failed.error);
    h.expect(
      !message.includes(secret),
      "the preparation error must not show a configured value",
    );
    const code = (failed.error as { exitCode?: unknown }).exitCode;
    h.expect(
      code === undefined || code === 7,
      `the error says exit code ${code}, the bootstrap exited 7`,
    );
    h.expect(
      runtime.environment().CONFORMANCE_TOKEN === undefined,
      "environment() still holds the variables of a skill that failed to prepare",
    );
    const leaked = await run(
      h,
      runtime,
      'printf %s "${CONFORMANCE_TOKEN-unset}"',
    );
    h.expect(
      leaked === "unset",
      "a command still gets the variables of a skill that failed to prepare",
    );
    await expectRetried(h, runtime, skill, config, "failing", "a failed");
    h.expect(
      runtime.environment().CONFORMANCE_TOKEN === secret,
      "after the retry succeeded, environment() must hold the skill's variables",
    );
  },
};

const timedOutBootstrapNotCached: ConformanceCheck = {
  id: "timed-out-bootstrap-not-cached",
  title:
    "a timed-out bootstrap is stopped, caches nothing and the next call retries",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const wd = runtime.cwd;
    const skill = await h.skill("slow");
    const config = new SkillRuntimeConfig({
      env: {
        CONFORMANCE_LOG: join(wd, "slow-boot.log"),
        CONFORMANCE_FLAG: join(wd, "slow-flag"),
      },
      bootstrap: [{
        command: `${LOG_RUN}; test -f "$CONFORMANCE_FLAG" || sleep 30`,
        // The retry runs under the same limit: 500 ms was too little for a
        // sandbox's start on a loaded machine (bubblewrap, load 11-17).
        timeoutMs: 1_500,
      }],
    });
    const started = performance.now();
    const failed = await settle(prepareOne(runtime, skill, config));
    const took = performance.now() - started;
    h.expect(!failed.ok, "prepare() must reject when a bootstrap times out");
    h.expect(
      took < 10_000,
      `a bootstrap with a 1,500 ms timeout held prepare() for ${
        Math.round(took)
      } ms`,
    );
    const timedOut = (failed.error as { timedOut?: unknown }).timedOut;
    h.expect(
      timedOut === undefined || timedOut === true,
      "the error of a timed-out bootstrap says it did not time out",
    );
    await expectRetried(h, runtime, skill, config, "slow", "a timed-out");
  },
};

const timeoutStopsCommand: ConformanceCheck = {
  id: "timeout-stops-command",
  title:
    "a timeout (or the caller's signal) stops the command and what it started, and says so",
  modes: "one",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const wd = runtime.cwd;
    const late = (name: string) =>
      `(sleep 3; echo late > ${name}-child.txt) & sleep 3; echo late > ${name}.txt`;
    const started = performance.now();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const [timed, aborted] = await Promise.all([
      runtime.execute({ command: late("timeout"), timeoutMs: 300 }),
      runtime.execute({
        command: late("abort"),
        timeoutMs: 60_000,
        signal: controller.signal,
      }),
    ]);
    const took = performance.now() - started;
    const describe = (r: ExecuteResult) =>
      `exitCode ${r.exitCode}, timedOut ${r.timedOut}, aborted ${r.aborted}`;
    h.expect(
      timed.timedOut && !timed.aborted && timed.exitCode === -1,
      `a command past its timeout must give timedOut, exitCode -1: got ${
        describe(timed)
      }`,
    );
    h.expect(
      aborted.aborted && !aborted.timedOut && aborted.exitCode === -1,
      `a command whose signal aborts must give aborted, exitCode -1: got ${
        describe(aborted)
      }`,
    );
    h.expect(
      took < 2_500,
      `the results came ${Math.round(took)} ms after the start (300 ms limits)`,
    );
    await delay(Math.max(0, 4_000 - (performance.now() - started)));
    for (const name of ["timeout", "abort"]) {
      for (const file of [`${name}.txt`, `${name}-child.txt`]) {
        h.expect(
          await runtime.fs.stat(join(wd, file)) === null,
          `the ${
            name === "timeout" ? "timed-out" : "aborted"
          } command (or its child) went on and wrote ${file}`,
        );
      }
    }
  },
};

const outputMapped: ConformanceCheck = {
  id: "output-mapped",
  title: "stdout, stderr, the exit code and the byte counts are mapped",
  modes: "one",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const both = await runtime.execute({
      command: "printf 'out\\n'; printf 'err-é\\n' >&2; exit 3",
    });
    h.expect(
      both.stdout === "out\n" && both.stderr === "err-é\n",
      `stdout and stderr must come apart: got ${JSON.stringify(both.stdout)}, ${
        JSON.stringify(both.stderr)
      }`,
    );
    h.expect(
      both.exitCode === 3 && !both.timedOut && !both.aborted,
      `exit 3 gave exitCode ${both.exitCode}`,
    );
    h.expect(
      both.stdoutBytes === 4 && both.stderrBytes === 7,
      `byte counts 4 and 7 expected, got ${both.stdoutBytes} and ${both.stderrBytes}`,
    );
    h.expect(
      !both.stdoutTruncated && !both.stderrTruncated,
      "a short output must not be marked truncated",
    );
    for (const code of [0, 1, 255]) {
      const result = await runtime.execute({ command: `exit ${code}` });
      h.expect(
        result.exitCode === code && result.stdout === "" &&
          result.stderr === "",
        `exit ${code} gave exitCode ${result.exitCode}`,
      );
    }
    const big = await runtime.execute({
      command: "head -c 100000 /dev/zero | tr '\\0' a",
      maxOutputBytes: 1000,
    });
    h.expect(
      big.exitCode === 0 && big.stdoutBytes === 100_000 &&
        big.stdoutTruncated,
      `100 000 bytes over a 1000-byte cap must be counted and marked truncated: got ${big.stdoutBytes} bytes, truncated ${big.stdoutTruncated}`,
    );
    h.expect(
      big.stdout.length > 0 && big.stdout.length < 10_000 &&
        big.stdout.startsWith("a"),
      `the kept output of a capped stream has ${big.stdout.length} characters`,
    );
  },
};

const textReadCapped: ConformanceCheck = {
  id: "text-read-capped",
  title: "text reads are capped by maxBytes",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const content = "x".repeat(3000);
    await runtime.fs.writeText("capped.txt", content);
    h.expect(
      await runtime.fs.readText("capped.txt", { maxBytes: 3000 }) === content,
      "readText() of a file of exactly maxBytes must return it",
    );
    const over = await settle(
      runtime.fs.readText("capped.txt", { maxBytes: 1000 }),
    );
    h.expect(
      !over.ok,
      "readText() of a 3000-byte file with maxBytes 1000 must be refused",
    );
    await run(h, runtime, "head -c 50000 /dev/zero | tr '\\0' y > made.txt");
    const made = await settle(
      runtime.fs.readText("made.txt", { maxBytes: 1000 }),
    );
    h.expect(
      !made.ok,
      "readText() of a 50 000-byte file made by a command with maxBytes 1000 must be refused",
    );
    const bytes = await settle(
      runtime.fs.readBytes("capped.txt", { maxBytes: 1000 }),
    );
    h.expect(
      !bytes.ok,
      "readBytes() over its maxBytes must be refused",
    );
  },
};

const binaryIdentical: ConformanceCheck = {
  id: "binary-identical",
  title:
    "binary files are byte-identical through upload, readBytes, readStream and download",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const blob = binaryFixture();
    const skill = await h.skill("binary", { "assets/blob.bin": blob });
    const prepared = await prepareOne(runtime, skill);
    const path = join(prepared.basePath, "assets/blob.bin");
    const info = await runtime.fs.stat(path);
    h.expect(
      info?.type === "file" && info.size === blob.length,
      `the uploaded file is ${
        info?.type ?? "missing"
      } of ${info?.size} bytes, not ${blob.length}`,
    );
    const size = await run(h, runtime, "wc -c < assets/blob.bin", {
      cwd: prepared.basePath,
    });
    h.expect(
      Number(size.trim()) === blob.length,
      `a command sees ${size.trim()} bytes in the uploaded file`,
    );
    h.expect(
      sameBytes(await runtime.fs.readBytes(path), blob),
      "readBytes() differs from the source file",
    );
    h.expect(
      sameBytes(await drain(await runtime.fs.readStream(path)), blob),
      "readStream() differs from the source file",
    );
    if (runtime.fs.openFile) {
      const opened = await runtime.fs.openFile(path);
      h.expect(
        opened?.info.type === "file" && opened.info.size === blob.length &&
          opened.stream !== undefined,
        `openFile() gave ${
          opened?.info.type ?? "nothing"
        } of ${opened?.info.size} bytes${
          opened?.stream ? "" : ", without a stream"
        }`,
      );
      h.expect(
        opened?.stream !== undefined &&
          sameBytes(await drain(opened.stream), blob),
        "openFile()'s stream differs from the source file",
      );
    }
    await Deno.mkdir(`${h.root}/downloads`);
    const target = `${h.root}/downloads/blob.bin`;
    const result = await runtime.fs.download(path, target);
    h.expect(
      result.bytes === blob.length,
      `download() reported ${result.bytes} bytes`,
    );
    h.expect(
      sameBytes(await Deno.readFile(target), blob),
      "the downloaded file differs from the source file",
    );
    await run(h, runtime, "cp assets/blob.bin made.bin", {
      cwd: prepared.basePath,
    });
    h.expect(
      sameBytes(
        await runtime.fs.readBytes(join(prepared.basePath, "made.bin")),
        blob,
      ),
      "readBytes() of a file a command wrote differs",
    );
  },
};

const failedDownloadNoFile: ConformanceCheck = {
  id: "failed-download-no-file",
  title: "a failed download leaves no file (and an existing target untouched)",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const target = `${h.root}/downloads`;
    await Deno.mkdir(target);
    await runtime.fs.writeText("present.txt", "present");
    const missing = await settle(
      runtime.fs.download("missing-file.bin", `${target}/out.bin`),
    );
    h.expect(!missing.ok, "download() of a missing file must reject");
    let names = await localNames(target);
    h.expect(
      names.length === 0,
      `a failed download left ${names.join(", ")} in the target folder`,
    );
    await Deno.writeTextFile(`${target}/keep.bin`, "keep");
    const over = await settle(
      runtime.fs.download("missing-file.bin", `${target}/keep.bin`),
    );
    h.expect(!over.ok, "download() of a missing file must reject");
    const aborted = await settle(
      runtime.fs.download("present.txt", `${target}/aborted.txt`, {
        signal: AbortSignal.abort(),
      }),
    );
    h.expect(!aborted.ok, "download() with an aborted signal must reject");
    const folder = await settle(
      runtime.fs.download(".", `${target}/folder.bin`),
    );
    h.expect(!folder.ok, "download() of a folder must reject");
    names = await localNames(target);
    h.expect(
      names.join() === "keep.bin",
      `failed downloads left ${names.join(", ")} in the target folder`,
    );
    h.expect(
      await Deno.readTextFile(`${target}/keep.bin`) === "keep",
      "a failed download over an existing file changed it",
    );
  },
};

const closeIdempotent: ConformanceCheck = {
  id: "close-idempotent",
  title: "close() is idempotent, used or not, in turn or at once",
  modes: "each",
  async run(h, mode) {
    const unused = await h.open(mode);
    const unusedTwice = await settle(async () => {
      await unused.close();
      await unused.close();
    });
    expectOk(
      h,
      unusedTwice,
      `close() twice on a runtime never used must resolve`,
    );
    const used = await h.open(mode);
    await run(h, used, "true");
    const closing = await settle(Promise.all([used.close(), used.close()]));
    expectOk(h, closing, `two close() at once must both resolve`);
    const again = await settle(() => used.close());
    expectOk(h, again, `close() of a closed runtime must resolve`);
    const disposed = await settle(() => used[Symbol.asyncDispose]());
    expectOk(h, disposed, `dispose after close() must resolve`);
  },
};

const configNotIgnored: ConformanceCheck = {
  id: "config-not-ignored",
  title:
    "a different configuration for a prepared skill is refused, not silently ignored",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const skill = await h.skill("configured");
    const first = new SkillRuntimeConfig({ env: { CONFORMANCE_CHOICE: "1" } });
    const same = new SkillRuntimeConfig({ env: { CONFORMANCE_CHOICE: "1" } });
    const other = new SkillRuntimeConfig({ env: { CONFORMANCE_CHOICE: "2" } });
    await prepareOne(runtime, skill, first);
    const again = await settle(prepareOne(runtime, skill, same));
    expectOk(
      h,
      again,
      `preparing again with an equal configuration must succeed`,
    );
    const bare = await settle(prepareOne(runtime, skill));
    expectOk(h, bare, `preparing again without a configuration must succeed`);
    const changed = await settle(prepareOne(runtime, skill, other));
    h.expect(
      !changed.ok,
      "preparing a prepared skill with a different configuration must be refused (it would be ignored)",
    );
    const seen = await run(h, runtime, 'printf %s "$CONFORMANCE_CHOICE"');
    h.expect(
      seen === "1",
      `after the refused configuration, commands saw CONFORMANCE_CHOICE=${
        JSON.stringify(seen)
      }`,
    );
  },
};

/** A folder and a file whose names a shell would split or interpret. */
const ODD_DIR = `odd dir 'q' "dq" ü`;
const ODD_FILE = "file (1) & ; [x] #!*?.txt";

const pathsQuoted: ConformanceCheck = {
  id: "paths-quoted",
  title:
    "paths with spaces, quotes and shell characters are used exactly (files, uploads, working directories)",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const path = `${ODD_DIR}/${ODD_FILE}`;
    await runtime.fs.writeText(path, "odd content");
    h.expect(
      await runtime.fs.readText(path, { maxBytes: 100 }) === "odd content",
      "a file written under an odd name does not read back",
    );
    const info = await runtime.fs.stat(path);
    h.expect(
      info?.type === "file" && info.name === ODD_FILE,
      `stat() of ${JSON.stringify(path)} gave ${JSON.stringify(info?.name)}`,
    );
    const listed = await runtime.fs.list(ODD_DIR);
    h.expect(
      listed.entries.map((e) => e.name).join("\n") === ODD_FILE,
      `list() of the odd folder gave ${
        JSON.stringify(listed.entries.map((e) => e.name))
      }`,
    );
    const inside = await runtime.execute({
      command: 'pwd; printf "%s\\n" *',
      cwd: ODD_DIR,
    });
    const [pwd, name] = inside.stdout.split("\n");
    h.expect(
      inside.exitCode === 0 && pwd?.endsWith(`/${ODD_DIR}`) &&
        name === ODD_FILE,
      `a command in the folder ${
        JSON.stringify(ODD_DIR)
      } failed or ran elsewhere: exit ${inside.exitCode}, ${
        JSON.stringify(inside.stdout)
      } ${JSON.stringify(inside.stderr.slice(0, 200))}`,
    );
    await Deno.mkdir(`${h.root}/downloads`, { recursive: true });
    const target = `${h.root}/downloads/odd-download.txt`;
    await runtime.fs.download(path, target);
    h.expect(
      await Deno.readTextFile(target) === "odd content",
      "download() of an odd name differs",
    );
    const skill = await h.skill("odd", { [`assets/${path}`]: "uploaded" });
    const prepared = await prepareOne(runtime, skill);
    const uploaded = await settle(
      runtime.fs.readText(join(prepared.basePath, `assets/${path}`), {
        maxBytes: 100,
      }),
    );
    h.expect(
      uploaded.ok && uploaded.value === "uploaded",
      "a skill file with an odd name did not arrive under its name",
    );
  },
};

/** Files every upload must leave out (the default copy policy's kinds). */
const SECRET_FILES = [
  ".env",
  ".env.local",
  "id_rsa",
  "keys/server.pem",
  "keys/client.key",
  ".git/config",
  ".ssh/id_ed25519",
  ".aws/credentials",
  "credentials.json",
  ".npmrc",
  ".netrc",
];

const secretFilesNotUploaded: ConformanceCheck = {
  id: "secret-files-not-uploaded",
  title: "secret files (.env, keys, .git, .ssh, .aws...) are not uploaded",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const files: Record<string, string> = { "visible.txt": "visible" };
    for (const path of SECRET_FILES) files[path] = `secret ${path}`;
    const skill = await h.skill("secrets", files);
    const prepared = await prepareOne(runtime, skill);
    if (inPlace(prepared, skill)) return; // used in place: nothing uploaded
    h.expect(
      await runtime.fs.stat(join(prepared.basePath, "visible.txt")) !== null,
      "an ordinary file of the skill was not uploaded",
    );
    const found: string[] = [];
    for (const path of SECRET_FILES) {
      if (await runtime.fs.stat(join(prepared.basePath, path)) !== null) {
        found.push(path);
      }
    }
    h.expect(
      found.length === 0,
      `secret files were uploaded: ${found.join(", ")}`,
    );
  },
};

const symlinksNotFollowed: ConformanceCheck = {
  id: "symlinks-not-followed",
  title: "symlinks of a skill are not followed when it is uploaded",
  modes: "each",
  async run(h, mode) {
    const runtime = await h.open(mode);
    const outside = `${h.root}/outside-${mode}`;
    await Deno.mkdir(outside);
    const secret = `outside secret ${crypto.randomUUID()}`;
    await Deno.writeTextFile(`${outside}/secret.txt`, secret);
    const skill = await h.skill("links", { "visible.txt": "visible" });
    await Deno.symlink(`${outside}/secret.txt`, `${skill.basePath}/linked.txt`);
    await Deno.symlink(outside, `${skill.basePath}/linked-dir`);
    await Deno.symlink("visible.txt", `${skill.basePath}/inner-link.txt`);
    const prepared = await prepareOne(runtime, skill);
    if (inPlace(prepared, skill)) return; // used in place: nothing uploaded
    for (const name of ["linked.txt", "linked-dir", "inner-link.txt"]) {
      const info = await runtime.fs.stat(join(prepared.basePath, name));
      h.expect(
        info === null || info.type === "symlink",
        `the symlink ${name} was followed: it arrived as a ${info?.type}`,
      );
    }
    h.expect(
      await runtime.fs.stat(
        join(prepared.basePath, "linked-dir/secret.txt"),
      ) ===
        null,
      "the folder a symlink points to was uploaded",
    );
    const read = await settle(
      runtime.fs.readText(join(prepared.basePath, "linked.txt"), {
        maxBytes: 1024,
      }),
    );
    h.expect(
      !read.ok || read.value !== secret,
      "the target of a symlink was uploaded",
    );
  },
};

/** The error of a call that must be refused by the workspace fence. */
async function refusedByFence(
  h: Harness,
  what: string,
  call: () => Promise<unknown>,
): Promise<void> {
  const outcome = await settle(call);
  h.expect(!outcome.ok, `${what} must be refused: it is outside the workspace`);
  const name = (outcome.error as { name?: unknown } | null)?.name;
  h.expect(
    name === "WorkspaceEscapeError",
    `${what} must be refused with a WorkspaceEscapeError, got ${
      String(name)
    }: ${messageOf(outcome.error)}`,
  );
}

const workspaceLayout: ConformanceCheck = {
  id: "workspace-layout",
  title:
    "a workspace is <root>/<conversationId>: commands, relative paths and skills live in it",
  modes: "workspace",
  async run(h) {
    const runtime = await h.open("workspace", "layout-1");
    const ws = runtime.cwd;
    h.expect(
      ws.startsWith("/") && ws.split("/").at(-1) === "layout-1",
      `the workspace of conversation "layout-1" is "${ws}"`,
    );
    h.expect(
      await runtime.fs.resolve("notes/a.txt") === `${ws}/notes/a.txt`,
      "a relative path must resolve inside the workspace",
    );
    await runtime.fs.writeText("notes/a.txt", "hello");
    h.expect(
      await run(h, runtime, "cat notes/a.txt") === "hello",
      "a file written with a relative path is not where commands run",
    );
    h.expect(
      (await run(h, runtime, "pwd")).trim() === ws,
      "commands must run in the workspace by default",
    );
    h.expect(
      (await run(h, runtime, "pwd", { cwd: "notes" })).trim() ===
        `${ws}/notes`,
      "a relative working directory must resolve inside the workspace",
    );
    const skill = await h.skill("layout");
    const prepared = await prepareOne(runtime, skill);
    h.expect(
      prepared.basePath.startsWith(`${ws}/`),
      `a skill must be prepared inside the workspace, not at ${prepared.basePath}`,
    );
  },
};

const workspaceFence: ConformanceCheck = {
  id: "workspace-fence",
  title:
    "file paths and working directories outside the workspace are refused (lexically)",
  modes: "workspace",
  async run(h) {
    const runtime = await h.open("workspace", "fence-1");
    const ws = runtime.cwd;
    const parent = ws.slice(0, ws.lastIndexOf("/")) || "/";
    const fs = runtime.fs;
    await refusedByFence(h, 'resolve("../x")', () => fs.resolve("../x"));
    await refusedByFence(
      h,
      'resolve("notes/../../x")',
      () => fs.resolve("notes/../../x"),
    );
    await refusedByFence(
      h,
      "readText of a path in the conversations root",
      () => fs.readText(`${parent}/x.txt`, { maxBytes: 10 }),
    );
    await refusedByFence(
      h,
      'writeText("../escape.txt")',
      () => fs.writeText("../escape.txt", "escaped"),
    );
    await refusedByFence(h, 'stat("/")', () => fs.stat("/"));
    await refusedByFence(h, 'list("..")', () => fs.list(".."));
    await refusedByFence(
      h,
      "readBytes of a sibling",
      () => fs.readBytes(`${parent}/other/x`),
    );
    await refusedByFence(
      h,
      'readStream("../x")',
      () => fs.readStream("../x"),
    );
    if (fs.openFile) {
      await refusedByFence(h, 'openFile("../x")', () => fs.openFile!("../x"));
    }
    await refusedByFence(
      h,
      'download("../x")',
      () => fs.download("../x", `${h.root}/escape.bin`),
    );
    await refusedByFence(
      h,
      'execute({ cwd: ".." })',
      () => runtime.execute({ command: "true", cwd: ".." }),
    );
    h.expect(
      (await run(h, runtime, "test -e ../escape.txt && echo yes || echo no"))
        .trim() === "no",
      "a refused write still created ../escape.txt",
    );
    await fs.writeText("notes/../inside.txt", "inside");
    h.expect(
      await fs.readText(`${ws}/inside.txt`, { maxBytes: 100 }) === "inside",
      "a path that stays inside after `..` must be accepted",
    );
  },
};

const workspaceIds: ConformanceCheck = {
  id: "workspace-ids",
  title: "a conversation id that could leave the conversations root is refused",
  modes: "workspace",
  async run(h) {
    for (
      const id of [
        "../escape",
        "a/b",
        ".",
        "..",
        ".hidden",
        "x".repeat(129),
        "a b",
      ]
    ) {
      const error = await h.refuse(id);
      h.expect(
        error !== null,
        `the conversation id ${JSON.stringify(id)} was accepted`,
      );
    }
    const ok = await settle(() => h.open("workspace", "Thread.2026-07_a"));
    expectOk(h, ok, `the valid conversation id "Thread.2026-07_a" was refused`);
  },
};

const workspaceReuse: ConformanceCheck = {
  id: "workspace-reuse",
  title:
    "a conversation's workspace keeps its files for the next runtime; another conversation does not see them",
  modes: "workspace",
  async run(h) {
    const first = await h.open("workspace", "reuse-a");
    await first.fs.writeText("state/kept.txt", "kept");
    await first.close();
    const second = await h.open("workspace", "reuse-a");
    h.expect(
      second.cwd === first.cwd,
      "a conversation opened again must have the same workspace",
    );
    const kept = await settle(
      second.fs.readText("state/kept.txt", { maxBytes: 100 }),
    );
    h.expect(
      kept.ok && kept.value === "kept",
      "a file written in a conversation is gone when the conversation is opened again",
    );
    const other = await h.open("workspace", "reuse-b");
    h.expect(
      other.cwd !== first.cwd,
      "two conversations share one workspace",
    );
    h.expect(
      await other.fs.stat("state/kept.txt") === null,
      "another conversation sees the files of the first",
    );
  },
};

/** Every check of the kit, in the order they run. */
export const CONFORMANCE_CHECKS: readonly ConformanceCheck[] = Object.freeze([
  prepareCountOrder,
  prepareIdempotent,
  environmentInjected,
  bootstrapAfterUpload,
  failedBootstrapNotCached,
  timedOutBootstrapNotCached,
  configNotIgnored,
  timeoutStopsCommand,
  outputMapped,
  textReadCapped,
  binaryIdentical,
  failedDownloadNoFile,
  closeIdempotent,
  pathsQuoted,
  secretFilesNotUploaded,
  symlinksNotFollowed,
  workspaceLayout,
  workspaceFence,
  workspaceIds,
  workspaceReuse,
]);
