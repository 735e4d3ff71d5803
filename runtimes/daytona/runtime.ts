/**
 * The Daytona runtime: skills uploaded into a Daytona sandbox and commands
 * run there through its toolbox, spoken to with `fetch` only.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import { allowList, checkRemoteEgress } from "../../network/remote.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import {
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceRuntime,
  type ServiceCreateOptions,
  type ServiceSandbox,
} from "../remote/sandbox_service.ts";
import type {
  RemoteCommandEvent,
  RemoteCommandKind,
  RemoteCommandStart,
} from "../remote/command.ts";
import {
  shellFileCalls,
  shellMakeDirectories,
  type ShellRunner,
  shellSetModes,
} from "../remote/shell_files.ts";
import { sendCall, sendMultipart } from "../remote/service_calls.ts";
import {
  goneStates,
  sandboxCalls,
  serviceClient,
} from "../remote/service_answers.ts";
import type { HttpClient } from "../remote/http.ts";
import { shellQuote } from "../remote/shell.ts";
import type { RemoteUploadFile } from "../remote/fs.ts";

/**
 * Options of {@linkcode DaytonaSkillRuntime}. Defaults: `cwd`
 * `/home/daytona`, `skillsRoot` `/home/daytona/skills`, `conversationsRoot`
 * `/home/daytona/conversations`; `sandboxId` names the sandbox by id or
 * name; `readyTimeoutMs` waits for it to start.
 */
export interface DaytonaSkillRuntimeOptions
  extends Omit<SandboxKindOptions, "renewIntervalMs"> {
  /** The API key (`DAYTONA_API_KEY`); never shown in errors. */
  readonly apiKey?: string;
  /** The API base. Default `https://app.daytona.io/api` (a test server, a proxy). */
  readonly baseUrl?: string;
  /** The snapshot a sandbox the runtime creates starts from; default: the service's. */
  readonly snapshot?: string;
  /** Idle minutes before the service stops the sandbox (0: never). Default 15. */
  readonly autoStopMinutes?: number;
  /**
   * The egress policy of a sandbox the runtime creates: nothing allowed is
   * sent as `networkBlockAll` (enforced by the service, and by the test
   * server); host names as `domainAllowList` (the service's own allowlist).
   * Ports and IP addresses cannot be expressed, nor deny patterns: refused.
   * Not with `sandboxId`.
   */
  readonly network?: NetworkPolicy;
  /** Refused: secrets at the egress are the isolated local runtime's. */
  readonly secrets?: SecretsOption;
}

/** A Daytona sandbox as the API describes it (the fields the runtime reads). */
export interface DaytonaSandbox extends ServiceSandbox {
  /** `creating`, `starting`, `started`, `stopped`, `error`, `destroyed`, ... */
  readonly state?: string;
  /** Where its toolbox is (plus `/<id>`). */
  readonly toolboxProxyUrl?: string;
  /** Its labels. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The Daytona runtime (`name: "daytona"`).
 *
 * **Plain**: on first real use it creates a sandbox (its labels carry the
 * runtime's metadata) or attaches to `sandboxId`; `close()` deletes only a
 * sandbox it created. **Conversation** (`conversationId`): the sandbox is
 * labelled with the conversation's key and recorded in the store; the next
 * runtime on the conversation attaches to it (a stopped one is started).
 *
 * Commands run in a toolbox session each (stdout and stderr apart; killed
 * by deleting the session); files go up in one multipart `bulk-upload` and
 * come down from `GET /files/download`. No request is made before real use.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { DaytonaSkillRuntime } from "@skillrun/skillrun/daytona";
 * const runtime = new DaytonaSkillRuntime({ apiKey: "k" });
 * assertEquals(runtime.cwd, "/home/daytona");
 * await runtime.close(); // never used: no request
 * ```
 */
export class DaytonaSkillRuntime extends SandboxServiceRuntime<DaytonaSandbox> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The API, the sandbox, the mode.
   * @throws {TypeError} A bad conversation id, path or variable, `sandboxId`
   * with a conversation, `network` with `sandboxId`, or `secrets`.
   * @throws {RangeError} A `network` pattern Daytona cannot express.
   */
  constructor(options: DaytonaSkillRuntimeOptions) {
    const network = networkFields(options);
    super({
      ...options,
      cwd: options.cwd ?? "/home/daytona",
      skillsRoot: options.skillsRoot ?? "/home/daytona/skills",
      name: "daytona",
      service: new DaytonaService(options, network),
      conversationsRoot: options.conversationsRoot ??
        "/home/daytona/conversations",
      timeoutSeconds: null,
      readinessName: "the sandbox",
    });
  }
}

