/**
 * The OpenSandbox runtime in a conversation: the example skills run in a
 * sandbox, through the model-facing tools, exactly as a model calls them;
 * then a second runtime object (as a later request of the same conversation
 * would make) resumes the conversation: same sandbox, the skill neither
 * uploaded nor bootstrapped again.
 *
 * By default it starts the OpenSandbox test server in this process (a
 * faithful stand-in that runs real `bash` on this machine), so it runs
 * anywhere. With `OPEN_SANDBOX_URL` and `OPEN_SANDBOX_API_KEY` set it talks
 * to a real OpenSandbox server instead (`OPEN_SANDBOX_IMAGE` picks the image,
 * default `ubuntu:24.04`; it needs `bash` and `awk`).
 *
 * ```sh
 * deno run -A examples/opensandbox.ts
 * OPEN_SANDBOX_URL=http://localhost:8080 OPEN_SANDBOX_API_KEY=... \
 *   deno run --allow-net --allow-read=examples/skills --allow-env --allow-write=/tmp examples/opensandbox.ts
 * ```
 *
 * @module
 */
import { fromFileUrl } from "@std/path";
import {
  buildSkillTools,
  dispatchToolCall,
  SkillRuntimeConfig,
} from "@skillrun/skillrun";
import {
  MemoryConversationStore,
  OpenSandboxSkillRuntime,
} from "@skillrun/skillrun/opensandbox";

/** Options of {@linkcode runOpenSandboxExample}. */
export interface OpenSandboxExampleOptions {
  /** A real server; default: `OPEN_SANDBOX_URL`, else the test server. */
  readonly baseUrl?: string;
  /** Its API key; default: `OPEN_SANDBOX_API_KEY`. */
  readonly apiKey?: string;
  /** Where the transcript goes. Default `console.log`. */
  readonly print?: (line: string) => void;
}

/** What {@linkcode runOpenSandboxExample} returns. */
export interface OpenSandboxExampleResult {
  /** Whether it ran against the in-process test server. */
  readonly testServer: boolean;
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
 * `examples/skills`, `--allow-write` of a temporary folder; with the test
 * server also `--allow-run=bash` and read/write of its temporary folder.
 *
 * @param options A server and a printer.
 * @returns What happened.
 * @throws {Error} The server cannot be reached or the skills cannot be loaded.
 *
 * @example Running against the test server
 * ```ts ignore
 * import { runOpenSandboxExample } from "./opensandbox.ts";
 * const result = await runOpenSandboxExample({ print: () => {} });
 * console.log(result.sandboxId === result.resumedSandboxId);
 * ```
 */
export async function runOpenSandboxExample(
  options: OpenSandboxExampleOptions = {},
): Promise<OpenSandboxExampleResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const envUrl = options.baseUrl ?? readEnv("OPEN_SANDBOX_URL");
  const apiKey = options.apiKey ?? readEnv("OPEN_SANDBOX_API_KEY");
  const temp = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-opensandbox-example-" }),
  );
  let server: { url: string; close(): Promise<void> } | undefined;
  try {
    let baseUrl: string;
    let conversationsRoot: string | undefined;
    let image: string | undefined;
    if (envUrl) {
      baseUrl = envUrl;
      image = readEnv("OPEN_SANDBOX_IMAGE") ?? "ubuntu:24.04";
    } else {
      // Test-only code (not published), loaded only when no real server is given.
      const testServer = new URL(
        "../tests/servers/opensandbox.ts",
        import.meta.url,
      ).href;
      const { startOpenSandboxServer } = await import(testServer) as {
        startOpenSandboxServer: (
          options: { apiKey?: string },
        ) => Promise<{ url: string; close(): Promise<void> }>;
      };
      server = await startOpenSandboxServer(apiKey ? { apiKey } : {});
      baseUrl = server.url;
      // The test server runs commands on this machine: its "sandbox" paths
      // are this machine's, so the conversations live in a temporary folder.
      conversationsRoot = `${temp}/conversations`;
    }
    print(
      `OpenSandbox example against ${
        envUrl ? baseUrl : `the in-process test server (${baseUrl})`
      }`,
    );
    const store = new MemoryConversationStore();
    const runtimeOptions = {
      baseUrl,
      ...(apiKey ? { apiKey } : {}),
      conversationId: `example-${Date.now()}`,
      ...(conversationsRoot ? { conversationsRoot } : {}),
      ...(image ? { sandbox: { image } } : {}),
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
    } finally {
      // The conversation is over: remove its record, then its sandbox.
      await second.destroy();
    }
    return {
      testServer: server !== undefined,
      sandboxId,
      resumedSandboxId,
      reportTitle,
      uploadsOnResume,
      errors,
    };
  } finally {
    await server?.close();
    await Deno.remove(temp, { recursive: true }).catch(() => {});
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
  const result = await runOpenSandboxExample();
  if (result.errors > 0) Deno.exit(1);
}
