/**
 * The demo (`deno task demo`): a scripted agent session on the local runtime
 * with the example skills, each step a tool call exactly as a model makes it
 * (a tool name and JSON arguments, through the dispatcher), with a readable
 * transcript. It ends by downloading the report it produced.
 *
 * The session works in a conversation workspace, `.skillrun/demo-<time>/`
 * (git-ignored), left in place so you can look at it afterwards.
 *
 * ```sh
 * deno task demo
 * # which is:
 * deno run --allow-read=examples/skills,.skillrun --allow-write=.skillrun \
 *   --allow-run=bash,rg --allow-env=PATH examples/demo.ts
 * ```
 *
 * Permissions: read the skills and `.skillrun/`, write `.skillrun/`, run
 * `bash` (and `rg`, which `grep` and `glob` use when it is installed; without
 * it they use their TypeScript engine), read `PATH` so that commands find the
 * running `deno` (the json-to-table skill runs a Deno script).
 *
 * @module
 */
import { fromFileUrl, join } from "@std/path";
import {
  buildSkillTools,
  dispatchToolCall,
  LocalSkillRuntime,
  SkillRuntimeConfig,
} from "@skillrun/skillrun";

/** One step of the scripted session. */
export interface DemoStep {
  /** What the "model" is doing, for the transcript. */
  readonly say: string;
  /** The tool called. */
  readonly tool: string;
  /** The arguments, as a function of what earlier steps returned. */
  readonly args: (seen: DemoMemory) => Record<string, unknown>;
  /** Whether this step is expected to fail (shown as such). */
  readonly expectError?: boolean;
}

/** What the scripted model remembers from earlier results. */
export interface DemoMemory {
  /** Base directories of the loaded skills, by name. */
  readonly bases: Record<string, string>;
}

/** Options of {@linkcode runDemo}. */
export interface DemoOptions {
  /** The repository root (where `examples/skills` is). Default: this file's parent's parent. */
  readonly root?: string;
  /** Where conversation workspaces go. Default `<root>/.skillrun`. */
  readonly conversationsRoot?: string;
  /** The conversation id. Default `demo-<ISO time>`. */
  readonly conversationId?: string;
  /** Where the transcript goes. Default `console.log`. */
  readonly print?: (line: string) => void;
  /** The most lines of a result shown. Default 14. */
  readonly maxLines?: number;
}

/** What {@linkcode runDemo} returns. */
export interface DemoResult {
  /** The conversation workspace. */
  readonly workspace: string;
  /** The local file the report was downloaded to. */
  readonly downloaded: string;
  /** How many tool calls failed unexpectedly. */
  readonly unexpectedErrors: number;
}

const Q3_CSV = `region,product,units,revenue
north,widget,14,280.00
south,widget,9,18.00
east,gadget,5,149.95
west,gadget,11,329.89
north,gizmo,20,130.00
south,gizmo,6,39.00
`;

/** The scripted session: what a model would do for the user's request. */
export const DEMO_STEPS: readonly DemoStep[] = [
  {
    say:
      "The user asks for a report on this quarter's sales. The model loads the csv-report skill " +
      "(first use: copied into the workspace and bootstrapped, with its configured REPORT_TITLE).",
    tool: "skill",
    args: () => ({ name: "csv-report" }),
  },
  {
    say: "It writes the user's data into the workspace.",
    tool: "write",
    args: () => ({ file_path: "data/q3.csv", content: Q3_CSV }),
  },
  {
    say:
      "The user spots a typo: south widget revenue is 180.00, not 18.00. The model fixes it.",
    tool: "edit",
    args: () => ({
      file_path: "data/q3.csv",
      old_string: "south,widget,9,18.00",
      new_string: "south,widget,9,180.00",
    }),
  },
  {
    say: "It runs the skill's script, as the skill's instructions say.",
    tool: "bash",
    args: (seen) => ({
      command: `bash ${
        seen.bases["csv-report"]
      }/scripts/report.sh data/q3.csv out/q3-report.md`,
    }),
  },
  {
    say:
      "It reads the report back. (Its title comes from REPORT_TITLE, set by the application: " +
      "configured values are secrets, so tool outputs show [redacted]; the file keeps the real title.)",
    tool: "read",
    args: () => ({ file_path: "out/q3-report.md" }),
  },
  {
    say: "It looks for the revenue line in every report.",
    tool: "grep",
    args: () => ({
      pattern: "^\\| revenue",
      path: "out",
      output_mode: "content",
    }),
  },
  {
    say: "It lists the Markdown files in the workspace, newest first.",
    tool: "glob",
    args: () => ({ pattern: "**/*.md" }),
  },
  {
    say: "It looks at the workspace.",
    tool: "ls",
    args: () => ({ path: ".", depth: 2 }),
  },
  {
    say:
      "The user also wants the team's tasks as a table: the model loads json-to-table.",
    tool: "skill",
    args: () => ({ name: "json-to-table" }),
  },
  {
    say: "It runs the skill's TypeScript script with Deno.",
    tool: "bash",
    args: (seen) => {
      const base = seen.bases["json-to-table"];
      return {
        command:
          `deno run --allow-read --allow-write ${base}/scripts/json_to_table.ts ${base}/data/tasks.json out/tasks.md --columns id,title,owner,estimate --sort estimate`,
      };
    },
  },
  {
    say: "It reads the table.",
    tool: "read",
    args: () => ({ file_path: "out/tasks.md" }),
  },
  {
    say: "A path outside the workspace is refused, and the model is told why.",
    tool: "read",
    args: () => ({ file_path: "../../README.md" }),
    expectError: true,
  },
];

