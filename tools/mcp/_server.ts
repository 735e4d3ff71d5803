// The MCP server every transport shares: the SDK's low-level server with the
// tools (their JSON Schemas passed through unchanged), and, when skills are
// given, the skills as prompts and resources.
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server";
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  type ElicitResult,
  ElicitResultSchema,
  GetPromptRequestSchema,
  type GetPromptResult,
  ListPromptsRequestSchema,
  type ListPromptsResult,
  ListResourcesRequestSchema,
  type ListResourcesResult,
  ListResourceTemplatesRequestSchema,
  type ListResourceTemplatesResult,
  ListToolsRequestSchema,
  type ListToolsResult,
  ReadResourceRequestSchema,
  type ReadResourceResult,
  type ServerNotification,
  type ServerRequest,
  type ServerResult,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import type { SkillEvent } from "../../observe/events.ts";
import denoJson from "../../deno.json" with { type: "json" };
import type { Skill } from "../../skill/types.ts";
import type { CopyPolicy } from "../../workspace/copy.ts";
import type { Tool } from "../types.ts";
import type { ToolApprovalRequester } from "../approval.ts";
import { describeCall } from "../_describe_call.ts";
import type { SkillCatalog } from "./_skills.ts";
import { McpRequestError, SKILLS_EXTENSION } from "./_protocol.ts";
import { redactDeep, redactError, Redactor } from "../../_internal/redact.ts";

/** The server name announced to MCP clients: the package's name. */
export const MCP_SERVER_NAME: string = denoJson.name;

/** The server version announced to MCP clients: the package's version. */
export const MCP_SERVER_VERSION: string = denoJson.version;

/** Options of {@linkcode connectMcpServer} and {@linkcode serveMcp}. */
export interface McpServerOptions {
  /** The name announced to clients; default {@linkcode MCP_SERVER_NAME}. */
  readonly name?: string;
  /** The version announced to clients; default {@linkcode MCP_SERVER_VERSION}. */
  readonly version?: string;
  /** Instructions for the client's model, sent at initialisation. */
  readonly instructions?: string;
  /**
   * Skills to offer as MCP prompts (one per skill: its instructions) and
   * resources (each file of its folder as `skill://<name>/<path>`). Without
   * it the server offers tools only.
   */
  readonly skills?: readonly Skill[];
  /** The largest skill file `resources/read` returns; default 4 MiB. */
  readonly maxResourceBytes?: number;
  /**
   * Which files of a skill are resources; default the copy policy's defaults
   * (secrets such as `.env` and keys left out). Symlinks never are.
   */
  readonly copyPolicy?: CopyPolicy;
  /**
   * The values kept out of every answer (tools, prompts, resources, errors),
   * asked at each answer, by the rule of the tools' outputs: typically the
   * tools' `context.secrets()` and the server's own token. Base64 resource
   * data (`blob`) is sent as it is.
   */
  readonly secrets?: () => Iterable<string>;
  /**
   * Whether a call the tool set's approval policy asks about is put to the
   * client's user with `elicitation/create` when the client declares the
   * capability (default true). `false` where the transport cannot carry a
   * request during a call (Streamable HTTP answering plain JSON): such a
   * call is then an error result naming the approval needed.
   */
  readonly elicitation?: boolean;
  /**
   * Called once per skill the MCP skills extension leaves out (a name that
   * breaks the naming rules, over 512 files or 16 MiB, front matter that is
   * not valid YAML...), with a message naming the skill and why.
   */
  readonly onWarning?: (message: string) => void;
  /**
   * Hot reload: where the current tools and skills are read at each request
   * (a kit of `buildSkillTools({ watch: true })`), instead of the `tools`
   * and `skills` given. The server then declares `listChanged` for tools,
   * prompts and resources and sends `notifications/tools/list_changed`,
   * `notifications/prompts/list_changed` and
   * `notifications/resources/list_changed` after each reload.
   */
  readonly reload?: McpReloadSource;
}

