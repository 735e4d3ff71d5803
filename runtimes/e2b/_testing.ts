/**
 * Helpers for the E2B runtime's tests: the test server with a temporary
 * folder and a runtime factory. Test-only.
 *
 * @module
 */
import {
  type E2BServer,
  type E2BServerOptions,
  startE2BServer,
} from "../../tests/servers/e2b.ts";
import { type E2BRuntimeOptions, E2BSkillRuntime } from "./runtime.ts";

export {
  countingFetch,
  makeSkill,
  processAlive,
  waitFor,
} from "../opensandbox/_testing.ts";

/** The API key the test servers are started with. */
export const TEST_API_KEY = "e2b_test_key_0123456789";

/** A running test server and a temporary folder for the test. */
export interface E2BTestServer extends AsyncDisposable {
  /** The base URL (control plane and envd). */
  readonly url: string;
  /** The server. */
  readonly server: E2BServer;
  /** A temporary folder (real path), removed on dispose. */
  readonly dir: string;
  /** Makes a runtime on this server (closed on dispose). */
  runtime(options?: Partial<E2BRuntimeOptions>): E2BSkillRuntime;
}

/**
 * Starts the E2B test server (with {@linkcode TEST_API_KEY}) and a folder.
 *
 * @param options Further options of the server.
 * @returns The server.
 */
export async function startE2BTestServer(
  options: E2BServerOptions = {},
): Promise<E2BTestServer> {
  const server = startE2BServer({ apiKey: TEST_API_KEY, ...options });
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-e2b-" }),
  );
  const runtimes: E2BSkillRuntime[] = [];
  return {
    url: server.url,
    server,
    dir,
    runtime(options = {}) {
      const runtime = new E2BSkillRuntime({
        apiKey: TEST_API_KEY,
        apiUrl: server.url,
        sandboxUrl: server.url,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...options,
      });
      runtimes.push(runtime);
      return runtime;
    },
    async [Symbol.asyncDispose]() {
      for (const runtime of runtimes) await runtime.close().catch(() => {});
      await server.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
