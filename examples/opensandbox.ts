/**
 * The OpenSandbox runtime in a conversation: the example skills run in a
 * sandbox, through the model-facing tools, exactly as a model calls them;
 * then a second runtime object (as a later request of the same conversation
 * would make) resumes the conversation: same sandbox, the skill neither
 * uploaded nor bootstrapped again.
 *
 * It talks to the server at `OPEN_SANDBOX_URL` with `OPEN_SANDBOX_API_KEY`
 * (`OPEN_SANDBOX_IMAGE` picks the image, default `ubuntu:24.04`; it needs
 * `bash` and `awk`). `SKILLRUN_CONVERSATIONS_ROOT` sets where conversation
 * workspaces go in the sandbox (default `/workspace/conversations`), as in the
 * edge example. Without a real server, start the OpenSandbox test server (a
 * faithful stand-in that runs real `bash` on this machine: its sandbox paths
 * are this machine's, so give it a root of your own):
 *
 * ```sh
 * deno run -A tests/servers/opensandbox.ts    # prints its URL; leave it running
 * OPEN_SANDBOX_URL=http://127.0.0.1:<port> OPEN_SANDBOX_API_KEY=any \
 *   SKILLRUN_CONVERSATIONS_ROOT=/tmp/skillrun-conversations \
 *   deno run --allow-net --allow-read=examples/skills,/tmp --allow-env --allow-write=/tmp examples/opensandbox.ts
 * ```
 *
 * @module
 */
import { fromFileUrl } from "@std/path";
import {
  buildSkillTools,
  dispatchToolCall,
  MemoryConversationStore,
  SkillRuntimeConfig,
} from "@skillrun/skillrun";
import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";

/** Options of {@linkcode runOpenSandboxExample}. */
export interface OpenSandboxExampleOptions {
  /** The server. */
  readonly baseUrl: string;
  /** Its API key, if it needs one. */
  readonly apiKey?: string;
  /**
   * Where conversation workspaces go in the sandbox. Default
   * `/workspace/conversations`; against the test server (whose sandbox paths
   * are this machine's) give a folder of your own.
   */
  readonly conversationsRoot?: string;
  /** The sandbox image. Default `ubuntu:24.04`. */
  readonly image?: string;
  /** Where the transcript goes. Default `console.log`. */
  readonly print?: (line: string) => void;
}

/** What {@linkcode runOpenSandboxExample} returns. */
export interface OpenSandboxExampleResult {
  /** The sandbox of the conversation. */
  readonly sandboxId: string;
  /** The sandbox the second runtime object attached to. */
  readonly resumedSandboxId: string;
  /** The report's first line, read back from the downloaded copy. */
  readonly reportTitle: string;
  /** HTTP requests the second object made to upload files. */
  readonly uploadsOnResume: number;
  /** Tool calls that failed. */
  readonly errors: number;
}

/**
 * Runs the example and destroys the conversation at the end.
 *
 * Permissions: `--allow-net` (the server), `--allow-read` of
 * `examples/skills`, `--allow-read` and `--allow-write` of the temporary
 * folder (where the report is downloaded).
 *
 * @param options The server, where conversations go, a printer.
 * @returns What happened.
 * @throws {Error} The server cannot be reached or the skills cannot be loaded.
 *
 * @example Running against the test server
 * ```ts ignore
 * import { runOpenSandboxExample } from "./opensandbox.ts";
 * const result = await runOpenSandboxExample({
 *   baseUrl: "http://127.0.0.1:8080",
 *   conversationsRoot: "/tmp/skillrun-conversations",
 *   print: () => {},
 * });
 * console.log(result.sandboxId === result.resumedSandboxId);
 * ```
 */
