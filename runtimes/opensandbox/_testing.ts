/**
 * Helpers for the OpenSandbox runtime's tests: the test server, a fetch that
 * counts what the runtime sends and receives, skill folders, processes.
 * Test-only.
 *
 * @module
 */
import {
  type OpenSandboxServer,
  type OpenSandboxServerOptions,
  startOpenSandboxServer,
} from "../../tests/servers/opensandbox.ts";
import type { FaultInjector } from "../../tests/servers/_faults.ts";
import type { Skill } from "../../skill/types.ts";
import {
  OpenSandboxSkillRuntime,
  type OpenSandboxSkillRuntimeOptions,
} from "./runtime.ts";

/** The API key the test servers are started with. */
export const TEST_API_KEY = "test-key-0123456789";

/** A running test server and a temporary folder for the test. */
export interface TestServer extends AsyncDisposable {
  /** The lifecycle base URL. */
  readonly url: string;
  /** The server itself (its sandboxes, commands, requests). */
  readonly server: OpenSandboxServer;
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** A temporary folder (real path), removed on dispose. */
  readonly dir: string;
  /** Makes a runtime on this server (closed on dispose). */
  runtime(
    options?: Partial<OpenSandboxSkillRuntimeOptions>,
  ): OpenSandboxSkillRuntime;
  /** Stops the server (the runtimes' later calls meet a refused connection). */
  stop(): Promise<void>;
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
  const server = await startOpenSandboxServer({
    apiKey: TEST_API_KEY,
    ...options,
  });
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-os-" }),
  );
  const runtimes: OpenSandboxSkillRuntime[] = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.close();
  };
  return {
    url: server.url,
    server,
    faults: server.faults,
    dir,
    runtime(options = {}) {
      const runtime = new OpenSandboxSkillRuntime({
        baseUrl: server.url,
        apiKey: TEST_API_KEY,
        cwd: dir,
        skillsRoot: `${dir}/.skills`,
        ...options,
      });
      runtimes.push(runtime);
      return runtime;
    },
    stop,
    async [Symbol.asyncDispose]() {
      for (const runtime of runtimes) await runtime.close().catch(() => {});
      await stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** One request a counting fetch saw. */
export interface SeenRequest {
  /** The method. */
  readonly method: string;
  /** The URL's path. */
  readonly path: string;
  /** The headers sent. */
  readonly headers: Headers;
}

/** A fetch that records every request and counts the bytes of answers read. */
export interface CountingFetch {
  /** Pass it as the runtime's `fetch`. */
  readonly fetch: typeof fetch;
  /** The requests so far. */
  readonly requests: SeenRequest[];
  /** Bytes of response bodies read so far. */
  readonly bytesRead: () => number;
}

/**
 * Makes a fetch that records requests and counts response bytes read.
 *
 * @returns The fetch and its records.
 */
export function countingFetch(): CountingFetch {
  const requests: SeenRequest[] = [];
  let bytes = 0;
  const counted: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    requests.push({
      method: request.method,
      path: new URL(request.url).pathname,
      headers: request.headers,
    });
    const response = await fetch(input, init);
    if (!response.body) return response;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch: counted, requests, bytesRead: () => bytes };
}

/**
 * Writes a skill folder and returns the loaded-skill shape for it.
 *
 * @param root Where the folder goes.
 * @param name The skill's name (and folder name).
 * @param files Further files, by relative path (text or bytes).
 * @returns The skill.
 */
export async function makeSkill(
  root: string,
  name: string,
  files: Readonly<Record<string, string | Uint8Array>> = {},
): Promise<Skill> {
  const basePath = `${root}/${name}`;
  await Deno.mkdir(basePath, { recursive: true });
  const content =
    `---\nname: ${name}\ndescription: Test skill ${name}.\n---\nDo it.\n`;
  await Deno.writeTextFile(`${basePath}/SKILL.md`, content);
  for (const [path, value] of Object.entries(files)) {
    const target = `${basePath}/${path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    if (typeof value === "string") await Deno.writeTextFile(target, value);
    else await Deno.writeFile(target, value);
  }
  return {
    name,
    description: `Test skill ${name}.`,
    basePath,
    location: `${basePath}/SKILL.md`,
    instructions: "Do it.\n",
    frontMatter: {},
    warnings: [],
  };
}

/**
 * Whether a process is alive (not a zombie) on this host.
 *
 * @param pid The process id.
 * @returns `true` while it runs.
 */
export function processAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/**
 * Waits until `check` holds, polling, up to `ms`.
 *
 * @param check The condition.
 * @param ms The most time to wait.
 * @returns Whether it held.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms = 5_000,
): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return await check();
}
