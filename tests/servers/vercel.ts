/**
 * A Vercel Sandbox server for tests: the API the open-source SDK
 * (`@vercel/sandbox` 3.5.0) speaks, in the shapes recorded in `vercel.md`
 * beside this file, with real `bash` (any command with its arguments, no
 * shell) on real host paths: file calls and commands see one file system,
 * the host's, as a sandbox's file calls and commands see its own. A
 * command's `timeout` (ms) is enforced as the service does: its process
 * group is SIGKILLed and it exits 137, awaited or detached.
 *
 * Named sandboxes hold sessions: a command in a stopped session is 410; a
 * stopped persistent sandbox resumes in a new session on
 * `GET /v2/sandboxes/{name}?resume=true` (its files are kept: they are the
 * host's); a session stops when its timeout passes. Killed commands exit
 * 128 + the signal (SIGTERM: 143), an unknown command 127.
 * A `networkPolicy` of `deny-all` or `custom` (creation or
 * `.../network-policy`) gets a policy proxy letting out only its
 * `allowedDomains`; the sandbox's commands get the proxy's variables.
 *
 * Run by hand: `deno run -A tests/servers/vercel.ts [--port N] [--token T]
 * [--fault SPEC]... [--fault-control]`; prints its base URL (the SDK's
 * `https://vercel.com/api`) as the first line of stdout. It makes the SDK's
 * default working folder, `/vercel/sandbox`, on the host.
 *
 * @module
 */
import { createTarDecoder } from "modern-tar";
import { FaultInjector, parseFaultSpec } from "./_faults.ts";
import { serveWithFaults } from "./_fault_server.ts";
import {
  encoder,
  errorText,
  fileStream,
  isObject,
  splitFlag,
} from "./_common.ts";
import {
  type SandboxEgressRecord,
  startHostEgress,
} from "./_opensandbox_egress.ts";

/** Options of {@linkcode startVercelServer}. */
export interface VercelServerOptions {
  /** The bearer token required; none: any. */
  readonly token?: string;
  /** Port; default 0. */
  readonly port?: number;
  /** The fault injector. */
  readonly faults?: FaultInjector;
  /** Serve `/__faults`. */
  readonly faultControl?: boolean;
  /**
   * Names the egress proxy of a sandbox whose `networkPolicy` denies by
   * default resolves to fixed addresses (the tests' own loopback servers).
   */
  readonly resolve?: Readonly<Record<string, string>>;
}

/** One command of a session. */
interface TestCommand {
  readonly id: string;
  readonly name: string;
  readonly args: string[];
  readonly cwd: string;
  readonly sessionId: string;
  readonly startedAt: number;
  exitCode: number | null;
  durationMs?: number;
  readonly logs: Record<string, unknown>[];
  readonly listeners: Set<() => void>;
  child?: Deno.ChildProcess;
}

/** One session (a run of a sandbox). */
export interface VercelTestSession {
  readonly id: string;
  readonly sandbox: string;
  status: "running" | "stopped";
  timeout: number;
  readonly createdAt: number;
  stoppedAt?: number;
  readonly commands: Map<string, TestCommand>;
  timer?: ReturnType<typeof setTimeout>;
}

/** One sandbox. */
export interface VercelTestSandbox {
  readonly name: string;
  readonly persistent: boolean;
  readonly body: Record<string, unknown>;
  readonly env: Record<string, string>;
  readonly createdAt: number;
  currentSessionId: string;
}

/** A running Vercel test server. */
export interface VercelServer extends AsyncDisposable {
  /** The base URL (the SDK's `https://vercel.com/api`). */
  readonly url: string;
  /** Sandboxes by name. */
  readonly sandboxes: Map<string, VercelTestSandbox>;
  /** Sessions by id. */
  readonly sessions: Map<string, VercelTestSession>;
  /** Every call, `METHOD path`. */
  readonly calls: string[];
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Stops serving; kills every process. */
  close(): Promise<void>;
}

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function apiError(status: number, code: string, message: string): Response {
  return json({ error: { code, message } }, status);
}

