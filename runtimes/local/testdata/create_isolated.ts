// Tries to make an isolated runtime; prints the problem and the message, exits 1 on failure.
import { IsolationUnavailableError, LocalSkillRuntime } from "../mod.ts";

try {
  await using _runtime = await LocalSkillRuntime.create({ isolate: true });
  console.log("created");
} catch (error) {
  if (!(error instanceof IsolationUnavailableError)) throw error;
  console.log(`problem=${error.problem}`);
  console.log(error.message);
  Deno.exit(1);
}
