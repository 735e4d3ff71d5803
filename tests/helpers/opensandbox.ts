/**
 * Helpers for the OpenSandbox runtime's tests: the test server with a
 * temporary folder and a runtime factory; the helpers every remote runtime's
 * tests share come from `./remote.ts`. Test-only.
 *
 * @module
 */
import {
  type OpenSandboxServer,
  type OpenSandboxServerOptions,
  startOpenSandboxServer,
} from "../servers/opensandbox.ts";
import type { FaultInjector } from "../servers/_faults.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  OpenSandboxSkillRuntime,
  type OpenSandboxSkillRuntimeOptions,
} from "../../runtimes/opensandbox/runtime.ts";

/** The API key the test servers are started with. */
export const TEST_API_KEY = "test-key-0123456789";

/** A running test server and a temporary folder for the test. */
export interface TestServer extends
  RemoteTestServer<
    OpenSandboxServer,
    OpenSandboxSkillRuntimeOptions,
    OpenSandboxSkillRuntime
  > {
  /** The lifecycle base URL. */
  readonly url: string;
  /** The fault injector. */
  readonly faults: FaultInjector;
}

/**
 * Starts the OpenSandbox test server (with {@linkcode TEST_API_KEY}) and a
 * temporary folder.
 *
 * @param options Further options of the server.
 * @returns The server.
 */
export async function startTestServer(
  options: OpenSandboxServerOptions = {},
): Promise<TestServer> {
  const base = await startRemoteTestServer({
    prefix: "skillrun-os-",
    start: () => startOpenSandboxServer({ apiKey: TEST_API_KEY, ...options }),
    close: (server) => server.close(),
    runtime: (
      server,
      dir,
      overrides: Partial<OpenSandboxSkillRuntimeOptions>,
    ) =>
      new OpenSandboxSkillRuntime({
        baseUrl: server.url,
        apiKey: TEST_API_KEY,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      }),
  });
  return Object.assign(base, {
    url: base.server.url,
    faults: base.server.faults,
  });
}
