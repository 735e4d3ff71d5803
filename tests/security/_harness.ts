/**
 * The security suite's harness: a conversation runtime with every tool, a
 * skill configured with secrets, an "outside" around the workspace (files,
 * folders, another conversation) snapshotted before and after each case, and
 * a check that the process still answers.
 *
 * Each case pairs an attack (which must be refused or harmless) with a
 * control (the same call made legitimately, which must succeed), so that a
 * case cannot pass by refusing everything.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  type BubblewrapLauncherOptions,
  LocalSkillRuntime,
} from "../../runtimes/local/mod.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";
import { buildSkillTools, type SkillTools } from "../../tools/builder.ts";
import type { PublishRequest, ToolLimits } from "../../tools/context.ts";
import type { Tool, ToolResult } from "../../tools/types.ts";

/** A configured secret (a token). */
export const SECRET_TOKEN = "tok_9f8e7d6c5b4a3210ZYXW";
/** A configured multi-line secret (a PEM key). */
export const SECRET_PEM = [
  "-----BEGIN PRIVATE KEY-----",
  "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7q",
  "k3Y9pL2mN8xQ4rT6vW1zA5cE7gI0jK2lM4nO6pQ8rS0tU2vW4x",
  "-----END PRIVATE KEY-----",
].join("\n");
/** A configured short value (a word, not a secret). */
export const WORD_VALUE = "prod";

/** One case's world. */
export interface World extends AsyncDisposable {
  /** The temporary base folder (real path). */
  readonly base: string;
  /** The conversations root. */
  readonly root: string;
  /** The workspace of the conversation under attack. */
  readonly workspace: string;
  /** A folder outside the workspace. */
  readonly outside: string;
  /** The runtime (conversation mode). */
  readonly runtime: LocalSkillRuntime;
  /** The tools. */
  readonly kit: SkillTools;
  /** What the publisher received (file name → bytes). */
  readonly published: Map<string, number>;
  /** Calls a tool. */
  call(name: string, input: Record<string, unknown>): Promise<ToolResult>;
  /** Runs a command in the workspace (through the bash tool). */
  sh(command: string): Promise<ToolResult>;
}

/** Options of {@linkcode makeWorld}. */
export interface WorldOptions {
  /** The search engine: ripgrep (`true`), the fallback (`false`), or auto. */
  readonly useRipgrep?: boolean | "auto";
  /** Tool limits to change. */
  readonly limits?: Partial<ToolLimits>;
  /** The runtime's cap on each output stream of a command. */
  readonly maxOutputBytes?: number;
  /** Bootstrap commands of the configured skill. */
  readonly bootstrap?: readonly string[];
  /**
   * Every command in a bubblewrap sandbox (the isolated mode), with these
   * launcher options (e.g. an egress `network` policy) when an object.
   */
  readonly isolate?: boolean | BubblewrapLauncherOptions;
}

/**
 * Makes a world: `<base>/outside` (a secret file, a folder, a script), the
 * conversations root `<base>/conversations` with another conversation in it,
 * and the conversation `victim` with its runtime and tools.
 *
 * @param options Engine and limits.
 * @returns The world (dispose it).
 */
