/**
 * Third-party data beside the clone, for the tests: `../shared/` holds the
 * official API descriptions of the sandbox services (`specs/`) and real skills
 * (`corpora/anthropics-skills/`). The project never copies them. A test that
 * needs them asks here:
 *
 * - present: the test runs as usual;
 * - absent on a developer's clone: the test is skipped (`ignore`), its name
 *   saying in one line what it needs, and the skip is recorded for the
 *   closing line of `deno task test` (`scripts/test.ts`);
 * - absent with `CI=true`: a failure, never a skip (the module that asks
 *   throws, naming what is missing).
 *
 * Tests whose behaviour does not depend on that data use
 * {@linkcode skillCorpus} (the real skills when present, else skills the
 * project generates: binary files, nested folders, fonts, executable scripts).
 *
 * @module
 */
import { hostPath } from "../../_internal/std.ts";

/** `../shared/` beside the project's folder. */
export const SHARED_ROOT: URL = new URL("../../../shared/", import.meta.url);

/** The environment variable `scripts/test.ts` sets: where skips are recorded. */
export const SKIP_LOG_ENV = "SKILLRUN_SKIP_LOG";

/** One file or folder under `../shared/` that a test needs. */
export interface SharedData {
  /** Its path below `../shared/`, e.g. `specs/aio-sandbox/openapi.json`. */
  readonly relative: string;
  /** What it is, for the skip line (e.g. "the official AIO OpenAPI description"). */
  readonly what: string;
  /** Its `file:` URL. */
  readonly url: URL;
  /** Its host path. */
  readonly path: string;
  /** Whether it is there. */
  readonly present: boolean;
}

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** Whether this run is CI (`CI=true`), where missing shared data fails. */
export function inCi(): boolean {
  return env("CI") === "true";
}

/**
 * Looks up data under `../shared/`.
 *
 * @param relative Its path below `../shared/` (a folder ends with `/`).
 * @param what What it is, for the skip line and the CI failure.
 * @returns Where it is and whether it is there.
 * @throws {Error} With `CI=true`, when it is missing.
 */
export function sharedData(relative: string, what: string): SharedData {
  const url = new URL(relative, SHARED_ROOT);
  const path = hostPath.fromFileUrl(url);
  let present = false;
  try {
    Deno.statSync(path);
    present = true;
  } catch {
    present = false;
  }
  if (!present && inCi()) {
    throw new Error(
      `Cannot run without "../shared/${relative}" (${what}): CI=true, and in CI a missing ../shared is a failure, not a skip`,
    );
  }
  return { relative, what, url, path, present };
}

/** The line a skipped test adds to its name. */
export function skipReason(needs: SharedData | readonly SharedData[]): string {
  const missing = (Array.isArray(needs) ? needs : [needs] as SharedData[])
    .filter((need) => !need.present);
  return `skipped: needs ${
    missing.map((need) => `../shared/${need.relative} (${need.what})`).join(
      " and ",
    )
  }`;
}

/**
 * The name and `ignore` of a `Deno.test` that needs shared data: when it is
 * missing, the test is ignored, its name ends with what it needs, and the skip
 * is recorded for the closing line of `deno task test`.
 *
 * @example
 * ```ts
 * import { sharedData, sharedTest } from "./shared_data.ts";
 *
 * const corpus = sharedData("corpora/anthropics-skills/", "real skills");
 * Deno.test({
 *   ...sharedTest(corpus, "every real skill loads"),
 *   fn() {},
 * });
 * ```
 *
 * @param needs What the test needs.
 * @param name The test's name.
 * @returns `name` and `ignore` for `Deno.test`.
 */
export function sharedTest(
  needs: SharedData | readonly SharedData[],
  name: string,
): { name: string; ignore: boolean } {
  const list = Array.isArray(needs) ? needs : [needs] as SharedData[];
  if (list.every((need) => need.present)) return { name, ignore: false };
  const reason = skipReason(list);
  recordSkip(name, list.filter((need) => !need.present));
  return { name: `${name} [${reason}]`, ignore: true };
}

function recordSkip(name: string, missing: readonly SharedData[]): void {
  const log = env(SKIP_LOG_ENV);
  if (log === undefined || log === "") return;
  const line = JSON.stringify({
    name,
    needs: missing.map((need) => need.relative),
  });
  try {
    Deno.writeTextFileSync(log, line + "\n", { append: true });
  } catch {
    // Without write permission the skip still shows in the test's name.
  }
}

/** The real skills of `../shared/corpora/anthropics-skills/skills/`. */
export function anthropicsSkills(): SharedData {
  return sharedData(
    "corpora/anthropics-skills/skills/",
    "the real skills of Anthropic's collection",
  );
}

/** The whole of `../shared/corpora/anthropics-skills/` (its skills and template). */
export function anthropicsCollection(): SharedData {
  return sharedData(
    "corpora/anthropics-skills/",
    "the real skills and template of Anthropic's collection",
  );
}
