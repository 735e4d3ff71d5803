/**
 * Helpers for the Vercel runtime's tests: the test server with a temporary
 * folder and a runtime factory; the helpers every remote runtime's tests
 * share come from `./remote.ts`. Test-only.
 *
 * @module
 */
import {
  startVercelServer,
  type VercelServer,
  type VercelServerOptions,
} from "../servers/vercel.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  VercelSandboxSkillRuntime,
  type VercelSandboxSkillRuntimeOptions,
} from "../../runtimes/vercel/runtime.ts";

/** The token the test servers are started with. */
export const TEST_TOKEN = "vercel_test_token_0123456789";

/** A running test server and a temporary folder for the test. */
export interface VercelTestServer extends
  RemoteTestServer<
    VercelServer,
    VercelSandboxSkillRuntimeOptions,
    VercelSandboxSkillRuntime
  > {
  /** The base URL. */
  readonly url: string;
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
  const base = await startRemoteTestServer({
    prefix: "skillrun-vercel-",
    start: () => startVercelServer({ token: TEST_TOKEN, ...options }),
    close: (server) => server.close(),
    runtime: (
      server,
      dir,
      overrides: Partial<VercelSandboxSkillRuntimeOptions>,
    ) =>
      new VercelSandboxSkillRuntime({
        apiKey: TEST_TOKEN,
        teamId: "team_test",
        projectId: "prj_test",
        baseUrl: server.url,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      }),
  });
  return Object.assign(base, { url: base.server.url });
}
