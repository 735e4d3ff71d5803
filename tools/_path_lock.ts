/**
 * One read-modify-write of a path at a time per runtime: `edit` and `write`
 * calls a model issues in parallel on the same file run one after the other,
 * so no edit that reports success is lost to a concurrent one.
 *
 * @module
 */
import type { SkillRuntime } from "../runtimes/types.ts";

const queues = new WeakMap<SkillRuntime, Map<string, Promise<unknown>>>();

/**
 * Runs `fn` once every earlier call for the same runtime and (resolved) path
 * has settled, then lets the next one run.
 *
 * @param runtime The runtime whose file system is written.
 * @param path The resolved path.
 * @param fn The read-modify-write.
 * @returns What `fn` returns.
 */
export async function withPathLock<T>(
  runtime: SkillRuntime,
  path: string,
  fn: () => Promise<T>,
): Promise<T> {
  let paths = queues.get(runtime);
  if (!paths) {
    paths = new Map();
    queues.set(runtime, paths);
  }
  const before = paths.get(path) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const tail = run.then(() => {}, () => {});
  paths.set(path, tail);
  try {
    return await run;
  } finally {
    if (paths.get(path) === tail) paths.delete(path);
  }
}
