/**
 * What the two agent-loop examples share: reading optional environment
 * variables, the text of an API error, and the tools their command lines use.
 *
 * @module
 */
import { fromFileUrl, join } from "@std/path";
import {
  buildSkillTools,
  LocalSkillRuntime,
  SkillRuntimeConfig,
  type Tool,
  type ToolApprovalPolicy,
} from "@skillrun/skillrun";

/** The prompt of the examples' command lines when none is given. */
export const DEFAULT_PROMPT =
  "Summarise the sample sales data (data/sales.csv in the csv-report skill) and tell me the total revenue.";

/** An environment variable, `undefined` when unset or not allowed. */
export function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** The message of a provider's JSON error body, or the start of the text. */
export function apiMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === "string") return parsed.error.message;
  } catch {
    // Not JSON: show the start of the text.
  }
  return body.slice(0, 500) || "(no body)";
}

/**
 * The tools of the examples' command lines: the example skills in a new
 * conversation workspace under `.skillrun/<prefix>-<time>`, with csv-report
 * configured. Closing the result closes the runtime.
 */
export async function exampleTools(
  prefix: string,
  options: { readonly approve?: ToolApprovalPolicy } = {},
): Promise<{ tools: readonly Tool[]; workspace: string } & AsyncDisposable> {
  const repo = fromFileUrl(new URL("../", import.meta.url));
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: join(repo, ".skillrun"),
    conversationId: `${prefix}-${Date.now()}`,
  });
  const kit = await buildSkillTools({
    skills: join(repo, "examples", "skills"),
    runtime,
    configs: {
      "csv-report": new SkillRuntimeConfig({
        env: { REPORT_TITLE: "Sales report" },
        bootstrap: ["bash scripts/bootstrap.sh"],
      }),
    },
    ...(options.approve ? { approve: options.approve } : {}),
  });
  return {
    tools: kit.tools,
    workspace: runtime.cwd,
    async [Symbol.asyncDispose]() {
      await kit.close();
      await runtime.close();
    },
  };
}

/**
 * Runs an example's command line: a failure (no API key, no network, an API
 * error) ends it with one line on stderr and exit code 1, not a stack trace.
 */
export async function runMain(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(`error: ${oneLine(error)}`);
    Deno.exit(1);
  }
}

function oneLine(error: unknown): string {
  // fetch throws "fetch failed" with the network error as its cause.
  const cause = error instanceof Error && error.cause instanceof Error
    ? `: ${error.cause.message}`
    : "";
  const message = error instanceof Error
    ? `${error.message}${cause}`
    : String(error);
  // fetch's network failures: "error sending request for url (...): ...".
  const network = /error sending request for url \((.*?)\)(?:: (.*))?/s
    .exec(message);
  if (network) {
    const reason = network[2]?.split("\n")[0]?.trim();
    return `Cannot reach ${network[1]}${reason ? `: ${reason}` : ""}`;
  }
  return message.split("\n")[0] ?? message;
}
