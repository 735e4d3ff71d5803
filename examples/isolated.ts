// deno run --allow-read=examples/skills,.skillrun/isolated --allow-write=.skillrun/isolated --allow-run=bwrap,bash,rg --allow-env=PATH examples/isolated.ts
/**
 * The isolated mode: a conversation runtime whose every command runs in a
 * bubblewrap sandbox (Linux, `apt-get install bubblewrap`). The skill's
 * scripts (bash and Deno) work as usual in the workspace; the same shell
 * cannot read the repository, write outside the workspace, reach the network
 * or see the host's processes and environment. Run it from the repository
 * root with the line above; it ends with the runtime's fence report (what
 * `cli.ts doctor --isolate` prints).
 *
 * Without bwrap, or with user namespaces off, `LocalSkillRuntime.create`
 * fails with a message saying what to install or enable: nothing falls back
 * to an unisolated shell.
 *
 * @module
 */
import { fromFileUrl, join, resolve } from "@std/path";
import {
  buildSkillTools,
  dispatchToolCall,
  LocalSkillRuntime,
  SkillRuntimeConfig,
} from "@skillrun/skillrun";
import { fenceReport, formatFenceReport } from "@skillrun/skillrun/runtime";

const repo = resolve(
  fromFileUrl(new URL("../", import.meta.url)),
);
const skills = join(repo, "examples", "skills");
const conversationsRoot = join(repo, ".skillrun", "isolated");

await using runtime = await LocalSkillRuntime.create({
  conversationsRoot,
  conversationId: `example-${Date.now()}`,
  isolate: { allowNet: false, limits: { processes: 256 } },
});
await using built = await buildSkillTools({
  skills,
  runtime,
  configs: {
    "csv-report": new SkillRuntimeConfig({
      env: { REPORT_TITLE: "Sales in a sandbox" },
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

// The skills work: the bootstrap and the scripts run inside the sandbox.
const csv = await call("skill", { name: "csv-report" });
const csvBase = /^Base directory: (.+)$/m.exec(csv.text)?.[1];
await call("bash", {
  command: "bash scripts/report.sh data/sales.csv ../../report.md",
  working_directory: csvBase,
});
const json = await call("skill", { name: "json-to-table" });
const jsonBase = /^Base directory: (.+)$/m.exec(json.text)?.[1];
await call("bash", {
  command:
    `deno run --allow-read --allow-write ${jsonBase}/scripts/json_to_table.ts ${jsonBase}/data/tasks.json tasks.md --sort estimate && head -n 3 tasks.md`,
});

// Nothing else of the host: the repository, the network, its processes. The
// host's folders are read-only (the system) or absent (the repository; under
// /tmp, a write lands in the sandbox's private /tmp and vanishes with it).
await call("bash", {
  command:
    `cat ${repo}/README.md; echo x > ${repo}/escape.txt; echo x > /usr/escape.txt; exec 3<>/dev/tcp/1.1.1.1/80; ls /proc | grep -c '^[0-9]'; echo "HOME=$HOME"`,
});

console.log(
  `\n${
    formatFenceReport(await fenceReport(runtime, { skillRoots: [skills] }))
  }`,
);
