/**
 * Helpers for the Daytona runtime's tests: the test server with a temporary
 * folder and a runtime factory. Test-only.
 *
 * @module
 */
import {
  type DaytonaServer,
  type DaytonaServerOptions,
  startDaytonaServer,
} from "../servers/daytona.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  DaytonaSkillRuntime,
  type DaytonaSkillRuntimeOptions,
} from "../../runtimes/daytona/runtime.ts";

/** The API key the test servers are started with. */
export const TEST_API_KEY = "dtn_test_key_0123456789";

/** A running test server and a temporary folder for the test. */
export type DaytonaTestServer = RemoteTestServer<
  DaytonaServer,
  DaytonaSkillRuntimeOptions,
  DaytonaSkillRuntime
>;

/**
 * Starts the Daytona test server (with {@linkcode TEST_API_KEY}) and a folder.
 * The test's folder is bound in every sandbox at its own path (a shared
 * volume) and runtimes work there; the rest of `/home/daytona` and `/tmp`
 * are each sandbox's own.
 *
 * @param options Further options of the server.
 * @returns The server.
 */
export function startDaytonaTestServer(
  options: DaytonaServerOptions = {},
): Promise<DaytonaTestServer> {
  return startRemoteTestServer({
    prefix: "skillrun-daytona-",
    start: (dir) =>
      startDaytonaServer({
        apiKey: TEST_API_KEY,
        ...options,
        volumes: [dir, ...options.volumes ?? []],
      }),
    close: (server) => server.close(),
    runtime: (server, dir, overrides: Partial<DaytonaSkillRuntimeOptions>) => {
      return new DaytonaSkillRuntime({
        apiKey: TEST_API_KEY,
        baseUrl: server.url,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      });
    },
  });
}