/**
 * Starts the server.
 *
 * @param options Token, port, faults.
 * @returns The server.
 */
export function startVercelServer(
  options: VercelServerOptions = {},
): VercelServer {
  // One file system for file calls and commands: the host's. The service's
  // default working folder exists in every sandbox; here it must exist on
  // the host (a command without `cwd`, such as doctor's probe, runs there),
  // whichever test started a server first.
  try {
    Deno.mkdirSync("/vercel/sandbox", { recursive: true });
  } catch (error) {
    console.error(`Cannot make /vercel/sandbox: ${errorText(error)}`);
  }
  const map = (path: string, cwd = "/") =>
    path.startsWith("/") ? path : `${cwd.replace(/\/+$/, "")}/${path}`;
  const sandboxes = new Map<string, VercelTestSandbox>();
  const sessions = new Map<string, VercelTestSession>();
  const calls: string[] = [];
  // The egress of each sandbox whose policy is `deny-all` or `custom`: its
  // commands get the proxy's variables (the real firewall also fences what
  // ignores them; the test server does not).
  const egress = new Map<string, Omit<SandboxEgressRecord, "networkPolicy">>();
  const setPolicy = async (name: string, policy: unknown) => {
    const old = egress.get(name);
    egress.delete(name);
    await old?.close();
    if (!isObject(policy) || policy.mode === "allow-all") return;
    egress.set(
      name,
      await startHostEgress({
        allow: policy.mode === "custom"
          ? (policy.allowedDomains ?? []) as string[]
          : [],
        resolve: options.resolve ?? {},
      }),
    );
  };

  const sessionJson = (session: VercelTestSession) => {
    const sandbox = sandboxes.get(session.sandbox);
    return {
      id: session.id,
      memory: 2048 * Number(sandbox?.body.vcpus ?? 2),
      vcpus: Number(sandbox?.body.vcpus ?? 2),
      region: "iad1",
      ...(sandbox?.body.runtime ? { runtime: sandbox.body.runtime } : {}),
      timeout: session.timeout,
      status: session.status,
      requestedAt: session.createdAt,
      startedAt: session.createdAt,
      createdAt: session.createdAt,
      updatedAt: Date.now(),
      cwd: "/vercel/sandbox",
      ...(session.stoppedAt ? { stoppedAt: session.stoppedAt } : {}),
      ...(sandbox?.body.networkPolicy
        ? { networkPolicy: sandbox.body.networkPolicy }
        : {}),
    };
  };
  const sandboxJson = (sandbox: VercelTestSandbox) => {
    const session = sessions.get(sandbox.currentSessionId)!;
    const resources = sandbox.body.resources as { vcpus?: number } | undefined;
    return {
      name: sandbox.name,
      persistent: sandbox.persistent,
      vcpus: resources?.vcpus ?? 2,
      memory: 2048 * (resources?.vcpus ?? 2),
      ...(typeof sandbox.body.runtime === "string"
        ? { runtime: sandbox.body.runtime }
        : {}),
      timeout: session.timeout,
      ...(isObject(sandbox.body.networkPolicy)
        ? { networkPolicy: sandbox.body.networkPolicy }
        : {}),
      createdAt: sandbox.createdAt,
      updatedAt: Date.now(),
      currentSessionId: sandbox.currentSessionId,
      status: session.status,
      cwd: "/vercel/sandbox",
      ...(isObject(sandbox.body.tags) ? { tags: sandbox.body.tags } : {}),
    };
  };
  const whole = (sandbox: VercelTestSandbox, resumed?: boolean) =>
    json({
      sandbox: sandboxJson(sandbox),
      session: sessionJson(sessions.get(sandbox.currentSessionId)!),
      routes: [],
      ...(resumed !== undefined ? { resumed } : {}),
    });
  const stopSession = (session: VercelTestSession) => {
    clearTimeout(session.timer);
    if (session.status === "stopped") return;
    session.status = "stopped";
    session.stoppedAt = Date.now();
    for (const command of session.commands.values()) {
      if (command.child && command.exitCode === null) {
        try {
          Deno.kill(-command.child.pid, "SIGKILL");
        } catch { /* gone */ }
      }
    }
  };
  const arm = (session: VercelTestSession) => {
    clearTimeout(session.timer);
    const left = session.createdAt + session.timeout - Date.now();
    const timer = setTimeout(() => stopSession(session), Math.max(0, left));
    Deno.unrefTimer(timer);
    session.timer = timer;
  };
  const newSession = (sandbox: string, timeout: number) => {
    const session: VercelTestSession = {
      id: `sbx_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
      sandbox,
      status: "running",
      timeout,
      createdAt: Date.now(),
      commands: new Map(),
    };
    sessions.set(session.id, session);
    arm(session);
    return session;
  };

  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    calls.push(`${request.method} ${path}`);
    if (
      options.token !== undefined &&
      request.headers.get("authorization") !== `Bearer ${options.token}`
    ) {
      return apiError(403, "forbidden", "Not authorized");
    }
    const body = async (): Promise<Record<string, unknown>> => {
      const text = await request.text();
      if (text === "") return {};
      const value = JSON.parse(text);
      if (!isObject(value)) throw new Error("body is not an object");
      return value;
    };
    try {
      if (
        request.method === "POST" &&
        (path === "/v3/sandboxes" || path === "/v2/sandboxes")
      ) {
        const given = await body();
        const name = typeof given.name === "string"
          ? given.name
          : `sbx-${crypto.randomUUID().slice(0, 8)}`;
        if (sandboxes.has(name)) {
          return apiError(409, "conflict", `sandbox "${name}" exists`);
        }
        const timeout = typeof given.timeout === "number"
          ? given.timeout
          : 300_000;
        const problem = networkPolicyProblem(given.networkPolicy);
        if (problem !== undefined) {
          return apiError(400, "bad_request", problem);
        }
        await setPolicy(name, given.networkPolicy);
        const session = newSession(name, timeout);
        const sandbox: VercelTestSandbox = {
          name,
          persistent: given.persistent === true,
          body: given,
          env: isObject(given.env) ? given.env as Record<string, string> : {},
          createdAt: Date.now(),
          currentSessionId: session.id,
        };
        sandboxes.set(name, sandbox);
        return whole(sandbox);
      }
      if (request.method === "GET" && path === "/v2/sandboxes") {
        const tag = url.searchParams.get("tags");
        const listed = [...sandboxes.values()].filter((sandbox) => {
          if (!tag) return true;
          const [k, v] = tag.split(":");
          return (sandbox.body.tags as Record<string, string> | undefined)
            ?.[k!] === v;
        }).map(sandboxJson);
        return json({
          sandboxes: listed,
          pagination: { count: listed.length, next: null },
        });
      }
      const named = /^\/v2\/sandboxes\/(?!sessions\/)([^/]+)$/.exec(path);
      if (named) {
        const sandbox = sandboxes.get(decodeURIComponent(named[1]!));
        if (!sandbox) {
          return apiError(404, "not_found", "Sandbox not found");
        }
        if (request.method === "DELETE") {
          stopSession(sessions.get(sandbox.currentSessionId)!);
          sandboxes.delete(sandbox.name);
          await setPolicy(sandbox.name, undefined);
          return json({ sandbox: sandboxJson(sandbox) });
        }
        if (request.method === "GET") {
          const current = sessions.get(sandbox.currentSessionId)!;
          if (
            url.searchParams.get("resume") === "true" &&
            current.status === "stopped"
          ) {
            if (!sandbox.persistent) {
              return apiError(410, "gone", "The sandbox is stopped");
            }
            sandbox.currentSessionId =
              newSession(sandbox.name, current.timeout).id;
            return whole(sandbox, true);
          }
          return whole(sandbox);
        }
      }
      const inSession = /^\/v2\/sandboxes\/sessions\/([^/]+)(\/.*)?$/.exec(
        path,
      );
      if (inSession) {
        const session = sessions.get(inSession[1]!);
        if (!session) return apiError(404, "not_found", "Session not found");
        return await sessionCall(session, inSession[2] ?? "", request, url);
      }
      return apiError(404, "not_found", "Not found");
    } catch (error) {
      if (error instanceof SyntaxError) {
        return apiError(400, "bad_request", "Invalid JSON body");
      }
      return apiError(500, "internal_server_error", errorText(error));
    }
  };

  async function sessionCall(
    session: VercelTestSession,
    rest: string,
    request: Request,
    url: URL,
  ): Promise<Response> {
    const sandbox = sandboxes.get(session.sandbox);
    const method = request.method;
    if (method === "GET" && rest === "") {
      return json({ session: sessionJson(session), routes: [] });
    }
    if (method === "POST" && rest === "/stop") {
      stopSession(session);
      return json({
        session: sessionJson(session),
        ...(sandbox ? { sandbox: sandboxJson(sandbox) } : {}),
      });
    }
    if (session.status !== "running" || !sandbox) {
      return apiError(410, "sandbox_stopped", "The sandbox session is stopped");
    }
    const read = async () => {
      const text = await request.text();
      return text === "" ? {} : JSON.parse(text) as Record<string, unknown>;
    };
    if (method === "POST" && rest === "/extend-timeout") {
      const given = await read();
      if (typeof given.duration !== "number" || given.duration <= 0) {
        return apiError(400, "bad_request", "duration must be positive");
      }
      session.timeout += given.duration;
      arm(session);
      return json({ session: sessionJson(session) });
    }
    if (method === "POST" && rest === "/network-policy") {
      const policy = await read();
      const problem = networkPolicyProblem(policy);
      if (problem !== undefined) return apiError(400, "bad_request", problem);
      sandbox.body.networkPolicy = policy;
      await setPolicy(sandbox.name, policy);
      return json({ session: sessionJson(session) });
    }
    if (method === "POST" && rest === "/fs/read") {
      const given = await read();
      const target = map(String(given.path ?? ""), String(given.cwd ?? "/"));
      try {
        const file = await Deno.open(target);
        const info = await file.stat();
        if (info.isDirectory) {
          file.close();
          return apiError(400, "bad_request", "Path is a directory");
        }
        return new Response(fileStream(file, info.size, 256 * 1024), {
          headers: {
            "content-type": "application/octet-stream",
            "content-length": String(info.size),
          },
        });
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          return apiError(404, "file_not_found", "File not found");
        }
        throw error;
      }
    }
    if (method === "POST" && rest === "/fs/mkdir") {
      const given = await read();
      const target = map(String(given.path ?? ""), String(given.cwd ?? "/"));
      try {
        await Deno.mkdir(target);
      } catch (error) {
        if (error instanceof Deno.errors.AlreadyExists) {
          return apiError(400, "file_exists", "Path already exists");
        }
        if (error instanceof Deno.errors.NotFound) {
          return apiError(400, "bad_request", "Parent folder does not exist");
        }
        throw error;
      }
      return json({});
    }
    if (method === "POST" && rest === "/fs/write") {
      if (request.headers.get("content-type") !== "application/gzip") {
        return apiError(400, "bad_request", "Expected application/gzip");
      }
      const cwd = request.headers.get("x-cwd") ?? "/";
      if (!request.body) return apiError(400, "bad_request", "No body");
      const entries = request.body
        .pipeThrough(new DecompressionStream("gzip"))
        .pipeThrough(createTarDecoder());
      for await (const entry of entries) {
        const name = entry.header.name;
        if ((entry.header.type ?? "file") !== "file") {
          await entry.body.cancel();
          continue;
        }
        const target = map(name, cwd);
        await Deno.mkdir(target.slice(0, target.lastIndexOf("/")) || "/", {
          recursive: true,
        });
        const file = await Deno.open(target, {
          write: true,
          create: true,
          truncate: true,
        });
        await entry.body.pipeTo(file.writable);
        await Deno.chmod(target, (entry.header.mode ?? 0o644) & 0o7777);
      }
      return json({});
    }
    if (method === "POST" && rest === "/cmd") {
      return await runCommand(session, sandbox, await read());
    }
    const cmd = /^\/cmd\/([^/]+)(\/logs|\/kill)?$/.exec(rest);
    if (cmd) {
      const command = session.commands.get(cmd[1]!);
      if (!command) return apiError(404, "not_found", "Command not found");
      if (method === "POST" && cmd[2] === "/kill") {
        const given = await read();
        const signal = given.signal === 9 ? "SIGKILL" : "SIGTERM";
        try {
          if (command.exitCode === null) command.child?.kill(signal);
        } catch { /* gone */ }
        return json({ command: commandJson(command) });
      }
      if (method === "GET" && cmd[2] === "/logs") {
        return ndjsonResponse(command, 0, false);
      }
      if (method === "GET" && cmd[2] === undefined) {
        if (url.searchParams.get("wait") === "true") {
          await finished(command);
        }
        return json({ command: commandJson(command) });
      }
    }
    return apiError(404, "not_found", "Not found");
  }

  async function runCommand(
    session: VercelTestSession,
    sandbox: VercelTestSandbox,
    given: Record<string, unknown>,
  ): Promise<Response> {
    if (typeof given.command !== "string" || given.command === "") {
      return apiError(400, "bad_request", "command is required");
    }
    const cwd = typeof given.cwd === "string" ? given.cwd : "/vercel/sandbox";
    const hostCwd = map(cwd);
    try {
      if (!(await Deno.stat(hostCwd)).isDirectory) throw new Error();
    } catch {
      return apiError(400, "bad_request", `cwd "${cwd}" does not exist`);
    }
    const args = Array.isArray(given.args) ? given.args.map(String) : [];
    const command: TestCommand = {
      id: `cmd_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
      name: given.command,
      args,
      cwd,
      sessionId: session.id,
      startedAt: Date.now(),
      exitCode: null,
      logs: [],
      listeners: new Set(),
    };
    session.commands.set(command.id, command);
    const push = (line: Record<string, unknown>) => {
      command.logs.push(line);
      for (const listener of command.listeners) listener();
    };
    const env = {
      ...egress.get(sandbox.name)?.env,
      ...sandbox.env,
      ...(isObject(given.env) ? given.env as Record<string, string> : {}),
    };
    try {
      command.child = new Deno.Command(given.command, {
        args,
        cwd: hostCwd,
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch {
      push({
        stream: "stderr",
        data: `bash: ${given.command}: command not found\n`,
      });
      command.exitCode = 127;
      command.durationMs = 0;
      push({});
    }
    if (command.child) {
      const child = command.child;
      const pump = async (
        stream: ReadableStream<Uint8Array>,
        name: string,
      ) => {
        for await (const data of stream.pipeThrough(new TextDecoderStream())) {
          push({ stream: name, data });
        }
      };
      // The command's own timeout: its group is SIGKILLed (exit 137).
      const timeout = typeof given.timeout === "number" && given.timeout > 0
        ? setTimeout(() => {
          try {
            Deno.kill(-child.pid, "SIGKILL");
          } catch { /* already gone */ }
        }, Math.min(given.timeout, 2 ** 31 - 1))
        : undefined;
      (async () => {
        await Promise.all([
          pump(child.stdout, "stdout"),
          pump(child.stderr, "stderr"),
        ]);
        const status = await child.status;
        clearTimeout(timeout);
        command.exitCode = status.signal
          ? 128 + (SIGNALS[status.signal] ?? 9)
          : status.code;
        command.durationMs = Date.now() - command.startedAt;
        push({});
      })();
    }
    if (given.wait === true) return ndjsonResponse(command, 0, true);
    return json({ command: commandJson(command) });
  }

  const faults = options.faults ?? new FaultInjector({
    errorBody: () =>
      JSON.stringify({
        error: { code: "injected", message: "injected fault" },
      }),
  });
  const server = serveWithFaults({
    handler,
    faults,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.faultControl ? { control: true } : {}),
  });
  const close = async () => {
    for (const session of sessions.values()) stopSession(session);
    for (const name of [...egress.keys()]) await setPolicy(name, undefined);
    await server.close();
  };
  return {
    url: server.url,
    sandboxes,
    sessions,
    calls,
    faults,
    close,
    [Symbol.asyncDispose]: close,
  };
}

const SIGNALS: Partial<Record<Deno.Signal, number>> = {
  SIGTERM: 15,
  SIGKILL: 9,
  SIGINT: 2,
  SIGHUP: 1,
};

function commandJson(command: TestCommand): Record<string, unknown> {
  return {
    id: command.id,
    name: command.name,
    args: command.args,
    cwd: command.cwd,
    sessionId: command.sessionId,
    exitCode: command.exitCode,
    ...(command.durationMs !== undefined
      ? { durationMs: command.durationMs }
      : {}),
    startedAt: command.startedAt,
  };
}

function finished(command: TestCommand): Promise<void> {
  if (command.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (command.exitCode !== null) {
        command.listeners.delete(check);
        resolve();
      }
    };
    command.listeners.add(check);
  });
}