export async function runOpenSandboxExample(
  options: OpenSandboxExampleOptions,
): Promise<OpenSandboxExampleResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const { baseUrl, apiKey, conversationsRoot } = options;
  let temp: string | undefined;
  try {
    print(`OpenSandbox example against ${baseUrl}`);
    const store = new MemoryConversationStore();
    const runtimeOptions = {
      baseUrl,
      ...(apiKey ? { apiKey } : {}),
      conversationId: `example-${Date.now()}`,
      ...(conversationsRoot ? { conversationsRoot } : {}),
      sandbox: { image: options.image ?? "ubuntu:24.04" },
      store,
    };
    const skills = fromFileUrl(new URL("./skills/", import.meta.url));
    const configs = {
      "csv-report": new SkillRuntimeConfig({
        env: { REPORT_TITLE: "Q3 sales by product" },
        bootstrap: ["bash scripts/bootstrap.sh"],
      }),
    };
    let errors = 0;
    const call = async (
      tools: Awaited<ReturnType<typeof buildSkillTools>>["tools"],
      name: string,
      args: Record<string, unknown>,
    ): Promise<string> => {
      print(`→ ${name} ${JSON.stringify(args)}`);
      const result = await dispatchToolCall(tools, {
        name,
        arguments: JSON.stringify(args),
      });
      if (result.isError) errors++;
      for (const line of result.text.split("\n").slice(0, 8)) {
        print(`  │ ${line}`);
      }
      return result.text;
    };

    // First request of the conversation: the sandbox is created on first use.
    const first = new OpenSandboxSkillRuntime(runtimeOptions);
    let sandboxId: string;
    let reportTitle: string;
    {
      await using built = await buildSkillTools({
        skills,
        runtime: first,
        configs,
      });
      const skillText = await call(built.tools, "skill", {
        name: "csv-report",
      });
      const base = /^Base directory: (.+)$/m.exec(skillText)?.[1] ?? "";
      await call(built.tools, "bash", {
        command:
          `mkdir -p out && bash ${base}/scripts/report.sh ${base}/data/sales.csv out/report.md`,
      });
      await call(built.tools, "read", { file_path: "out/report.md" });
      temp = await Deno.makeTempDir({
        prefix: "skillrun-opensandbox-example-",
      });
      const local = `${temp}/report.md`;
      await first.fs.download("out/report.md", local);
      reportTitle = (await Deno.readTextFile(local)).split("\n", 1)[0] ?? "";
      print(`Downloaded the report; its first line: ${reportTitle}`);
      sandboxId = first.sandboxId!;
      print(`sandbox: ${sandboxId}`);
    }
    await first.close(); // a conversation's sandbox stays

    // A later request: a new runtime object resumes the conversation.
    let uploadsOnResume = 0;
    const counting: typeof fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url.includes("/files/upload")) uploadsOnResume++;
      return fetch(input, init);
    };
    const second = new OpenSandboxSkillRuntime({
      ...runtimeOptions,
      fetch: counting,
    });
    let resumedSandboxId: string;
    try {
      await using built = await buildSkillTools({
        skills,
        runtime: second,
        configs,
      });
      await call(built.tools, "skill", { name: "csv-report" });
      await call(built.tools, "ls", { path: "out" });
      resumedSandboxId = second.sandboxId!;
      print(
        `resumed in sandbox ${resumedSandboxId}; uploads on resume: ${uploadsOnResume}`,
      );
      // The conversation is over: remove its workspace (on a server whose
      // sandboxes share a host folder, such as the test server, deleting the
      // sandbox alone would leave it there)...
      const workspace = second.workspace!;
      await second.execute({
        command: `cd / && rm -rf -- '${workspace.replaceAll("'", `'\\''`)}'`,
      });
    } finally {
      // ...then its record and its sandbox.
      await second.destroy();
    }
    return {
      sandboxId,
      resumedSandboxId,
      reportTitle,
      uploadsOnResume,
      errors,
    };
  } finally {
    if (temp !== undefined) {
      await Deno.remove(temp, { recursive: true }).catch(() => {});
    }
  }
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined;
  }
}

if (import.meta.main) {
  const baseUrl = readEnv("OPEN_SANDBOX_URL");
  if (!baseUrl) {
    console.error(
      "Cannot run the OpenSandbox example: OPEN_SANDBOX_URL is not set. Give a server " +
        "(OPEN_SANDBOX_URL, OPEN_SANDBOX_API_KEY), or start the test server " +
        "(`deno run -A tests/servers/opensandbox.ts` prints its URL) and set " +
        "SKILLRUN_CONVERSATIONS_ROOT to a folder of yours: see this file's header.",
    );
    Deno.exit(2);
  }
  const apiKey = readEnv("OPEN_SANDBOX_API_KEY");
  const conversationsRoot = readEnv("SKILLRUN_CONVERSATIONS_ROOT");
  const image = readEnv("OPEN_SANDBOX_IMAGE");
  try {
    const result = await runOpenSandboxExample({
      baseUrl,
      ...(apiKey ? { apiKey } : {}),
      ...(conversationsRoot ? { conversationsRoot } : {}),
      ...(image ? { image } : {}),
    });
    if (result.errors > 0) Deno.exit(1);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(1);
  }
}
