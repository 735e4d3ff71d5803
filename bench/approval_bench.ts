/**
 * Benchmarks of approvals (issue 30): a `bash` call of `true` through a tool
 * set whose policy allows everything, against the same call with no policy
 * (the policy step's cost on every call); and the `allowed-tools` matcher on
 * a 4 KiB command (its cost where a policy asks), against `shell-quote`'s
 * tokenizer alone on the same command.
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { buildSkillTools } from "../tools/builder.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import {
  commandCovered,
  loadCommandParser,
  parseAllowedTools,
} from "../tools/_allowed_tools.ts";
// @ts-types="npm:@types/shell-quote@1.7.5"
import { parse } from "shell-quote";

await loadCommandParser();
const CALLS = 20;
const runtime = new LocalSkillRuntime();
const plain = await buildSkillTools({ runtime, tools: ["bash"] });
const allowAll = await buildSkillTools({
  runtime,
  tools: ["bash"],
  approve: () => "allow",
});

async function bashTrue(set: typeof plain): Promise<void> {
  const bash = set.tool("bash")!;
  for (let i = 0; i < CALLS; i++) {
    const result = await bash.execute({ command: "true" });
    if (result.isError) throw new Error(result.text);
  }
}

const MATCHES = 1000;
const { rules } = parseAllowedTools(["Bash(git:*)", "Bash(npm run test)"]);
/** 4 KiB: `git add` of many paths, then `&& npm run test` (covered). */
function command4k(): string {
  const tail = " && npm run test";
  let text = "git add";
  for (let i = 0; text.length + 20 + tail.length <= 4096; i++) {
    text += ` src/file_${String(i).padStart(4, "0")}.ts`;
  }
  text += ` ${"x".repeat(4096 - tail.length - text.length - 1)}`;
  return text + tail;
}
const COMMAND = command4k();

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "approval-bash-true",
  title:
    `approval: ${CALLS} bash calls of true, allow-all policy vs no policy (per side, ms)`,
  module: import.meta.url,
  iterations: 10,
  rounds: 3,
  interleaved: true,
  maxRatio: 1.05,
  ours: { label: 'approve: () => "allow"', fn: () => bashTrue(allowAll) },
  baseline: { label: "no approve", fn: () => bashTrue(plain) },
}, {
  id: "approval-matcher-4k",
  title:
    `approval: allowed-tools matcher on a ${COMMAND.length}-byte command, ${MATCHES} times (ms per side = µs per match)`,
  module: import.meta.url,
  iterations: 10,
  rounds: 2,
  interleaved: true,
  ours: {
    label: "commandCovered (Bash(git:*), Bash(npm run test))",
    fn: () => {
      for (let i = 0; i < MATCHES; i++) {
        if (!commandCovered(rules, COMMAND)) throw new Error("not covered");
      }
    },
  },
  baseline: {
    label: "shell-quote parse alone",
    fn: () => {
      for (let i = 0; i < MATCHES; i++) parse(COMMAND);
    },
  },
}];

if (import.meta.main) await runChild(cases);