export async function makeWorld(options: WorldOptions = {}): Promise<World> {
  const base = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-security-" }),
  );
  const outside = `${base}/outside`;
  const root = `${base}/conversations`;
  await Deno.mkdir(`${outside}/dir`, { recursive: true });
  await Deno.writeTextFile(`${outside}/secret.txt`, "outside secret\n");
  await Deno.writeTextFile(`${outside}/dir/inner.txt`, "inner\n");
  await Deno.writeTextFile(`${outside}/script.sh`, "echo outside\n");
  await Deno.chmod(`${outside}/script.sh`, 0o755);
  await Deno.mkdir(`${root}/other`, { recursive: true });
  await Deno.writeTextFile(`${root}/other/notes.txt`, "other conversation\n");
  const skills = await writeApiSkill(base);
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: root,
    conversationId: "victim",
    ...(options.useRipgrep === undefined
      ? {}
      : { useRipgrep: options.useRipgrep }),
    ...(options.maxOutputBytes === undefined
      ? {}
      : { maxOutputBytes: options.maxOutputBytes }),
    ...(options.isolate ? { isolate: options.isolate } : {}),
  });
  const published = new Map<string, number>();
  const kit = await buildSkillTools({
    skills,
    runtime,
    configs: apiConfigs(options.bootstrap),
    publisher: {
      async publish({ stream, fileName }: PublishRequest) {
        let size = 0;
        for await (const chunk of stream) size += chunk.length;
        published.set(fileName, size);
        return { url: `https://files.example/${fileName}` };
      },
    },
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const workspace = runtime.workspace!;
  await Deno.writeTextFile(`${workspace}/alive.txt`, "alive\n");
  const tool = (name: string): Tool => {
    const found = kit.tool(name);
    assert(found, `no tool ${name}`);
    return found;
  };
  return {
    base,
    root,
    workspace,
    outside,
    runtime,
    kit,
    published,
    call: (name, input) => tool(name).execute(input),
    sh: (command) => tool("bash").execute({ command }),
    async [Symbol.asyncDispose]() {
      await kit.close();
      await runtime.close();
      await Deno.remove(base, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Writes the skill `api` (its description names the secret token and the
 * word) into `<base>/skills`.
 *
 * @param base The world's base folder.
 * @returns The skills folder.
 */
export async function writeApiSkill(base: string): Promise<string> {
  const skills = `${base}/skills`;
  await Deno.mkdir(`${skills}/api`, { recursive: true });
  await Deno.writeTextFile(
    `${skills}/api/SKILL.md`,
    `---\nname: api\ndescription: Calls the API with ${SECRET_TOKEN} for ${WORD_VALUE} production data.\n---\nUse $API_TOKEN.\n`,
  );
  return skills;
}

/**
 * The configuration of the skill `api`: the secrets in its environment.
 *
 * @param bootstrap Its bootstrap commands.
 * @returns The configurations by skill name.
 */
export function apiConfigs(
  bootstrap: readonly string[] = [],
): Record<string, SkillRuntimeConfig> {
  return {
    api: new SkillRuntimeConfig({
      env: {
        API_TOKEN: SECRET_TOKEN,
        API_KEY_PEM: SECRET_PEM,
        MODE: WORD_VALUE,
      },
      bootstrap: [...bootstrap],
    }),
  };
}

/**
 * Everything under `base` except the victim's workspace: path → type, mode,
 * size, modification time, content (files) or target (links).
 *
 * @param world The world.
 * @returns The snapshot.
 */
export async function snapshotOutside(
  world: Pick<World, "base" | "workspace">,
): Promise<Map<string, string>> {
  const snapshot = new Map<string, string>();
  const visit = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (path === world.workspace) continue;
      const info = await Deno.lstat(path);
      // (Not the link count: removing a hard link inside changes it.)
      let detail = `${info.mode?.toString(8)} ${info.mtime?.getTime()}`;
      if (info.isSymlink) detail += ` -> ${await Deno.readLink(path)}`;
      else if (info.isFile) {
        detail += ` ${info.size} ${
          info.size < 1 << 20 ? await Deno.readTextFile(path) : "(large)"
        }`;
      }
      snapshot.set(path, detail);
      if (info.isDirectory) await visit(path);
    }
  };
  await visit(world.base);
  return snapshot;
}

/**
 * Checks the process still answers: a read and a listing of the workspace.
 *
 * @param world The world.
 */
export async function assertAlive(world: Pick<World, "call">): Promise<void> {
  const read = await world.call("read", { file_path: "alive.txt" });
  assert(!read.isError && read.text.includes("alive"), read.text);
  const ls = await world.call("ls", {});
  assert(!ls.isError && ls.text.includes("alive.txt"), ls.text);
}

/** One adversarial case. */
export interface SecurityCase {
  /** What is tried. */
  readonly name: string;
  /** Prepares the world (may plant links with the shell). */
  readonly setup?: (world: World) => Promise<void>;
  /** The attack: asserts it was refused or harmless. */
  readonly attack: (world: World) => Promise<void>;
  /** The paired control: the legitimate call, which must succeed. */
  readonly control: (world: World) => Promise<void>;
  /** The world's options. */
  readonly world?: WorldOptions;
  /** Why it cannot run here, if so. */
  readonly ignore?: boolean;
}

/**
 * Registers cases: each in a fresh world, the outside snapshotted before the
 * setup's planting is done and compared after the attack and the control;
 * the process must still answer.
 *
 * @param group The group's name, prefixed to each case.
 * @param cases The cases.
 */
export function securityCases(
  group: string,
  cases: readonly SecurityCase[],
): void {
  for (const c of cases) {
    Deno.test({
      name: `security: ${group}: ${c.name}`,
      ignore: c.ignore ?? Deno.build.os !== "linux",
      async fn() {
        await using world = await makeWorld(c.world);
        await c.setup?.(world);
        const before = await snapshotOutside(world);
        await c.attack(world);
        assertEquals(
          await snapshotOutside(world),
          before,
          "the attack changed something outside the workspace",
        );
        await c.control(world);
        assertEquals(
          await snapshotOutside(world),
          before,
          "the control changed something outside the workspace",
        );
        await assertAlive(world);
      },
    });
  }
}

/**
 * Asserts a result is an error whose text includes one of `expected`.
 *
 * @param result The tool's result.
 * @param expected Accepted fragments of the message.
 */
export function assertRefused(
  result: ToolResult,
  ...expected: string[]
): void {
  assert(result.isError, `expected a refusal, got: ${result.text}`);
  if (expected.length > 0) {
    assert(
      expected.some((e) => result.text.includes(e)),
      `unexpected refusal: ${result.text}`,
    );
  }
}

/**
 * Asserts a result succeeded.
 *
 * @param result The tool's result.
 * @param expected A fragment the text must include.
 */
export function assertOk(result: ToolResult, expected?: string): void {
  assert(!result.isError, `expected success, got: ${result.text}`);
  if (expected !== undefined) {
    assert(
      result.text.includes(expected),
      `missing "${expected}" in: ${result.text}`,
    );
  }
}

/**
 * Asserts no configured secret, whole or a piece of 3+ characters of its
 * distinctive parts, is in `text`.
 *
 * @param text Any output.
 */
export function assertNoSecret(text: string): void {
  const pieces = [
    SECRET_TOKEN,
    SECRET_TOKEN.slice(0, 8),
    SECRET_TOKEN.slice(-8),
    "MIIEvQ",
    "k3Y9pL",
    "BAQC7q",
    "tU2vW4x",
  ];
  for (const piece of pieces) {
    assert(
      !text.includes(piece),
      `"${piece}" leaked in: ${text.slice(0, 400)}`,
    );
  }
}

/** Options of {@linkcode mcpHttpCommand}. */
export interface McpHttpCommandOptions {
  /** The conversations root (read and write allowed there). */
  readonly root: string;
  /** Where to listen, e.g. `127.0.0.1:0`. */
  readonly http: string;
  /** The `--allow-net` value (`""`: any host). */
  readonly allowNet: string;
  /** Variables of the child's environment (besides `NO_COLOR=1`). */
  readonly env?: Record<string, string>;
  /** Whether the child gets only those (default: this process's too). */
  readonly clearEnv?: boolean;
  /** Further arguments of `skillrun mcp`. */
  readonly extra?: readonly string[];
  /** Kills the child. */
  readonly signal?: AbortSignal;
}

/**
 * `skillrun mcp --http` of this repository's CLI over `examples/skills`,
 * under narrowed permissions, with piped output.
 *
 * @param options Root, address, network permission, environment, arguments.
 * @returns The command (not started).
 */
export function mcpHttpCommand(options: McpHttpCommandOptions): Deno.Command {
  const repo = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
  const { root } = options;
  return new Deno.Command(Deno.execPath(), {
    ...(options.signal ? { signal: options.signal } : {}),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--allow-read=${repo},${root}`,
      `--allow-write=${root}`,
      "--allow-run",
      "--allow-env",
      options.allowNet === ""
        ? "--allow-net"
        : `--allow-net=${options.allowNet}`,
      `${repo}/cli.ts`,
      "mcp",
      "--skills",
      "examples/skills",
      "--root",
      root,
      "--http",
      options.http,
      ...(options.extra ?? []),
    ],
    cwd: repo,
    env: { NO_COLOR: "1", ...options.env },
    clearEnv: options.clearEnv ?? false,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}
