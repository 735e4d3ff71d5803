// Under narrowed flags: an isolated conversation runtime in <root> runs
// `sleep <marker> & sleep <marker>` with a short timeout; prints the result.
import { LocalSkillRuntime } from "../mod.ts";

const [root, marker] = Deno.args as [string, string];
await using runtime = await LocalSkillRuntime.create({
  conversationsRoot: root,
  conversationId: "narrowed",
  isolate: true,
});
const result = await runtime.execute({
  command: `sleep ${marker} & sleep ${marker}`,
  timeoutMs: 500,
});
const written = await runtime.execute({ command: "echo ok > made.txt && pwd" });
console.log(JSON.stringify({
  timedOut: result.timedOut,
  exitCode: result.exitCode,
  pwd: written.stdout.trim(),
}));
