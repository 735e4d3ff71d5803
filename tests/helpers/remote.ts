/**
 * Helpers shared by the remote runtimes' tests (OpenSandbox, AIO, E2B,
 * Vercel, and the remote kit): a test server with a temporary folder and the
 * runtimes made on it, a fetch that counts what a runtime sends and
 * receives, skill folders, processes, polling. Test-only.
 *
 * @module
 */
import type { Skill } from "../../skill/types.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";

/** A running test server, a temporary folder, and runtimes made on them. */
export interface RemoteTestServer<S, O, R extends SkillRuntime>
  extends AsyncDisposable {
  /** The server itself. */
  readonly server: S;
  /** A temporary folder (real path), removed on dispose. */
  readonly dir: string;
  /** Makes a runtime on this server (closed on dispose). */
  runtime(options?: Partial<O>): R;
  /** Stops the server (the runtimes' later calls meet a refused connection). */
  stop(): Promise<void>;
}

/** Options of {@linkcode startRemoteTestServer}. */
export interface StartRemoteTestServerOptions<S, O, R extends SkillRuntime> {
  /** The temporary folder's name prefix. */
  readonly prefix: string;
  /** Starts the server (the folder exists already). */
  start(dir: string): S | Promise<S>;
  /** Stops the server. */
  close(server: S): Promise<void>;
  /** Makes a runtime on the server, working in `dir`. */
  runtime(server: S, dir: string, options: Partial<O>): R;
}

/**
 * Makes a temporary folder, starts a test server, and gives a factory of
 * runtimes on it; disposing closes the runtimes, stops the server and
 * removes the folder.
 *
 * @param options The folder's prefix, how to start and stop the server and
 * make a runtime.
 * @returns The server, its folder and the runtime factory.
 */
export async function startRemoteTestServer<S, O, R extends SkillRuntime>(
  options: StartRemoteTestServerOptions<S, O, R>,
): Promise<RemoteTestServer<S, O, R>> {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: options.prefix }),
  );
  let server: S;
  try {
    server = await options.start(dir);
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
  const runtimes: R[] = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await options.close(server);
  };
  return {
    server,
    dir,
    runtime(runtimeOptions = {}) {
      const runtime = options.runtime(server, dir, runtimeOptions);
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

/** A loopback web server that answers every request and records its path. */
export interface RecordingWeb extends AsyncDisposable {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** The paths requested, in order. */
  readonly seen: string[];
}

/**
 * Starts a loopback web server answering `allowed answer\n` to every request
 * (the target of the egress tests: what reaches it was let through).
 *
 * @returns The server; dispose to stop it.
 */
export function recordingWeb(): RecordingWeb {
  const seen: string[] = [];
  const web = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      seen.push(new URL(request.url).pathname);
      return new Response("allowed answer\n");
    },
  );
  return {
    port: web.addr.port,
    seen,
    [Symbol.asyncDispose]: () => web.shutdown(),
  };
}
