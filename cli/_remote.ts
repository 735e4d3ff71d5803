/**
 * `--runtime e2b|vercel|daytona|deno-sandbox|opensandbox|aio` (or `--sandbox <kind>`) of `skillrun run` and `skillrun mcp`: a remote
 * runtime whose options come from the environment.
 *
 * @module
 */
import type { SkillEventListener } from "../observe/events.ts";
import { UsageError } from "./_args.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { E2BSkillRuntime } from "../runtimes/e2b/mod.ts";
import { VercelSandboxSkillRuntime } from "../runtimes/vercel/mod.ts";
import { DaytonaSkillRuntime } from "../runtimes/daytona/mod.ts";
import { DenoSandboxSkillRuntime } from "../runtimes/deno_sandbox/mod.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/mod.ts";
import { AioSkillRuntime } from "../runtimes/aio/mod.ts";
import type { ConversationStore } from "../runtimes/stores/conversation_store.ts";

/** The remote kinds `--runtime` takes. */
export const REMOTE_RUNTIMES: readonly string[] = [
  "e2b",
  "vercel",
  "daytona",
  "deno-sandbox",
  "opensandbox",
  "aio",
];

/** The variables each remote kind reads (names only; `doctor` says which are set). */
export const REMOTE_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  e2b: ["E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_TEMPLATE"],
  vercel: [
    "VERCEL_TOKEN",
    "VERCEL_TEAM_ID",
    "VERCEL_PROJECT_ID",
    "VERCEL_API_URL",
  ],
  daytona: ["DAYTONA_API_KEY", "DAYTONA_API_URL"],
  "deno-sandbox": [
    "DENO_DEPLOY_TOKEN",
    "DENO_DEPLOY_ORG",
    "DENO_SANDBOX_ENDPOINT",
    "DENO_DEPLOY_ENDPOINT",
  ],
  opensandbox: [
    "OPEN_SANDBOX_URL",
    "OPEN_SANDBOX_API_KEY",
    "OPEN_SANDBOX_IMAGE",
  ],
  aio: ["AIO_SANDBOX_URL", "AIO_SANDBOX_TOKEN"],
};

/** The help lines of `--runtime`, shared by `run` and `mcp`. */
export const RUNTIME_HELP: string =
  `  --runtime <kind>     local (default), e2b or vercel: run in a hosted sandbox,
                       with options from the environment: E2B_API_KEY,
                       E2B_API_URL, E2B_SANDBOX_URL, E2B_TEMPLATE; VERCEL_TOKEN,
                       VERCEL_TEAM_ID, VERCEL_PROJECT_ID, VERCEL_API_URL;
                       daytona: DAYTONA_API_KEY, DAYTONA_API_URL;
                       deno-sandbox: DENO_DEPLOY_TOKEN, DENO_DEPLOY_ORG,
                       DENO_SANDBOX_ENDPOINT, DENO_DEPLOY_ENDPOINT (console);
                       opensandbox: OPEN_SANDBOX_URL, OPEN_SANDBOX_API_KEY,
                       OPEN_SANDBOX_IMAGE (default ubuntu:24.04); aio:
                       AIO_SANDBOX_URL, AIO_SANDBOX_TOKEN. With mcp --http,
                       each session's conversation is a sandbox (or an AIO
                       folder) of its own, under --root in the sandbox.
                       With --conversation, --root is the folder inside the
                       sandbox (default the kind's own)
  --sandbox <kind>     The same as --runtime <kind> for a remote kind
`;

/**
 * Checks `--runtime` or `--sandbox` (the same kinds but `local`), and that
 * `--isolate` is not given with a remote kind.
 *
 * @param flags The parsed flags.
 * @returns The remote kind, or `undefined` for the local runtime.
 * @throws {UsageError} An unknown kind, or `--isolate` with a remote one.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { checkRuntimeFlag } from "./_remote.ts";
 * assertEquals(checkRuntimeFlag({ runtime: "e2b" }), "e2b");
 * assertEquals(checkRuntimeFlag({ sandbox: "daytona" }), "daytona");
 * ```
 */
