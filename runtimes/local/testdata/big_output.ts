/**
 * Run by `launcher_test.ts` in its own process, so that its memory growth is
 * its own: runs a command writing 200 MB to stdout and 3 MB to stderr through
 * the plain launcher with a 64 KiB cap and prints `RESULT <json>`.
 *
 * @module
 */
import { DenoCommandLauncher } from "../launcher.ts";
import { checkTimeoutMs } from "../../command_core.ts";

if (import.meta.main) {
  const before = Deno.memoryUsage().rss;
  const result = await new DenoCommandLauncher().launch({
    command:
      "printf BEGIN; head -c 200000000 /dev/zero | tr '\\0' x; printf END; " +
      "printf ERRSTART >&2; head -c 3000000 /dev/zero | tr '\\0' y >&2; printf ERREND >&2",
    cwd: Deno.cwd(),
    env: {},
    timeoutMs: checkTimeoutMs(120_000),
    maxOutputBytes: 64 * 1024,
  });
  const growth = Deno.memoryUsage().rss - before;
  console.log(`RESULT ${JSON.stringify({ growth, result })}`);
}