/** The live tools and skills of a watched kit (see `McpServerOptions.reload`). */
export interface McpReloadSource {
  /** The current tools. */
  readonly tools: readonly Tool[];
  /** The current skills. */
  readonly skills: readonly Skill[];
  /** Adds a listener of reloads; returns its removal. */
  subscribe?(listener: () => void): () => void;
}

/** Counts the tool calls running, to let them answer before closing. */
export class InFlight {
  #count = 0;
  #waiters: (() => void)[] = [];

  /** How many calls are running. */
  get count(): number {
    return this.#count;
  }

  async track<T>(promise: Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await promise;
    } finally {
      if (--this.#count === 0) {
        for (const wake of this.#waiters.splice(0)) wake();
      }
    }
  }

  /** Settles once no call runs and their answers have been handed to the transport. */
  async idle(): Promise<void> {
    do {
      while (this.#count > 0) {
        await new Promise<void>((resolve) => this.#waiters.push(resolve));
      }
      // The SDK sends an answer a few microtasks after the handler settles;
      // a call that started meanwhile is waited for too.
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (this.#count > 0);
  }
}

/** Keys of base64 data, sent as they are. */
const BLOB_KEYS: ReadonlySet<string> = new Set(["blob"]);
function cursorOf(
  params: Record<string, unknown> | undefined,
): string | undefined {
  const cursor = params?.cursor;
  if (cursor === undefined) return undefined;
  if (typeof cursor !== "string") {
    throw new McpRequestError(-32602, `The cursor must be a string`);
  }
  return cursor;
}

/** The skill catalog's module, loaded only by a server that serves skills. */
type SkillsModule = typeof import("./_skills.ts");

type McpInputSchema = ListToolsResult["tools"][number]["inputSchema"];

function errorResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** The pause between a call's last progress notification and its answer. */
const PROGRESS_GAP_MS = 20;

/** The most characters of output one progress notification carries. */
const PROGRESS_OUTPUT_CHARS = 2000;

/**
 * Turns a call's events into `notifications/progress` for the client's
 * progress token: each preparation step, and the command's output as it
 * comes (its last characters). The events are already redacted.
 */
function progressSender(
  progressToken: string | number,
  send: (notification: ServerNotification) => Promise<void>,
  pending: Promise<unknown>[],
): (event: SkillEvent) => void {
  let progress = 0;
  return (event) => {
    let message: string | undefined;
    if (event.type === "prepare_progress") {
      message = `Preparing skill "${event.skillName}": ${event.stage}${
        event.detail ? ` (${event.detail})` : ""
      }`;
    } else if (event.type === "command_output") {
      message = event.text.length > PROGRESS_OUTPUT_CHARS
        ? event.text.slice(-PROGRESS_OUTPUT_CHARS)
        : event.text;
    }
    if (message === undefined) return;
    progress++;
    pending.push(
      send({
        method: "notifications/progress",
        params: { progressToken, progress, message },
      }).catch(() => {}),
    );
  };
}

/**
 * The logging notification of an event, if it gets one: preparation steps
 * (info) and tool calls that failed (warning). Events are already redacted.
 */
function logMessage(
  event: SkillEvent,
): { level: "info" | "warning"; data: string } | undefined {
  if (event.type === "prepare_progress") {
    return {
      level: "info",
      data: `Preparing skill "${event.skillName}": ${event.stage}${
        event.detail ? ` (${event.detail})` : ""
      }`,
    };
  }
  if (event.type === "tool_call_end" && event.isError) {
    return {
      level: "warning",
      data: `Tool "${event.tool}" returned an error after ${
        Math.round(event.durationMs)
      } ms`,
    };
  }
  return undefined;
}

/** Whether the client takes form `elicitation/create` requests. */
function canElicit(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as
    | Record<string, unknown>
    | undefined;
  if (elicitation === undefined || elicitation === null) return false;
  // `{}` (before forms and URLs were told apart) means forms.
  return "form" in elicitation || !("url" in elicitation);
}

/**
 * Asks the client's user about one call with `elicitation/create` (sent as
 * part of the call, so it travels on the call's own stream): only `accept`
 * runs it.
 */
function elicitApproval(
  sendRequest: (
    request: ServerRequest,
    schema: typeof ElicitResultSchema,
    options?: { signal?: AbortSignal },
  ) => Promise<ElicitResult>,
  signal: AbortSignal,
): ToolApprovalRequester {
  return async (call) => {
    const result = await sendRequest(
      {
        method: "elicitation/create",
        params: {
          message: `Allow ${describeCall(call)}?`,
          requestedSchema: { type: "object", properties: {} },
        },
      },
      ElicitResultSchema,
      { signal },
    );
    if (result.action === "accept") return true;
    return {
      approved: false,
      reason: result.action === "decline"
        ? "the user declined it"
        : "the user cancelled the approval",
    };
  };
}

/**
 * Builds the low-level server: lists the tools with their JSON Schemas, calls
 * them, turns unknown tools and failures into results with `isError: true`,
 * aborts a tool's signal when the client cancels its call; with skills, also
 * answers prompts and resources.
 */
export function createMcpServer(
  tools: readonly Tool[],
  options: McpServerOptions,
  calls: InFlight,
  skillsModule?: SkillsModule,
): Server {
  const index = (list: readonly Tool[]): Map<string, Tool> => {
    const map = new Map<string, Tool>();
    for (const tool of list) {
      if (map.has(tool.name)) {
        throw new TypeError(
          `Cannot serve tool "${tool.name}": another tool has the same name`,
        );
      }
      map.set(tool.name, tool);
    }
    return map;
  };
  // The tools and the catalog now: those given, or the reload source's
  // current ones (rebuilt when its lists change).
  const reload = options.reload;
  let toolsSeen = reload ? reload.tools : tools;
  let byName = index(toolsSeen);
  const currentTools = (): {
    list: readonly Tool[];
    byName: Map<string, Tool>;
  } => {
    if (reload && reload.tools !== toolsSeen) {
      byName = index(reload.tools);
      toolsSeen = reload.tools;
    }
    return { list: toolsSeen, byName };
  };
  const makeCatalog = (skills: readonly Skill[]) => {
    if (skillsModule === undefined) {
      throw new Error("Cannot serve skills: the skill catalog is not loaded");
    }
    return new skillsModule.SkillCatalog(skills, {
      hasSkillTool: currentTools().byName.has("skill"),
      ...(options.maxResourceBytes !== undefined
        ? { maxResourceBytes: options.maxResourceBytes }
        : {}),
      ...(options.copyPolicy ? { copyPolicy: options.copyPolicy } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
  };
  let skillsSeen = reload ? reload.skills : options.skills;
  let catalogNow = skillsSeen === undefined
    ? undefined
    : makeCatalog(skillsSeen);
  const catalogOf = (): SkillCatalog => {
    if (reload && reload.skills !== skillsSeen) {
      skillsSeen = reload.skills;
      catalogNow = makeCatalog(skillsSeen);
    }
    return catalogNow!;
  };
  const catalog = catalogNow;
  const listChanged = reload ? { listChanged: true } : {};
  // Every answer leaves through here, like the tools' outputs.
  const redactor = (): Redactor => {
    try {
      return new Redactor(options.secrets?.() ?? []);
    } catch {
      return new Redactor([]);
    }
  };
  const clean = <A extends unknown[], R>(
    handler: (...args: A) => R | Promise<R>,
  ) =>
  async (...args: A): Promise<R> => {
    try {
      return redactDeep(await handler(...args), redactor(), BLOB_KEYS);
    } catch (error) {
      throw redactError(error, redactor());
    }
  };
  const server = new Server(
    {
      name: options.name ?? MCP_SERVER_NAME,
      version: options.version ?? MCP_SERVER_VERSION,
    },
    {
      // listChanged: the skill tool's listing follows the skills called
      // when not every skill fits its budget.
      capabilities: catalog
        ? {
          tools: { listChanged: true },
          prompts: { ...listChanged },
          resources: { ...listChanged },
          logging: {},
          // The skills extension (SEP-2640, Final), with its directory reads.
          ...{ extensions: { [SKILLS_EXTENSION]: { directoryRead: true } } },
        }
        : { tools: { listChanged: true }, logging: {} },
      ...(options.instructions === undefined
        ? {}
        : { instructions: options.instructions }),
    },
  );
  server.setRequestHandler(
    ListToolsRequestSchema,
    clean((): ListToolsResult => ({
      tools: currentTools().list.map((tool) => ({
        name: tool.name,
        description: tool.description,
        // Passed through unchanged (the SDK's type is mutable, ours readonly).
        inputSchema: tool.inputSchema as unknown as McpInputSchema,
      })),
    })),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    clean(async (request, extra): Promise<CallToolResult> => {
      const { name, arguments: input } = request.params;
      const { byName: tools } = currentTools();
      const tool = tools.get(name);
      if (tool === undefined) {
        const known = [...tools.keys()].map((n) => `"${n}"`).join(", ");
        return errorResult(
          `Unknown tool "${name}": available tools are ${known || "none"}`,
        );
      }
      try {
        // Notifications are written before the answer: a client drops the
        // progress of a request once it has the answer. (The MCP SDK client
        // 1.32 also drops a progress notification read in the same chunk as
        // the answer: it handles notifications a microtask later.)
        const pending: Promise<unknown>[] = [];
        const token = request.params._meta?.progressToken;
        const progress = token !== undefined
          ? progressSender(token, extra.sendNotification, pending)
          : undefined;
        const log = (event: SkillEvent) => {
          const message = logMessage(event);
          if (message) {
            pending.push(
              server.sendLoggingMessage(
                { ...message, logger: "skillrun" },
                extra.sessionId,
              ).catch(() => {}),
            );
          }
        };
        const ask = options.elicitation !== false && canElicit(server)
          ? elicitApproval(extra.sendRequest, extra.signal)
          : undefined;
        // The skill tool's listing follows the skills called.
        const listed = [...tools.values()];
        const descriptions = listed.map((t) => t.description);
        const result = await calls.track(
          tool.execute(input ?? {}, {
            signal: extra.signal,
            ...(ask ? { requestApproval: ask } : {}),
            onEvent: (event) => {
              progress?.(event);
              log(event);
            },
          }),
        );
        if (listed.some((t, i) => t.description !== descriptions[i])) {
          pending.push(server.sendToolListChanged().catch(() => {}));
        }
        await Promise.all(pending);
        // The MCP SDK client (1.32) drops a progress notification it reads
        // in the same chunk as the answer: leave the last one a moment to be
        // read alone (only calls that asked for progress wait).
        if (progress !== undefined && pending.length > 0) {
          await new Promise((resolve) => setTimeout(resolve, PROGRESS_GAP_MS));
        }
        return {
          content: [{
            type: "text",
            text: result.needsApproval
              ? `${result.text}: ${
                options.elicitation === false
                  ? "this server answers with plain JSON, which cannot carry an elicitation/create request"
                  : "this client cannot be asked (it declares no elicitation capability)"
              }`
              : result.text,
          }],
          isError: result.isError,
        };
      } catch (error) {
        // The Tool contract says execute never throws; keep the promise anyway.
        return errorResult(
          `Tool "${name}" failed: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
    }),
  );
  if (catalog) {
    server.setRequestHandler(
      ListPromptsRequestSchema,
      clean((request): ListPromptsResult =>
        catalogOf().listPrompts(request.params?.cursor)
      ),
    );
    server.setRequestHandler(
      GetPromptRequestSchema,
      clean((request): GetPromptResult =>
        catalogOf().getPrompt(request.params.name, request.params.arguments)
      ),
    );
    server.setRequestHandler(
      ListResourceTemplatesRequestSchema,
      clean((): ListResourceTemplatesResult =>
        catalogOf().listResourceTemplates()
      ),
    );
    server.setRequestHandler(
      ListResourcesRequestSchema,
      clean((request, extra): Promise<ListResourcesResult> =>
        catalogOf().listResources(request.params?.cursor, extra.signal)
      ),
    );
    server.setRequestHandler(
      ReadResourceRequestSchema,
      clean((request): Promise<ReadResourceResult> =>
        catalogOf().readResource(request.params.uri)
      ),
    );
    // The skills extension's methods, which the SDK has no schema for, are
    // answered by the fallback handler (every method no handler takes; the
    // others answer JSON-RPC's "Method not found", as without it). No zod
    // schema of our own: the SDK has checked that params are an object, and
    // the catalog checks each param (-32602 for a missing or wrong one).
    const extension: Record<
      string,
      (
        params: Record<string, unknown> | undefined,
        signal: AbortSignal,
      ) => unknown
    > = {
      "skills/list": (params, signal) =>
        catalogOf().listSkills(cursorOf(params), signal),
      "skills/get": (params) => catalogOf().getSkill(params?.uri),
      "resources/directory/read": (params) =>
        catalogOf().readDirectory(params?.uri, cursorOf(params)),
    };
    server.fallbackRequestHandler = clean(async (request, extra) => {
      const answer = Object.hasOwn(extension, request.method)
        ? extension[request.method]
        : undefined;
      if (answer === undefined) {
        throw new McpRequestError(-32601, "Method not found");
      }
      return await answer(request.params, extra.signal) as ServerResult;
    });
  }
  return server;
}

/**
 * An MCP transport: the SDK's `Transport` (stdio, in-memory, Streamable
 * HTTP...), of which these are the members skillrun relies on. Give it
 * unstarted: connecting starts it.
 */
export interface McpTransport {
  /** Starts the transport (called when connecting). */
  start(): Promise<void>;
  /** Sends one JSON-RPC message. */
  send(message: unknown, options?: unknown): Promise<void>;
  /** Closes the transport. */
  close(): Promise<void>;
}

/** A server connected to a transport. */
export interface McpConnection extends AsyncDisposable {
  /** Settles when the connection closes (by either side). */
  readonly closed: Promise<void>;
  /**
   * Settles when no tool call is running and every answer has been handed to
   * the transport (e.g. to close gracefully when the input ends).
   */
  idle(): Promise<void>;
  /** Closes the connection now; running calls are aborted. Idempotent. */
  close(): Promise<void>;
}

/** Connects a new server to a transport; also gives its call counter. */
export async function connect(
  tools: readonly Tool[],
  transport: McpTransport,
  options: McpServerOptions,
): Promise<{ connection: McpConnection; calls: InFlight }> {
  const calls = new InFlight();
  // The skill catalog (and the file copying and fence it reads with) loads
  // only for a server that may serve skills.
  const skillsModule =
    options.skills !== undefined || options.reload !== undefined
      ? await import("./_skills.ts")
      : undefined;
  const server = createMcpServer(tools, options, calls, skillsModule);
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  // Hot reload: the client hears that the lists changed.
  const unsubscribe = options.reload?.subscribe?.(() => {
    void server.sendToolListChanged().catch(() => {});
    if (options.reload!.skills !== undefined) {
      void server.sendPromptListChanged().catch(() => {});
      void server.sendResourceListChanged().catch(() => {});
    }
  });
  server.onclose = () => {
    unsubscribe?.();
    resolve();
  };
  // Our interface is a structural subset of the SDK's.
  await server.connect(transport as unknown as Transport);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= server.close().then(() => closed);
    return closing;
  };
  return {
    connection: {
      closed,
      idle: () => calls.idle(),
      close,
      [Symbol.asyncDispose]: close,
    },
    calls,
  };
}
