/**
 * A Daytona server for tests: the API (`/api`, the SDK's `apiUrl`) and each
 * sandbox's toolbox (`/toolbox/{id}`, the sandbox's `toolboxProxyUrl` plus
 * its id) in the shapes of the official descriptions and the wire facts of
 * the real service (`../shared/specs/daytona/`, and its README section).
 *
 * Each sandbox has its own file system: `/home/daytona` (its home, where
 * commands start) and `/tmp` are folders of its own, the rest is the host's,
 * read-only. Commands run for real under bubblewrap with those folders bound
 * in; `networkBlockAll` gives a command no network. File calls see the same
 * folders. `POST /process/execute` answers stdout and stderr through one
 * pipe, 408 past `timeout` (the group SIGKILLed), `exitCode: -1` for a
 * missing `cwd`. Sessions keep `cd` and `export` between commands, run
 * `runAsync` commands in the background and are killed whole with
 * `DELETE /process/session/{id}` (SIGTERM, SIGKILL after 2 s).
 *
 * Run by hand: `deno run -A tests/servers/daytona.ts --port 0 --api-key K`;
 * prints the API base URL as the first line of stdout.
 *
 * @module
 */
import {
  encoder,
  errorText,
  isObject,
  sandboxBwrapArgs,
  splitFlag,
} from "./_common.ts";
import { FaultInjector } from "./_faults.ts";
import { serveWithFaults } from "./_fault_server.ts";

/** Options of {@linkcode startDaytonaServer}. */
export interface DaytonaServerOptions {
  /** The API key required (`Authorization: Bearer`); none: any. */
  readonly apiKey?: string;
  /** Port; default 0. */
  readonly port?: number;
  /**
   * Host folders bound read-write at the same path in every sandbox (as a
   * shared volume): tests read there what commands wrote.
   */
  readonly volumes?: readonly string[];
  /** The fault injector. */
  readonly faults?: FaultInjector;
}

/** One command of a session. */
interface SessionCommand {
  readonly id: string;
  readonly command: string;
  exitCode?: number;
  output: Uint8Array[];
  child?: Deno.ChildProcess;
  done: Promise<void>;
}

/** One session: a shell's folder and variables, kept between commands. */
interface Session {
  readonly id: string;
  cwd: string;
  env: string;
  readonly commands: Map<string, SessionCommand>;
}

/** One sandbox. */
export interface DaytonaTestSandbox {
  readonly id: string;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly env: Record<string, string>;
  readonly root: string;
  readonly networkBlockAll: boolean;
  state: "started" | "stopped" | "destroyed";
  autoStopInterval: number;
  readonly createdAt: string;
  readonly sessions: Map<string, Session>;
  readonly children: Set<Deno.ChildProcess>;
}

/** A running Daytona test server. */
export interface DaytonaServer extends AsyncDisposable {
  /** The API base (the SDK's `apiUrl`). */
  readonly url: string;
  /** Sandboxes by id. */
  readonly sandboxes: Map<string, DaytonaTestSandbox>;
  /** Every call, `METHOD path`. */
  readonly calls: string[];
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Stops serving, kills every command, removes every sandbox's files. */
  close(): Promise<void>;
}

const HOME = "/home/daytona";
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** The daemon's error. */
function daemonError(
  status: number,
  code: string,
  message: string,
  request: Request,
): Response {
  return json({
    statusCode: status,
    message,
    code,
    timestamp: new Date().toISOString(),
    path: new URL(request.url).pathname,
    method: request.method,
    source: "DAYTONA_DAEMON",
  }, status);
}

/** The API's (NestJS) error. */
function apiError(status: number, message: string, request: Request): Response {
  const error = { 400: "Bad Request", 401: "Unauthorized", 404: "Not Found" };
  return json({
    path: new URL(request.url).pathname,
    timestamp: new Date().toISOString(),
    statusCode: status,
    error: error[status as keyof typeof error] ?? "Error",
    message,
  }, status);
}

/**
 * Starts the server.
 *
 * @param options API key, port.
 * @returns The server.
 */