/** `network` as the creation's `networkBlockAll` / `domainAllowList`. */
function networkFields(
  options: DaytonaSkillRuntimeOptions,
): Record<string, unknown> {
  const network = checkRemoteEgress("Daytona", options, undefined);
  if (network === undefined) return {};
  const { everything, hosts } = allowList(network, "Daytona");
  if (everything) return {};
  if (hosts.length === 0) return { networkBlockAll: true };
  return { domainAllowList: hosts.join(",") };
}

/** Daytona as a sandbox service. */
class DaytonaService implements SandboxService<DaytonaSandbox> {
  readonly serverUrl: string;
  readonly #http: HttpClient;
  readonly #headers: Readonly<Record<string, string>>;
  readonly gone = goneStates([
    "error",
    "build_failed",
    "destroyed",
    "destroying",
  ]);
  readonly get: SandboxService<DaytonaSandbox>["get"];
  readonly delete: (id: string, signal?: AbortSignal) => Promise<boolean>;

  constructor(
    private readonly options: DaytonaSkillRuntimeOptions,
    private readonly network: Record<string, unknown>,
  ) {
    this.serverUrl = (options.baseUrl ?? "https://app.daytona.io/api")
      .replace(/\/+$/, "");
    this.#headers = {
      ...(options.apiKey !== undefined
        ? { authorization: `Bearer ${options.apiKey}` }
        : {}),
      "x-daytona-source": "skillrun",
    };
    this.#http = serviceClient(this.serverUrl, this.#headers, options);
    ({ get: this.get, delete: this.delete } = sandboxCalls(
      this.#http,
      "/sandbox",
      sandbox,
    ));
  }

  async create(options: ServiceCreateOptions): Promise<DaytonaSandbox> {
    return sandbox(
      await this.#http.json({
        method: "POST",
        path: "/sandbox",
        json: {
          labels: options.metadata,
          env: {},
          autoStopInterval: this.options.autoStopMinutes ?? 15,
          ...(this.options.snapshot ? { snapshot: this.options.snapshot } : {}),
          ...this.network,
        },
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    );
  }

  async open(
    box: DaytonaSandbox,
    signal?: AbortSignal,
  ): Promise<RemoteSession> {
    let current = box;
    if (current.state === "stopped" || current.state === "archived") {
      current = sandbox(
        await this.#http.json({
          method: "POST",
          path: `/sandbox/${encodeURIComponent(box.id)}/start`,
          ...(signal ? { signal } : {}),
        }),
      );
    }
    const proxy = current.toolboxProxyUrl ??
      (await this.#http.json<{ url: unknown }>({
        method: "GET",
        path: `/sandbox/${encodeURIComponent(box.id)}/toolbox-proxy-url`,
        ...(signal ? { signal } : {}),
      })).url;
    const toolbox = serviceClient(
      `${String(proxy).replace(/\/+$/, "")}/${encodeURIComponent(box.id)}`,
      this.#headers,
      this.options,
    );
    const shell = executeShell(toolbox);
    return {
      commands: new ToolboxCommands(toolbox),
      files: {
        ...shellFileCalls(shell),
        open: (path, options) =>
          toolboxDownload(toolbox, path, options.offset, options.signal),
        upload: (files, signal) => toolboxUpload(toolbox, files, signal),
      },
      makeDirectories: (paths, signal) =>
        shellMakeDirectories(shell, paths, signal),
      isReady: async (signal) => {
        if (current.state === "started") return true;
        current = (await this.get(box.id, signal)) ?? current;
        return current.state === "started";
      },
    };
  }
}

function sandbox(value: Record<string, unknown>): DaytonaSandbox {
  if (typeof value?.id !== "string") {
    throw new Error("Cannot use the Daytona answer: it names no sandbox id");
  }
  return {
    id: value.id,
    expiresAt: null,
    ...(typeof value.state === "string" ? { state: value.state } : {}),
    ...(typeof value.toolboxProxyUrl === "string"
      ? { toolboxProxyUrl: value.toolboxProxyUrl }
      : {}),
    ...(value.labels ? { labels: value.labels as Record<string, string> } : {}),
  };
}

/**
 * Commands through toolbox sessions: one session per command (its own
 * shell, so nothing leaks between commands), the command run synchronously
 * in it (stdout and stderr apart in the answer), killed by deleting the
 * session (SIGTERM to its group, SIGKILL after the daemon's grace).
 */
class ToolboxCommands implements RemoteCommandKind {
  readonly backstopMs = 5_000;

  constructor(private readonly toolbox: HttpClient) {}

