/**
 * The conformance kit for runtime authors (`@skillrun/skillrun/testing`):
 * {@linkcode testRuntimeConformance} registers Deno tests that check any
 * `SkillRuntime` against the checklist of the runtime contract: `prepare`
 * keeps the number and order of the skills and is idempotent; the configured
 * environment reaches the bootstrap and every later command; the bootstrap
 * runs after an actual upload (or on the first local preparation) and never
 * without one; a failing or timed-out bootstrap caches nothing; a different
 * configuration for a prepared skill is refused, not ignored; a timeout stops
 * the command and says `timedOut`; stdout, stderr and the exit code are
 * mapped; text reads are capped; binary files stay byte-identical; a failed
 * download leaves no file; `close()` is idempotent; odd paths (spaces, quotes,
 * shell characters) are used exactly; secret files are not uploaded and
 * symlinks not followed; and the workspace path rules.
 *
 * Each check is also a function ({@linkcode runConformanceCheck}) that throws
 * a {@linkcode ConformanceError} naming the check, for tests of your own.
 *
 * The checks drive the runtime only through its contract: skill sources and
 * download targets are local temporary files of the kit, everything else goes
 * through `prepare`, `execute`, `fs`, `environment` and `close`. Commands are
 * POSIX shell (`bash -c`: `printf`, `sleep`, `head`, `tr`, `wc`, `cp`, `cat`,
 * `test`) and runtime paths are POSIX. Needs `--allow-read` and
 * `--allow-write` of the temporary folder, plus what the runtime needs.
 *
 * @example Running the kit on the local runtime (in a test file)
 * ```ts ignore
 * import { LocalSkillRuntime } from "@skillrun/skillrun/runtime";
 * import { testRuntimeConformance } from "@skillrun/skillrun/testing";
 *
 * testRuntimeConformance("local", (setup) =>
 *   setup.conversationId === undefined
 *     ? new LocalSkillRuntime({ cwd: setup.dir })
 *     : LocalSkillRuntime.create({
 *       conversationsRoot: `${setup.dir}/conversations`,
 *       conversationId: setup.conversationId,
 *     }));
 * ```
 *
 * @module
 */
import {
  ConformanceError,
  type MakeRuntime,
  type RuntimeMode,
  type RuntimeSetup,
  withHarness,
} from "./_harness.ts";
import {
  type CheckModes,
  CONFORMANCE_CHECKS,
  type ConformanceCheck,
} from "./checks.ts";

export { CONFORMANCE_CHECKS, ConformanceError };
export type {
  CheckModes,
  ConformanceCheck,
  MakeRuntime,
  RuntimeMode,
  RuntimeSetup,
};
export type { Harness } from "./_harness.ts";
export type * from "../runtimes/types.ts";
export type * from "../search/types.ts";
export type * from "../skill/types.ts";
export type {
  BootstrapCommand,
  SkillRuntimeConfig,
} from "../runtimes/config.ts";

/** What a runtime supports, and what each check needs around it. */
export interface ConformanceOptions<C = undefined> {
  /**
   * Whether the runtime has a workspace (conversation) mode. Default `true`.
   * `false`: the workspace checks are registered as ignored, saying why.
   */
  readonly workspace?: boolean;
  /**
   * Whether the runtime has a mode without a workspace. Default `true`.
   * `false`: every check runs in a workspace.
   */
  readonly plain?: boolean;
  /**
   * Runs before each check, given the folder the factory gets
   * (`setup.dir`); what it returns is `setup.context` (e.g. a test server or
   * a conversation store shared by the runtimes of one check).
   */
  readonly setUp?: (dir: string) => C | PromiseLike<C>;
  /** Runs after each check, given what `setUp` returned. */
  readonly tearDown?: (context: C) => void | PromiseLike<void>;
  /**
   * Why the whole suite cannot run here (e.g. a missing sandbox tool): the
   * test is registered as ignored and the reason printed on stderr. Never
   * use it to hide a failing check.
   */
  readonly ignore?: string | false;
  /** Only these checks (by id). Default all of {@linkcode CONFORMANCE_CHECKS}. */
  readonly only?: readonly string[];
}

/** The modes a check runs in for a runtime with these options, or why none. */
function modesOf(
  check: ConformanceCheck,
  options: ConformanceOptions<unknown>,
): RuntimeMode[] | string {
  const plain = options.plain !== false;
  const workspace = options.workspace !== false;
  if (!plain && !workspace) {
    throw new TypeError(
      "Cannot check a runtime with neither a plain nor a workspace mode: set plain or workspace to true",
    );
  }
  const kinds: Record<CheckModes, RuntimeMode[]> = {
    one: [plain ? "plain" : "workspace"],
    each: [
      ...(plain ? ["plain" as const] : []),
      ...(workspace ? ["workspace" as const] : []),
    ],
    workspace: workspace ? ["workspace"] : [],
  };
  const modes = kinds[check.modes];
  return modes.length > 0
    ? modes
    : "the runtime has no workspace mode (options.workspace is false)";
}