/**
 * Runs the scripted session and downloads the report.
 *
 * Permissions: see the module's documentation.
 *
 * @param options Where to work and where to print.
 * @returns The workspace, the downloaded file and the count of unexpected errors.
 * @throws {Error} The runtime or the skills could not be set up.
 *
 * @example Running the demo in a temporary folder
 * ```ts ignore
 * import { runDemo } from "./demo.ts";
 * const temp = await Deno.makeTempDir();
 * const result = await runDemo({ conversationsRoot: temp, print: () => {} });
 * console.log(result.downloaded);
 * ```
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const maxLines = options.maxLines ?? 14;
  const root = options.root ??
    fromFileUrl(new URL("../", import.meta.url));
  const conversationsRoot = options.conversationsRoot ??
    join(root, ".skillrun");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const conversationId = options.conversationId ?? `demo-${stamp}`;

  await using runtime = await LocalSkillRuntime.create({
    conversationsRoot,
    conversationId,
  });
  await using built = await buildSkillTools({
    skills: join(root, "examples", "skills"),
    runtime,
    configs: {
      // Application-side: never in SKILL.md, never shown to the model.
      "csv-report": new SkillRuntimeConfig({
        env: { REPORT_TITLE: "Q3 sales by product" },
        bootstrap: ["bash scripts/bootstrap.sh"],
      }),
    },
  });
  const workspace = runtime.workspace!;
  print(
    `skillrun demo: a scripted agent session on the "${runtime.name}" runtime`,
  );
  print(`workspace: ${workspace}`);
  print(`skills: ${built.skills.map((s) => s.name).join(", ")}`);
  print(`tools: ${built.tools.map((t) => t.name).join(", ")}`);

  const memory: { bases: Record<string, string> } = { bases: {} };
  let unexpectedErrors = 0;
  for (const [index, step] of DEMO_STEPS.entries()) {
    const args = JSON.stringify(step.args(memory));
    print("");
    print(`[${index + 1}/${DEMO_STEPS.length}] ${step.say}`);
    print(`  → ${step.tool} ${shorten(args, 200)}`);
    const started = performance.now();
    const result = await dispatchToolCall(built.tools, {
      name: step.tool,
      arguments: args,
    });
    const ms = Math.round(performance.now() - started);
    const label = result.isError ? "error" : "ok";
    print(`  ← ${step.tool}: ${label} (${ms} ms)`);
    for (const line of excerpt(result.text, maxLines)) print(`    │ ${line}`);
    if (result.isError !== (step.expectError ?? false)) unexpectedErrors++;
    if (step.tool === "skill" && !result.isError) {
      const base = /^Base directory: (.+)$/m.exec(result.text)?.[1];
      const name = (JSON.parse(args) as { name: string }).name;
      if (base) memory.bases[name] = base;
    }
  }

  const downloaded = join(
    conversationsRoot,
    "downloads",
    `${conversationId}-q3-report.md`,
  );
  const { bytes } = await runtime.fs.download("out/q3-report.md", downloaded);
  print("");
  print(`Downloaded the report (${bytes} bytes) with runtime.fs.download():`);
  print(`  ${downloaded}`);
  const firstLine = (await Deno.readTextFile(downloaded)).split("\n", 1)[0];
  print(`  its first line, with the configured title: ${firstLine}`);
  print(`The whole workspace stays for you to look at: ${workspace}`);
  if (unexpectedErrors > 0) {
    print(`${unexpectedErrors} call(s) failed unexpectedly`);
  }
  return { workspace, downloaded, unexpectedErrors };
}

function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : text;
}

function excerpt(text: string, maxLines: number): string[] {
  const lines = text.replace(/\n$/, "").split("\n");
  const shown = lines.slice(0, maxLines).map((line) => shorten(line, 110));
  if (lines.length > maxLines) {
    shown.push(`… (${lines.length - maxLines} more lines)`);
  }
  return shown;
}

if (import.meta.main) {
  const result = await runDemo();
  if (result.unexpectedErrors > 0) Deno.exit(1);
}
