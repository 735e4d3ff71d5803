// deno run --allow-read=examples/skills,.skillrun/narrowed --allow-write=.skillrun/narrowed --allow-run=bash examples/narrowed_permissions.ts
/**
 * A conversation runtime under narrowed Deno permissions: the program may read
 * only the skills and the workspaces, write only the workspaces, and run only
 * `bash`. Run it from the repository root with the line above.
 *
 * Deno's flags fence the program (a lexical fence); the runtime's own path
 * fence also resolves symlinks, so a link inside the workspace cannot lead a
 * file tool outside it. The shell that `bash` starts is not fenced by Deno's
 * flags: use the isolated launcher for that.
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

// Absolute paths from this file's location: no `Deno.cwd()`, which would need
// read access to the current folder.
const repo = fromFileUrl(new URL("../", import.meta.url));
const skills = join(repo, "examples", "skills");
const conversationsRoot = join(repo, ".skillrun", "narrowed");

await using runtime = await LocalSkillRuntime.create({
  conversationsRoot,
  conversationId: `example-${Date.now()}`,
});
await using built = await buildSkillTools({
  skills,
  runtime,
  configs: {
    "csv-report": new SkillRuntimeConfig({
      env: { REPORT_TITLE: "Sales under narrowed permissions" },
      bootstrap: ["bash scripts/bootstrap.sh"],
    }),
  },
});
console.log(`workspace: ${runtime.workspace}`);

async function call(tool: string, args: Record<string, unknown>) {
  const result = await dispatchToolCall(built.tools, {
    name: tool,
    arguments: JSON.stringify(args),
  });
  console.log(
    `\n${tool} ${JSON.stringify(args)} -> ${result.isError ? "error" : "ok"}`,
  );
  console.log(result.text);
  return result;
}

const loaded = await call("skill", { name: "csv-report" });
const base = /^Base directory: (.+)$/m.exec(loaded.text)?.[1];
await call("bash", {
  command: "bash scripts/report.sh data/sales.csv ../../report.md",
  working_directory: base,
});
await call("read", { file_path: "report.md" });
await call("write", { file_path: "notes/todo.txt", content: "check Q4\n" });
await call("ls", { path: ".", depth: 2 });
await call("glob", { pattern: "**/*.md" });
// Outside the workspace: refused by the runtime's fence (and by Deno's flags).
await call("read", { file_path: join(repo, "README.md") });
await call("write", { file_path: "../escape.txt", content: "no" });
