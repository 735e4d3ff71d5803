/**
 * Helpers for the Vercel runtime's tests: the test server with a temporary
 * folder and a runtime factory. Test-only.
 *
 * @module
 */
import {
  startVercelServer,
  type VercelServer,
  type VercelServerOptions,
} from "../../tests/servers/vercel.ts";
import {
  type VercelRuntimeOptions,
  VercelSandboxSkillRuntime,
} from "./runtime.ts";

export {
  countingFetch,
  makeSkill,
  processAlive,
  waitFor,
} from "../opensandbox/_testing.ts";

/** The token the test servers are started with. */
export const TEST_TOKEN = "vercel_test_token_0123456789";

/** A running test server and a temporary folder for the test. */
export interface VercelTestServer extends AsyncDisposable {
  /** The base URL. */
  readonly url: string;
  /** The server. */
  readonly server: VercelServer;
  /** A temporary folder (real path), removed on dispose. */
  readonly dir: string;
  /** Makes a runtime on this server (closed on dispose). */
  runtime(options?: Partial<VercelRuntimeOptions>): VercelSandboxSkillRuntime;
}

/**
 * Starts the Vercel test server (with {@linkcode TEST_TOKEN}) and a folder.
 *
 * @param options Further options of the server.
 * @returns The server.
 */
export async function startVercelTestServer(
  options: VercelServerOptions = {},
): Promise<VercelTestServer> {
  const server = startVercelServer({ token: TEST_TOKEN, ...options });
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-vercel-" }),
  );
  const runtimes: VercelSandboxSkillRuntime[] = [];
  return {
    url: server.url,
    server,
    dir,
    runtime(options = {}) {
      const runtime = new VercelSandboxSkillRuntime({
        token: TEST_TOKEN,
        teamId: "team_test",
        projectId: "prj_test",
        baseUrl: server.url,
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
