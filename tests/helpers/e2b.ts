/**
 * Helpers for the E2B runtime's tests: the test server with a temporary
 * folder and a runtime factory; the helpers every remote runtime's tests
 * share come from `./remote.ts`. Test-only.
 *
 * @module
 */
import {
  type E2BServer,
  type E2BServerOptions,
  startE2BServer,
} from "../servers/e2b.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  E2BSkillRuntime,
  type E2BSkillRuntimeOptions,
} from "../../runtimes/e2b/runtime.ts";

/** The API key the test servers are started with. */
export const TEST_API_KEY = "e2b_test_key_0123456789";

/** A running test server and a temporary folder for the test. */
export interface E2BTestServer
  extends RemoteTestServer<E2BServer, E2BSkillRuntimeOptions, E2BSkillRuntime> {
  /** The base URL (control plane and envd). */
  readonly url: string;
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
  const base = await startRemoteTestServer({
    prefix: "skillrun-e2b-",
    start: () => startE2BServer({ apiKey: TEST_API_KEY, ...options }),
    close: (server) => server.close(),
    runtime: (server, dir, overrides: Partial<E2BSkillRuntimeOptions>) =>
      new E2BSkillRuntime({
        apiKey: TEST_API_KEY,
        baseUrl: server.url,
        sandboxUrl: server.url,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      }),
  });
  return Object.assign(base, { url: base.server.url });
}