  async start(request: RemoteCommandStart) {
    const id = `skillrun-${crypto.randomUUID()}`;
    await sendCall(this.toolbox, {
      method: "POST",
      path: "/process/session",
      json: { sessionId: id },
      signal: request.signal,
    });
    const seconds = Math.ceil(request.serverTimeoutMs / 1000);
    const env = Object.entries(request.env).map(([k, v]) =>
      `${k}=${shellQuote(v)}`
    ).join(" ");
    // A subshell: the session's shell survives `exit`. The server's own
    // deadline (`timeout --foreground`: the command stays in the session's
    // process group, which the kill reaches) is the backstop for a client
    // that vanished. The daemon ends a last line without a newline with
    // one: an end mark on each stream tells the two apart.
    const command = `(cd ${shellQuote(request.cwd)} && exec env ${env} ` +
      `timeout --foreground -s KILL ${seconds} bash -c -- ${
        shellQuote(request.command)
      }) </dev/null; __c=$?; printf '${END_MARK}\\n'; ` +
      `printf '${END_MARK}\\n' >&2; (exit $__c)`;
    const { toolbox } = this;
    const kill = () => this.kill(id);
    async function* events(): AsyncGenerator<RemoteCommandEvent> {
      try {
        const result = await toolbox.json<Record<string, unknown>>({
          method: "POST",
          path: `/process/session/${id}/exec`,
          json: { command },
          timeoutMs: null,
          signal: request.signal,
        });
        const stdout = unmarked(result.stdout);
        const stderr = unmarked(result.stderr);
        if (stdout) yield { type: "stdout", data: stdout };
        if (stderr) yield { type: "stderr", data: stderr };
        yield { type: "exit", exitCode: Number(result.exitCode ?? -1) };
      } finally {
        // Housekeeping: the session ends with the command. A failure (the
        // sandbox or the network already gone) leaves at most an idle
        // session, which goes with its sandbox; nothing waits on it.
        kill().catch(() => {});
      }
    }
    return { id, events: events() };
  }

  async kill(id: string): Promise<void> {
    await sendCall(this.toolbox, {
      method: "DELETE",
      path: `/process/session/${encodeURIComponent(id)}`,
    }, [404]);
  }
}

/** The mark ending each stream of a session command (octal, for `printf`). */
const END_MARK = "\\036";

/** A stream's text without the end mark (the daemon's added newline goes with it). */
function unmarked(value: unknown): string {
  const text = typeof value === "string" ? value : "";
  const end = text.lastIndexOf("\x1e\n");
  return end < 0 ? text : text.slice(0, end); // no mark: cut short, as it came
}

/**
 * Helper commands (stat, list, modes) in one `POST /process/execute` each:
 * standard output as it came (no line joining: paths may hold `\r`),
 * standard error dropped.
 */
function executeShell(toolbox: HttpClient): ShellRunner {
  return async (command, signal) => {
    const answer = await toolbox.json<Record<string, unknown>>({
      method: "POST",
      path: "/process/execute",
      json: {
        command: `bash -c ${shellQuote(command)} 2>/dev/null`,
        timeout: 120,
      },
      timeoutMs: null,
      ...(signal ? { signal } : {}),
    });
    return {
      stdout: String(answer.result ?? ""),
      stderr: "",
      exitCode: Number(answer.exitCode ?? -1),
      timedOut: false,
      aborted: false,
    };
  };
}

/**
 * A file from `offset`: `GET /files/download` (Go's `ServeFile`, ranged); a
 * missing file is a `RemoteHttpError` with status 404, as the kit takes it.
 *
 * @param toolbox The sandbox's toolbox (`<toolboxProxyUrl>/<id>`).
 * @param path The absolute path.
 * @param offset The first byte.
 * @param signal Stops it.
 * @returns The answer, its body the file.
 */
export function toolboxDownload(
  toolbox: HttpClient,
  path: string,
  offset: number,
  signal?: AbortSignal,
): Promise<Response> {
  return toolbox.request({
    method: "GET",
    path: "/files/download",
    query: { path },
    ...(offset > 0 ? { headers: { range: `bytes=${offset}-` } } : {}),
    timeoutMs: null,
    ...(signal ? { signal } : {}),
  });
}

/**
 * Files in one streamed `POST /files/bulk-upload` (`files[i].path` before
 * `files[i].file`), then the modes given by one `chmod` per mode.
 *
 * @param toolbox The sandbox's toolbox (`<toolboxProxyUrl>/<id>`).
 * @param files The files.
 * @param signal Stops it.
 */
export async function toolboxUpload(
  toolbox: HttpClient,
  files: readonly RemoteUploadFile[],
  signal?: AbortSignal,
): Promise<void> {
  if (files.length === 0) return;
  await sendMultipart(
    toolbox,
    {
      method: "POST",
      path: "/files/bulk-upload",
      ...(signal ? { signal } : {}),
    },
    files.flatMap((file, i) => [
      { name: `files[${i}].path`, content: file.remotePath },
      {
        name: `files[${i}].file`,
        filename: file.remotePath.split("/").at(-1) || "file",
        contentType: "application/octet-stream",
        content: file.content,
      },
    ]),
  );
  await shellSetModes(executeShell(toolbox), files, signal ? { signal } : {});
}
