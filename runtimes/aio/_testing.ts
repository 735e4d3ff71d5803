/**
 * Helpers for the AIO runtime's tests: the AIO test server in a temporary
 * home with a bearer token, and runtimes on it closed on dispose. Test-only.
 *
 * @module
 */
import {
  type AioServer,
  loadAioContract,
  startAioServer,
} from "../../tests/servers/aio.ts";
import { AioSkillRuntime, type AioSkillRuntimeOptions } from "./runtime.ts";

/** The bearer token the test servers check. */
export const TEST_TOKEN = "aio-test-token-0123456789";

/** A running AIO test server and its temporary home. */
export interface AioTestServer extends AsyncDisposable {
  /** The server. */
  readonly server: AioServer;
  /** The container's home: a temporary folder (real path). */
  readonly dir: string;
  /** Makes a runtime on this server (closed on dispose). */
  runtime(options?: Partial<AioSkillRuntimeOptions>): AioSkillRuntime;
}

/**
 * Starts the AIO test server with {@linkcode TEST_TOKEN} in a temporary home;
 * every real answer it gives is checked against the OpenAPI contract, and
 * disposing fails when one did not match.
 *
 * @param options `range: true` makes downloads honour `Range`.
 * @returns The server.
 */
export async function startAioTestServer(
  options: { range?: boolean } = {},
): Promise<AioTestServer> {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-aio-" }),
  );
  const server = startAioServer({
    home: dir,
    token: TEST_TOKEN,
    contract: await loadAioContract(),
    ...options,
  });
  const runtimes: AioSkillRuntime[] = [];
  return {
    server,
    dir,
    runtime(overrides = {}) {
      const runtime = new AioSkillRuntime({
        baseUrl: server.baseUrl,
        apiKey: TEST_TOKEN,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...overrides,
      });
      runtimes.push(runtime);
      return runtime;
    },
    async [Symbol.asyncDispose]() {
      for (const runtime of runtimes) await runtime.close().catch(() => {});
      await server.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      if (server.contractViolations.length > 0) {
        throw new Error(
          `The AIO test server answered outside its contract:\n${
            server.contractViolations.join("\n")
          }`,
        );
      }
    },
  };
}