/**
 * The command's NDJSON: (with `head`) the command first, then its log
 * lines as they come, then (with `head`) the finished command.
 */
function ndjsonResponse(
  command: TestCommand,
  from: number,
  head: boolean,
): Response {
  let sent = from;
  let wake: (() => void) | undefined;
  const listener = () => wake?.();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (head) {
        controller.enqueue(
          encoder.encode(
            JSON.stringify({
              command: { ...commandJson(command), exitCode: null },
            }) + "\n",
          ),
        );
      }
      command.listeners.add(listener);
    },
    async pull(controller) {
      while (sent >= command.logs.length) {
        await new Promise<void>((resolve) => wake = resolve);
      }
      const line = command.logs[sent++]!;
      if (Object.keys(line).length === 0) {
        command.listeners.delete(listener);
        if (head) {
          controller.enqueue(
            encoder.encode(
              JSON.stringify({ command: commandJson(command) }) + "\n",
            ),
          );
        }
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(JSON.stringify(line) + "\n"));
    },
    cancel() {
      command.listeners.delete(listener);
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/x-ndjson" },
  });
}

if (import.meta.main) {
  let port = 0;
  let token: string | undefined;
  let faultControl = false;
  const faults = new FaultInjector();
  const args = [...Deno.args];
  while (args.length > 0) {
    const [flag, inline] = splitFlag(args.shift()!);
    const value = () => inline ?? args.shift() ?? "";
    if (flag === "--port") port = Number(value());
    else if (flag === "--token") token = value();
    else if (flag === "--fault") faults.add(parseFaultSpec(value()));
    else if (flag === "--fault-control") faultControl = true;
    else {
      console.error(`Unknown argument ${flag}`);
      Deno.exit(2);
    }
  }
  const server = startVercelServer({
    port,
    faults,
    faultControl,
    ...(token !== undefined ? { token } : {}),
  });
  console.log(server.url);
}

/** Checks a `networkPolicy` as the API does (`allow-all`, `deny-all`, `custom`). */
function networkPolicyProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return "networkPolicy must be an object";
  if (value.mode === "allow-all" || value.mode === "deny-all") return undefined;
  if (value.mode !== "custom") {
    return "networkPolicy.mode must be allow-all, deny-all or custom";
  }
  const domains = value.allowedDomains;
  if (
    domains !== undefined &&
    (!Array.isArray(domains) || domains.some((d) => typeof d !== "string"))
  ) {
    return "networkPolicy.allowedDomains must be a list of strings";
  }
  return undefined;
}
