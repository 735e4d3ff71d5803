/**
 * Helpers for the AIO runtime's tests: the AIO test server in a temporary
 * home with a bearer token, and runtimes on it closed on dispose; the
 * helpers every remote runtime's tests share come from
 * `./remote.ts`. Test-only.
 *
 * @module
 */
import {
  type AioServer,
  loadAioContract,
  startAioServer,
} from "../servers/aio.ts";
import { type RemoteTestServer, startRemoteTestServer } from "./remote.ts";
import {
  AioSkillRuntime,
  type AioSkillRuntimeOptions,
} from "../../runtimes/aio/runtime.ts";

/** The bearer token the test servers check. */
export const TEST_TOKEN = "aio-test-token-0123456789";

/** A running AIO test server and its temporary home (the container's home). */
export type AioTestServer = RemoteTestServer<
  AioServer,
  AioSkillRuntimeOptions,
  AioSkillRuntime
>;

/**
 * Starts the AIO test server with {@linkcode TEST_TOKEN} in a temporary home;
 * every real answer it gives is checked against the official OpenAPI contract
 * (when `../shared` is beside the clone), and
 * disposing fails when one did not match.
 *
 * @param options `range: true` makes downloads honour `Range`.
 * @returns The server.
 */
export async function startAioTestServer(
  options: { range?: boolean } = {},
): Promise<AioTestServer> {
  const contract = await loadAioContract();
  const base = await startRemoteTestServer({
    prefix: "skillrun-aio-",
    start: (dir) =>
      startAioServer({ home: dir, token: TEST_TOKEN, contract, ...options }),
    close: (server) => server.close(),
    runtime: (server, dir, overrides: Partial<AioSkillRuntimeOptions>) =>
      new AioSkillRuntime({
        baseUrl: server.baseUrl,
        apiKey: TEST_TOKEN,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      }),
  });
  const dispose = base[Symbol.asyncDispose].bind(base);
  return Object.assign(base, {
    async [Symbol.asyncDispose]() {
      await dispose();
      const { contractViolations } = base.server;
      if (contractViolations.length > 0) {
        throw new Error(
          `The AIO test server answered outside its contract:\n${
            contractViolations.join("\n")
          }`,
        );
      }
    },
  });
}