export function checkRuntimeFlag(
  flags: Readonly<Record<string, string | boolean>>,
): string | undefined {
  const sandbox = flags.sandbox;
  if (sandbox !== undefined) {
    // `--sandbox <kind>` (the name issue 28 gives it) names a remote kind;
    // `--runtime` takes the same kinds and `local`.
    if (typeof sandbox !== "string" || !REMOTE_RUNTIMES.includes(sandbox)) {
      throw new UsageError(
        `Unknown sandbox "${String(sandbox)}": expected ${
          REMOTE_RUNTIMES.join(", ")
        }`,
      );
    }
    if (flags.runtime !== undefined && flags.runtime !== sandbox) {
      throw new UsageError(
        `Options "--sandbox ${sandbox}" and "--runtime ${
          String(flags.runtime)
        }" disagree: give one`,
      );
    }
  }
  const kind = flags.runtime ?? sandbox;
  if (kind === undefined || kind === "local") return undefined;
  if (typeof kind !== "string" || !REMOTE_RUNTIMES.includes(kind)) {
    throw new UsageError(
      `Unknown runtime "${String(kind)}": expected local, ${
        REMOTE_RUNTIMES.join(", ")
      }`,
    );
  }
  if (flags.isolate === true) {
    throw new UsageError(
      `Option "--isolate" is for the local runtime; "${kind}" is a sandbox already`,
    );
  }
  return kind;
}

/**
 * The remote runtime `--runtime` names, or `undefined` for the local one.
 *
 * Permissions: `--allow-env` of the variables above, `--allow-net` of the
 * service.
 *
 * @param flags The parsed flags (`runtime`, `conversation`, `root`, `isolate`).
 * @param env Reads a variable; default `Deno.env.get`.
 * @param onEvent Receives the runtime's events (`--verbose`).
 * @param store With a conversation (`mcp --http --store`): the store the
 * replicas share, where the conversation's sandbox is recorded.
 * @returns The runtime (no request made yet), or `undefined`.
 * @throws {UsageError} An unknown kind, a missing credential, or `--isolate`
 * with a remote kind.
 *
 * @example The local runtime stays the default
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { remoteRuntime } from "./_remote.ts";
 * assertEquals(remoteRuntime({}), undefined);
 * ```
 */
export function remoteRuntime(
  flags: Readonly<Record<string, string | boolean>>,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
  onEvent?: SkillEventListener,
  store?: ConversationStore,
): SkillRuntime | undefined {
  const kind = checkRuntimeFlag(flags);
  if (kind === undefined) return undefined;
  const conversation = typeof flags.conversation === "string"
    ? {
      conversationId: flags.conversation,
      ...(typeof flags.root === "string"
        ? { conversationsRoot: flags.root }
        : {}),
      ...(store ? { store } : {}),
    }
    : {};
  const need = (name: string): string => {
    const value = env(name);
    if (!value) {
      throw new UsageError(`--runtime ${kind} needs the variable ${name}`);
    }
    return value;
  };
  const optional = (name: string, key: string) => {
    const value = env(name);
    return value ? { [key]: value } : {};
  };
  if (kind === "e2b") {
    const template = env("E2B_TEMPLATE");
    return new E2BSkillRuntime({
      apiKey: need("E2B_API_KEY"),
      ...optional("E2B_API_URL", "baseUrl"),
      ...optional("E2B_SANDBOX_URL", "sandboxUrl"),
      ...(template ? { sandbox: { template } } : {}),
      ...conversation,
      ...(onEvent ? { onEvent } : {}),
    });
  }
  if (kind === "daytona") {
    return new DaytonaSkillRuntime({
      apiKey: need("DAYTONA_API_KEY"),
      ...optional("DAYTONA_API_URL", "baseUrl"),
      ...conversation,
      ...(onEvent ? { onEvent } : {}),
    });
  }
  if (kind === "deno-sandbox") {
    return new DenoSandboxSkillRuntime({
      token: need("DENO_DEPLOY_TOKEN"),
      ...optional("DENO_DEPLOY_ORG", "org"),
      ...optional("DENO_SANDBOX_ENDPOINT", "baseUrl"),
      ...optional("DENO_DEPLOY_ENDPOINT", "consoleUrl"),
      ...conversation,
      ...(onEvent ? { onEvent } : {}),
    });
  }
  if (kind === "opensandbox") {
    return new OpenSandboxSkillRuntime({
      baseUrl: need("OPEN_SANDBOX_URL"),
      ...optional("OPEN_SANDBOX_API_KEY", "apiKey"),
      sandbox: { image: env("OPEN_SANDBOX_IMAGE") || "ubuntu:24.04" },
      ...conversation,
      ...(onEvent ? { onEvent } : {}),
    });
  }
  if (kind === "aio") {
    return new AioSkillRuntime({
      baseUrl: need("AIO_SANDBOX_URL"),
      ...optional("AIO_SANDBOX_TOKEN", "apiKey"),
      ...conversation,
      ...(onEvent ? { onEvent } : {}),
    });
  }
  return new VercelSandboxSkillRuntime({
    apiKey: need("VERCEL_TOKEN"),
    ...optional("VERCEL_TEAM_ID", "teamId"),
    ...optional("VERCEL_PROJECT_ID", "projectId"),
    ...optional("VERCEL_API_URL", "baseUrl"),
    ...conversation,
    ...(onEvent ? { onEvent } : {}),
  });
}