function findCheck(id: string): ConformanceCheck {
  const check = CONFORMANCE_CHECKS.find((c) => c.id === id);
  if (!check) {
    throw new RangeError(
      `Cannot run conformance check "${id}": no such check (available: ${
        CONFORMANCE_CHECKS.map((c) => c.id).join(", ")
      })`,
    );
  }
  return check;
}

/**
 * Runs one check of the kit on a runtime, outside `Deno.test` (to assert in
 * your own tests that a runtime passes or fails it). A check that does not
 * apply to the runtime's modes (a workspace check with `workspace: false`)
 * resolves at once.
 *
 * @example A runtime that drops stderr fails `output-mapped`
 * ```ts
 * import { assert } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun/runtime";
 * import {
 *   ConformanceError,
 *   runConformanceCheck,
 * } from "@skillrun/skillrun/testing";
 *
 * const error = await runConformanceCheck("output-mapped", (setup) => {
 *   const real = new LocalSkillRuntime({ cwd: setup.dir });
 *   return {
 *     name: "no-stderr",
 *     cwd: real.cwd,
 *     fs: real.fs,
 *     prepare: (request) => real.prepare(request),
 *     execute: async (request) => ({ ...await real.execute(request), stderr: "" }),
 *     environment: () => real.environment(),
 *     close: () => real.close(),
 *     [Symbol.asyncDispose]: () => real.close(),
 *   };
 * }).catch((e) => e);
 * assert(error instanceof ConformanceError && error.check === "output-mapped");
 * ```
 *
 * @param id The check's id (see {@linkcode CONFORMANCE_CHECKS}).
 * @param makeRuntime Makes a runtime for the check (see {@linkcode RuntimeSetup}).
 * @param options What the runtime supports, and the check's `setUp`/`tearDown`.
 * @returns When the runtime passed the check in every mode it applies to.
 * @throws {ConformanceError} The runtime failed the check.
 * @throws {RangeError} No check has that id.
 */
export async function runConformanceCheck<C = undefined>(
  id: string,
  makeRuntime: MakeRuntime<C>,
  options: ConformanceOptions<C> = {},
): Promise<void> {
  const check = findCheck(id);
  const modes = modesOf(check, options as ConformanceOptions<unknown>);
  if (typeof modes === "string") return;
  for (const mode of modes) await runIn(check, mode, makeRuntime, options);
}

function runIn<C>(
  check: ConformanceCheck,
  mode: RuntimeMode,
  makeRuntime: MakeRuntime<C>,
  options: ConformanceOptions<C>,
): Promise<void> {
  return withHarness(
    { id: check.id, mode },
    makeRuntime,
    { setUp: options.setUp, tearDown: options.tearDown },
    (harness) => check.run(harness as never, mode),
  );
}

/**
 * Registers one Deno test, `<name>: runtime conformance`, with one step per
 * check of {@linkcode CONFORMANCE_CHECKS} and mode it runs in. Call it at the top level of a test
 * file. A check the runtime's modes do not allow is an ignored step that says
 * why; `options.ignore` ignores the whole test and prints the reason.
 *
 * `makeRuntime` is called for each runtime a check needs, with a temporary
 * folder of the check (`setup.dir`) and, in workspace mode, a conversation id
 * (`setup.conversationId`): runtimes asked for with the same id in one check
 * must open the same conversation. The kit closes every runtime it made.
 *
 * @example An in-house runtime without a workspace mode (in a test file)
 * ```ts ignore
 * import { testRuntimeConformance } from "@skillrun/skillrun/testing";
 * import { MyRuntime } from "./my_runtime.ts";
 *
 * testRuntimeConformance("my-runtime", (setup) => new MyRuntime({ root: setup.dir }), {
 *   workspace: false,
 * });
 * ```
 *
 * @param name The runtime's name in the test's name.
 * @param makeRuntime Makes a runtime for a check.
 * @param options What the runtime supports, `setUp`/`tearDown` around each check, `ignore`.
 * @throws {TypeError} The options allow neither mode.
 * @throws {RangeError} `only` names an unknown check.
 */
export function testRuntimeConformance<C = undefined>(
  name: string,
  makeRuntime: MakeRuntime<C>,
  options: ConformanceOptions<C> = {},
): void {
  const checks = options.only ? options.only.map(findCheck) : [
    ...CONFORMANCE_CHECKS,
  ];
  const plan = checks.map((check) => ({
    check,
    modes: modesOf(check, options as ConformanceOptions<unknown>),
  }));
  const title = `${name}: runtime conformance`;
  const ignore = options.ignore || undefined;
  if (ignore) console.error(`Ignoring "${title}": ${ignore}`);
  Deno.test({
    name: title,
    ignore: ignore !== undefined,
    async fn(t) {
      for (const { check, modes } of plan) {
        if (typeof modes === "string") {
          await t.step({
            name: `${check.title} (ignored: ${modes})`,
            ignore: true,
            fn: () => {},
          });
          continue;
        }
        for (const mode of modes) {
          await t.step(
            `${check.title} [${mode}]`,
            () => runIn(check, mode, makeRuntime, options),
          );
        }
      }
    },
  });
}
