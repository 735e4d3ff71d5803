/**
 * Helpers for the Deno Sandbox runtime's tests: the test server with a
 * temporary folder and a runtime factory. Test-only.
 *
 * @module
 */
import {
  type DenoSandboxServer,
  type DenoSandboxServerOptions,
  startDenoSandboxServer,
} from "../servers/deno_sandbox.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  DenoSandboxSkillRuntime,
  type DenoSandboxSkillRuntimeOptions,
} from "../../runtimes/deno_sandbox/runtime.ts";

/** The token the test servers are started with (an organization token). */
export const TEST_TOKEN = "ddo_test_token_0123456789";

/** A running test server and a temporary folder for the test. */
export type DenoSandboxTestServer = RemoteTestServer<
  DenoSandboxServer,
  DenoSandboxSkillRuntimeOptions,
  DenoSandboxSkillRuntime
>;

/**
 * Starts the Deno Sandbox test server (with {@linkcode TEST_TOKEN}) and a
 * folder. The test's folder is bound in every sandbox at its own path (a
 * shared volume) and runtimes work there; the rest of `/home/app` and
 * `/tmp` are each sandbox's own.
 *
 * @param options Further options of the server.
 * @returns The server.
 */
export function startDenoSandboxTestServer(
  options: DenoSandboxServerOptions = {},
): Promise<DenoSandboxTestServer> {
  return startRemoteTestServer({
    prefix: "skillrun-deno-sandbox-",
    start: (dir) =>
      startDenoSandboxServer({
        token: TEST_TOKEN,
        ...options,
        volumes: [dir, ...options.volumes ?? []],
      }),
    close: (server) => server.close(),
    runtime: (
      server,
      dir,
      overrides: Partial<DenoSandboxSkillRuntimeOptions>,
    ) => {
      return new DenoSandboxSkillRuntime({
        token: TEST_TOKEN,
        baseUrl: server.url,
        consoleUrl: server.url,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      });
    },
  });
}