export function startDaytonaServer(
  options: DaytonaServerOptions = {},
): DaytonaServer {
  const sandboxes = new Map<string, DaytonaTestSandbox>();
  const calls: string[] = [];
  let origin = "";

  const sandboxJson = (box: DaytonaTestSandbox) => ({
    id: box.id,
    organizationId: "org-test",
    name: box.name,
    snapshot: "daytonaio/sandbox:test",
    user: "daytona",
    env: box.env,
    labels: box.labels,
    public: false,
    networkBlockAll: box.networkBlockAll,
    target: "us",
    cpu: 1,
    gpu: 0,
    memory: 1,
    disk: 3,
    state: box.state,
    desiredState: box.state,
    autoStopInterval: box.autoStopInterval,
    autoArchiveInterval: 10080,
    autoDeleteInterval: -1,
    createdAt: box.createdAt,
    updatedAt: new Date().toISOString(),
    toolboxProxyUrl: `${origin}/toolbox`,
  });

  /** A sandbox path on the host, or undefined outside its own folders. */
  const hostPath = (box: DaytonaTestSandbox, path: string, write: boolean) => {
    const parts: string[] = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") parts.pop();
      else parts.push(part);
    }
    const clean = "/" + parts.join("/");
    for (const volume of options.volumes ?? []) {
      if (clean === volume || clean.startsWith(volume + "/")) return clean;
    }
    for (
      const [inside, outside] of [[HOME, "home"], ["/tmp", "tmp"]] as const
    ) {
      if (clean === inside || clean.startsWith(inside + "/")) {
        return `${box.root}/${outside}${clean.slice(inside.length)}`;
      }
    }
    return write ? undefined : clean;
  };

  /** Starts `bash -c script` in the sandbox, in its own process group. */
  const spawn = (
    box: DaytonaTestSandbox,
    script: string,
    args: string[],
    env: Record<string, string>,
  ) => {
    const child = new Deno.Command("setsid", {
      args: [
        "bwrap",
        ...sandboxBwrapArgs({
          root: box.root,
          home: HOME,
          volumes: options.volumes ?? [],
          noNetwork: box.networkBlockAll,
          cwd: HOME,
        }),
        "bash",
        "-c",
        script,
        "bash",
        ...args,
      ],
      env: { ...box.env, ...env, HOME, USER: "daytona" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    box.children.add(child);
    child.status.finally(() => box.children.delete(child));
    return child;
  };

  const killGroup = (child: Deno.ChildProcess, signal: Deno.Signal) => {
    try {
      Deno.kill(-child.pid, signal);
    } catch { /* gone */ }
  };

  const fileInfo = async (host: string, path: string) => {
    const info = await Deno.stat(host);
    const perm = (info.mode ?? 0) & 0o777;
    const rwx = (bits: number) =>
      (bits & 4 ? "r" : "-") + (bits & 2 ? "w" : "-") + (bits & 1 ? "x" : "-");
    const modified = (info.mtime ?? new Date()).toISOString();
    return {
      name: path.split("/").filter(Boolean).at(-1) ?? "/",
      size: info.size,
      isDir: info.isDirectory,
      mode: (info.isDirectory ? "d" : "-") + rwx(perm >> 6) + rwx(perm >> 3) +
        rwx(perm),
      permissions: "0" + perm.toString(8),
      owner: String(info.uid ?? 0),
      group: String(info.gid ?? 0),
      modifiedAt: modified,
      modTime: modified,
      path,
    };
  };

  const fsError = (error: unknown, request: Request, path: string) =>
    error instanceof Deno.errors.NotFound
      ? daemonError(404, "FILE_NOT_FOUND", `file not found: ${path}`, request)
      : error instanceof Deno.errors.PermissionDenied ||
          error instanceof Deno.errors.NotCapable
      ? daemonError(
        403,
        "FILE_ACCESS_DENIED",
        `access denied: ${path}`,
        request,
      )
      : daemonError(400, "BAD_REQUEST", errorText(error), request);

  const toolbox = async (
    box: DaytonaTestSandbox,
    rest: string,
    request: Request,
  ): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.searchParams.get("path") ?? "";
    const method = request.method;
    const readOnly = (p: string) =>
      daemonError(403, "FILE_ACCESS_DENIED", `access denied: ${p}`, request);
    if (rest === "/process/execute" && method === "POST") {
      const body = await request.json().catch(() => null);
      if (!isObject(body) || typeof body.command !== "string") {
        return daemonError(400, "BAD_REQUEST", "command is required", request);
      }
      const envs = isObject(body.envs)
        ? body.envs as Record<string, string>
        : {};
      const bad = Object.keys(envs).find((name) => !NAME.test(name));
      if (bad !== undefined) {
        return daemonError(
          400,
          "BAD_REQUEST",
          `invalid env name: ${bad}`,
          request,
        );
      }
      const cwd = typeof body.cwd === "string" && body.cwd !== ""
        ? body.cwd
        : HOME;
      const cwdHost = hostPath(box, cwd, false)!;
      if (!(await Deno.stat(cwdHost).then((i) => i.isDirectory, () => false))) {
        return json({
          exitCode: -1,
          result: `chdir ${cwd}: no such file or directory`,
        });
      }
      // One pipe for stdout and stderr, as the daemon gives them.
      const child = spawn(box, 'cd "$1" && exec 2>&1 && eval "$2"', [
        cwd,
        body.command,
      ], envs);
      const timeout = typeof body.timeout === "number" && body.timeout > 0
        ? body.timeout
        : undefined;
      let timedOut = false;
      const timer = timeout === undefined ? undefined : setTimeout(() => {
        timedOut = true;
        killGroup(child, "SIGKILL");
      }, timeout * 1000);
      const [status, out] = await Promise.all([
        child.status,
        new Response(child.stdout).text(),
        child.stderr.cancel(),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        return daemonError(
          408,
          "REQUEST_TIMEOUT",
          "command execution timeout",
          request,
        );
      }
      return json({
        exitCode: status.signal
          ? 128 + signalNumber(status.signal)
          : status.code,
        result: out,
      });
    }
    if (rest === "/process/session" && method === "GET") {
      return json([...box.sessions.values()].map(sessionJson));
    }
    if (rest === "/process/session" && method === "POST") {
      const body = await request.json().catch(() => null);
      const id = isObject(body) ? body.sessionId : undefined;
      if (typeof id !== "string" || id === "") {
        return daemonError(
          400,
          "BAD_REQUEST",
          "sessionId is required",
          request,
        );
      }
      if (box.sessions.has(id)) {
        return daemonError(
          409,
          "CONFLICT",
          `session ${id} already exists`,
          request,
        );
      }
      box.sessions.set(id, { id, cwd: HOME, env: "", commands: new Map() });
      return new Response(null, { status: 201 });
    }
    const sessionMatch = /^\/process\/session\/([^/]+)(\/.*)?$/.exec(rest);
    if (sessionMatch) {
      const session = box.sessions.get(decodeURIComponent(sessionMatch[1]!));
      if (session === undefined) {
        return daemonError(404, "NOT_FOUND", "session not found", request);
      }
      const tail = sessionMatch[2] ?? "";
      if (tail === "" && method === "GET") return json(sessionJson(session));
      if (tail === "" && method === "DELETE") {
        box.sessions.delete(session.id);
        const running = [...session.commands.values()].filter((c) =>
          c.exitCode === undefined && c.child
        );
        for (const command of running) killGroup(command.child!, "SIGTERM");
        const timer = setTimeout(() => {
          for (const command of running) killGroup(command.child!, "SIGKILL");
        }, 2000);
        await Promise.all(running.map((c) => c.done));
        clearTimeout(timer);
        return new Response(null, { status: 204 });
      }
      if (tail === "/exec" && method === "POST") {
        const body = await request.json().catch(() => null);
        if (!isObject(body) || typeof body.command !== "string") {
          return daemonError(
            400,
            "BAD_REQUEST",
            "command is required",
            request,
          );
        }
        const command = runInSession(box, session, body.command);
        if (body.runAsync === true || body.async === true) {
          return json({ cmdId: command.id }, 202);
        }
        await command.done;
        return json({
          cmdId: command.id,
          exitCode: command.exitCode,
          ...logs(command),
        });
      }
      const commandMatch = /^\/command\/([^/]+)(\/logs)?$/.exec(tail);
      const command = commandMatch
        ? session.commands.get(decodeURIComponent(commandMatch[1]!))
        : undefined;
      if (commandMatch && method === "GET") {
        if (command === undefined) {
          return daemonError(404, "NOT_FOUND", "command not found", request);
        }
        if (commandMatch[2]) return json(logs(command));
        return json({
          id: command.id,
          command: command.command,
          ...(command.exitCode !== undefined
            ? { exitCode: command.exitCode }
            : {}),
        });
      }
    }
    if (rest === "/files/bulk-upload" && method === "POST") {
      // Parts in order: `files[i].path` then `files[i].file`.
      const form = await request.formData().catch(() => null);
      if (form === null) {
        return daemonError(
          400,
          "BAD_REQUEST",
          "invalid multipart form",
          request,
        );
      }
      const files: { path: string; bytes: number }[] = [];
      const errors: string[] = [];
      for (const [name, value] of form) {
        const match = /^files\[(\d+)\]\.file$/.exec(name);
        if (!match || typeof value === "string") continue;
        const target = form.get(`files[${match[1]}].path`);
        const host = typeof target === "string"
          ? hostPath(box, target, true)
          : undefined;
        if (typeof target !== "string" || host === undefined) {
          errors.push(`${target ?? name}: access denied`);
          continue;
        }
        try {
          await Deno.mkdir(host.slice(0, host.lastIndexOf("/")), {
            recursive: true,
            mode: 0o755,
          });
          await Deno.writeFile(host, value.stream());
          files.push({ path: target, bytes: value.size });
        } catch (error) {
          errors.push(`${target}: ${errorText(error)}`);
        }
      }
      return errors.length > 0 ? json({ errors, files }, 400) : json({ files });
    }
    if (rest === "/files/upload-v2" && method === "POST") {
      const host = hostPath(box, path, true);
      if (host === undefined) return readOnly(path);
      await Deno.mkdir(host.slice(0, host.lastIndexOf("/")), {
        recursive: true,
      });
      const type = request.headers.get("content-type") ?? "";
      if (type.startsWith("multipart/form-data")) {
        const file = (await request.formData()).get("file");
        if (file === null || typeof file === "string") {
          return daemonError(400, "BAD_REQUEST", "file is required", request);
        }
        await Deno.writeFile(host, file.stream());
      } else {
        await Deno.writeFile(host, request.body ?? new Uint8Array());
      }
      const size = (await Deno.stat(host)).size;
      return json({ path, size });
    }
    if (rest === "/files/download" && method === "GET") {
      const host = hostPath(box, path, false)!;
      try {
        const info = await Deno.stat(host);
        if (info.isDirectory) {
          return daemonError(
            400,
            "INVALID_FILE_PATH",
            `${path} is a directory`,
            request,
          );
        }
        const file = await Deno.open(host);
        return new Response(file.readable, {
          headers: {
            "content-type": "application/octet-stream",
            "content-length": String(info.size),
          },
        });
      } catch (error) {
        return fsError(error, request, path);
      }
    }
    if (rest === "/files/bulk-download" && method === "POST") {
      const body = await request.json().catch(() => null);
      const paths = isObject(body) && Array.isArray(body.paths)
        ? body.paths
        : null;
      if (paths === null || paths.some((p) => typeof p !== "string")) {
        return daemonError(400, "BAD_REQUEST", "paths is required", request);
      }
      return bulkDownload(box, paths as string[], hostPath);
    }
    if (rest === "/files/info" && method === "GET") {
      try {
        return json(await fileInfo(hostPath(box, path, false)!, path));
      } catch (error) {
        return fsError(error, request, path);
      }
    }
    if (rest === "/files" && method === "GET") {
      const host = hostPath(box, path, false)!;
      try {
        const out = [];
        for await (const entry of Deno.readDir(host)) {
          const child = `${path.replace(/\/+$/, "")}/${entry.name}`;
          out.push(
            await fileInfo(`${host}/${entry.name}`, child).catch(() => null),
          );
        }
        return json(out.filter((info) => info !== null));
      } catch (error) {
        return fsError(error, request, path);
      }
    }
    if (rest === "/files/folder" && method === "POST") {
      const host = hostPath(box, path, true);
      if (host === undefined) return readOnly(path);
      const mode = parseInt(url.searchParams.get("mode") ?? "755", 8);
      if (!Number.isInteger(mode)) {
        return daemonError(400, "BAD_REQUEST", "invalid mode", request);
      }
      await Deno.mkdir(host, { recursive: true, mode });
      return new Response(null, { status: 201 });
    }
    if (rest === "/files" && method === "DELETE") {
      const host = hostPath(box, path, true);
      if (host === undefined) return readOnly(path);
      const recursive = url.searchParams.get("recursive") === "true";
      try {
        const info = await Deno.lstat(host);
        if (info.isDirectory && !recursive) {
          return daemonError(
            400,
            "BAD_REQUEST",
            `${path} is a directory`,
            request,
          );
        }
        await Deno.remove(host, { recursive });
        return new Response(null, { status: 204 });
      } catch (error) {
        return fsError(error, request, path);
      }
    }
    if (rest === "/files/permissions" && method === "POST") {
      const host = hostPath(box, path, true);
      if (host === undefined) return readOnly(path);
      const mode = url.searchParams.get("mode");
      try {
        if (mode) await Deno.chmod(host, parseInt(mode, 8));
        return new Response(null, { status: 200 });
      } catch (error) {
        return fsError(error, request, path);
      }
    }
    return daemonError(
      404,
      "NOT_FOUND",
      `${method} ${rest} is not served`,
      request,
    );
  };

  /** Runs a command in a session: `cd` and `export` carry to the next. */
  const runInSession = (
    box: DaytonaTestSandbox,
    session: Session,
    text: string,
  ): SessionCommand => {
    const id = crypto.randomUUID();
    const stateFile = `/tmp/.session-${session.id}-${id}`;
    const script = `cd "$1" 2>/dev/null; eval "$2"
source /dev/stdin <<'__DAYTONA_CMD__'
${text}
__DAYTONA_CMD__
__code=$?; { echo "$PWD"; export -p; } > "$3"; exit $__code`;
    const child = spawn(box, script, [session.cwd, session.env, stateFile], {});
    const command: SessionCommand = {
      id,
      command: text,
      output: [],
      child,
      done: Promise.resolve(),
    };
    const pump = async (stream: ReadableStream<Uint8Array>, marker: number) => {
      let rest = "";
      const decoder = new TextDecoder();
      const push = (line: string) =>
        command.output.push(
          new Uint8Array([
            marker,
            marker,
            marker,
            ...encoder.encode(line + "\n"),
          ]),
        );
      for await (const chunk of stream) {
        rest += decoder.decode(chunk, { stream: true });
        const lines = rest.split("\n");
        rest = lines.pop()!;
        lines.forEach(push);
      }
      if (rest !== "") push(rest);
    };
    command.done = Promise.all([
      pump(child.stdout, 1),
      pump(child.stderr, 2),
      child.status,
    ]).then(async ([, , status]) => {
      command.exitCode = status.signal
        ? 128 + signalNumber(status.signal)
        : status.code;
      const state = await Deno.readTextFile(
        `${box.root}/tmp/${stateFile.slice(5)}`,
      ).catch(() => null);
      await Deno.remove(`${box.root}/tmp/${stateFile.slice(5)}`).catch(
        () => {},
      );
      if (state !== null) {
        const [cwd, ...exports] = state.split("\n");
        session.cwd = cwd!;
        session.env = exports.join("\n");
      }
    });
    session.commands.set(id, command);
    return command;
  };

  const faults = options.faults ?? new FaultInjector();
  const server = serveWithFaults({
    faults,
    port: options.port ?? 0,
    handler: async (request) => {
      const url = new URL(request.url);
      calls.push(`${request.method} ${url.pathname}`);
      if (
        options.apiKey !== undefined &&
        request.headers.get("authorization") !== `Bearer ${options.apiKey}`
      ) {
        return apiError(401, "Invalid credentials", request);
      }
      try {
        const toolboxMatch = /^\/toolbox\/([^/]+)(\/.*)$/.exec(url.pathname);
        if (toolboxMatch) {
          const box = sandboxes.get(decodeURIComponent(toolboxMatch[1]!));
          if (box === undefined || box.state === "destroyed") {
            return apiError(404, "Sandbox not found", request);
          }
          if (box.state !== "started") {
            return apiError(400, "Sandbox is not started", request);
          }
          return await toolbox(box, toolboxMatch[2]!, request);
        }
        return await api(url, request);
      } catch (error) {
        return json({ statusCode: 500, message: errorText(error) }, 500);
      }
    },
  });
  origin = server.url;

  const find = (idOrName: string) =>
    sandboxes.get(idOrName) ??
      [...sandboxes.values()].find((box) =>
        box.name === idOrName && box.state !== "destroyed"
      );

  const stopAll = async (box: DaytonaTestSandbox) => {
    box.sessions.clear();
    for (const child of box.children) killGroup(child, "SIGKILL");
    await Promise.all([...box.children].map((c) => c.status));
  };

  const api = async (url: URL, request: Request): Promise<Response> => {
    const path = url.pathname.replace(/^\/api/, "");
    if (path === "/sandbox" && request.method === "POST") {
      const body = await request.json().catch(() => null);
      if (!isObject(body)) return apiError(400, "Invalid body", request);
      const labels = isObject(body.labels)
        ? body.labels as Record<string, string>
        : {};
      const env = isObject(body.env) ? body.env as Record<string, string> : {};
      const id = crypto.randomUUID();
      const name = typeof body.name === "string" ? body.name : id;
      if (find(name)) {
        return apiError(
          409,
          `Sandbox with name ${name} already exists`,
          request,
        );
      }
      const root = await Deno.makeTempDir({ prefix: "daytona-sandbox-" });
      await Deno.mkdir(`${root}/home`);
      await Deno.mkdir(`${root}/tmp`);
      const box: DaytonaTestSandbox = {
        id,
        name,
        labels,
        env,
        root,
        networkBlockAll: body.networkBlockAll === true,
        state: "started",
        autoStopInterval: typeof body.autoStopInterval === "number"
          ? body.autoStopInterval
          : 15,
        createdAt: new Date().toISOString(),
        sessions: new Map(),
        children: new Set(),
      };
      sandboxes.set(id, box);
      return json(sandboxJson(box));
    }
    if (path === "/sandbox" && request.method === "GET") {
      let wanted: Record<string, unknown> = {};
      const labels = url.searchParams.get("labels");
      if (labels !== null) {
        try {
          wanted = JSON.parse(labels);
        } catch {
          return apiError(400, "labels must be a JSON object", request);
        }
      }
      const items = [...sandboxes.values()].filter((box) =>
        box.state !== "destroyed" &&
        Object.entries(wanted).every(([k, v]) => box.labels[k] === v)
      ).map(sandboxJson);
      return json({ items, nextCursor: null });
    }
    const match = /^\/sandbox\/([^/]+)(\/.*)?$/.exec(path);
    const box = match ? find(decodeURIComponent(match[1]!)) : undefined;
    if (match && (box === undefined || box.state === "destroyed")) {
      return apiError(404, `Sandbox ${match[1]} not found`, request);
    }
    if (box !== undefined) {
      const tail = match![2] ?? "";
      const method = request.method;
      if (tail === "" && method === "GET") return json(sandboxJson(box));
      if (tail === "" && method === "DELETE") {
        await stopAll(box);
        box.state = "destroyed";
        sandboxes.delete(box.id);
        await Deno.remove(box.root, { recursive: true }).catch(() => {});
        return json({ ...sandboxJson(box), state: "destroying" });
      }
      if (tail === "/stop" && method === "POST") {
        await stopAll(box);
        box.state = "stopped";
        return json(sandboxJson(box));
      }
      if (tail === "/start" && method === "POST") {
        box.state = "started";
        return json(sandboxJson(box));
      }
      const autostop = /^\/autostop\/(-?\d+)$/.exec(tail);
      if (autostop && method === "POST") {
        box.autoStopInterval = Number(autostop[1]);
        return json(sandboxJson(box));
      }
      if (tail === "/last-activity" && method === "POST") {
        return new Response(null, { status: 201 });
      }
      if (tail === "/toolbox-proxy-url" && method === "GET") {
        return json({ url: `${origin}/toolbox` });
      }
    }
    return apiError(404, `Cannot ${request.method} ${url.pathname}`, request);
  };

  const close = async () => {
    for (const box of sandboxes.values()) {
      await stopAll(box);
      await Deno.remove(box.root, { recursive: true }).catch(() => {});
    }
    await server.close();
  };
  return {
    url: `${origin}/api`,
    faults,
    sandboxes,
    calls,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function signalNumber(signal: Deno.Signal): number {
  return ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as Record<
    string,
    number
  >)[signal] ?? 0;
}

function sessionJson(session: Session) {
  return {
    sessionId: session.id,
    commands: [...session.commands.values()].map((command) => ({
      id: command.id,
      command: command.command,
      ...(command.exitCode !== undefined ? { exitCode: command.exitCode } : {}),
    })),
  };
}

/** A command's logs: `{output, stdout, stderr}` from the marker lines. */
function logs(command: SessionCommand) {
  const decoder = new TextDecoder();
  let output = "", stdout = "", stderr = "";
  for (const line of command.output) {
    const text = decoder.decode(line.subarray(3));
    output += text;
    if (line[0] === 1) stdout += text;
    else stderr += text;
  }
  return { output, stdout, stderr };
}

/** RFC 5987 `filename*`: letters, digits and `!#$&+-.^_\`|~` kept. */
function rfc5987(path: string): string {
  return [...encoder.encode(path)].map((byte) => {
    const char = String.fromCharCode(byte);
    return /[A-Za-z0-9!#$&+\-.^_`|~]/.test(char)
      ? char
      : "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }).join("");
}

/** `multipart/form-data; boundary=DAYTONA-FILE-BOUNDARY`, a part per path. */
function bulkDownload(
  box: DaytonaTestSandbox,
  paths: string[],
  hostPath: (box: DaytonaTestSandbox, path: string, write: boolean) =>
    | string
    | undefined,
): Response {
  const boundary = "DAYTONA-FILE-BOUNDARY";
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const path of paths) {
        const disposition = (name: string) =>
          `Content-Disposition: form-data; name="${name}"; filename="${
            path.replace(/"/g, '\\"')
          }"; filename*=utf-8''${rfc5987(path)}\r\n`;
        const host = hostPath(box, path, false)!;
        const info = await Deno.stat(host).catch(() => null);
        if (info === null || info.isDirectory) {
          const error = JSON.stringify(
            info === null
              ? {
                statusCode: 404,
                code: "FILE_NOT_FOUND",
                message: `file not found: ${path}`,
              }
              : {
                statusCode: 400,
                code: "INVALID_FILE_PATH",
                message: `${path} is a directory`,
              },
          );
          controller.enqueue(encoder.encode(
            `--${boundary}\r\n${
              disposition("error")
            }Content-Type: application/json\r\n\r\n${error}\r\n`,
          ));
          continue;
        }
        controller.enqueue(encoder.encode(
          `--${boundary}\r\n${
            disposition("file")
          }Content-Type: application/octet-stream\r\nContent-Length: ${info.size}\r\n\r\n`,
        ));
        for await (const chunk of (await Deno.open(host)).readable) {
          controller.enqueue(chunk);
        }
        controller.enqueue(encoder.encode("\r\n"));
      }
      controller.enqueue(encoder.encode(`--${boundary}--\r\n`));
      controller.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
  });
}

if (import.meta.main) {
  let port = 0;
  let apiKey: string | undefined;
  const args = [...Deno.args];
  while (args.length > 0) {
    const [flag, inline] = splitFlag(args.shift()!);
    const value = () => inline ?? args.shift() ?? "";
    if (flag === "--port") port = Number(value());
    else if (flag === "--api-key") apiKey = value();
    else {
      console.error(`Unknown argument ${flag}`);
      Deno.exit(2);
    }
  }
  const server = startDaytonaServer({
    port,
    ...(apiKey !== undefined ? { apiKey } : {}),
  });
  console.log(server.url);
}
