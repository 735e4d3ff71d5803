/**
 * Run by `tests/permissions_test.ts` under exactly the documented narrowed
 * flags:
 *
 *     deno run --allow-read=<skills>,<conversations> \
 *       --allow-write=<conversations> --allow-run=bash \
 *       tests/testdata/narrowed_runtime.ts <skills> <conversations> <outside>
 *
 * It drives a conversation runtime through everything it offers and prints
 * one `RESULT <json>` line; any unexpected outcome throws (non-zero exit).
 *
 * @module
 */
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";
import {
  RuntimePermissionError,
  WorkspaceEscapeError,
} from "../../runtimes/errors.ts";
import type { Skill } from "../../skill/types.ts";

async function main(args: readonly string[]): Promise<void> {
  const [skills, conversations, outside] = args;
  if (!skills || !conversations || !outside) {
    throw new TypeError(
      "Usage: narrowed_runtime.ts <skills> <conversations> <outside>",
    );
  }

  function check(condition: unknown, message: string): asserts condition {
    if (!condition) throw new Error(`Check failed: ${message}`);
  }

  async function errorOf(fn: () => Promise<unknown>): Promise<unknown> {
    try {
      await fn();
    } catch (error) {
      return error;
    }
    throw new Error("Expected an error");
  }

  const basePath = `${skills}/narrow`;
  const skill: Skill = {
    name: "narrow",
    description: "A skill run under narrowed permissions",
    basePath,
    location: `${basePath}/SKILL.md`,
    instructions: "",
    frontMatter: {},
    warnings: [],
  };

  const report: Record<string, unknown> = {};
  {
    await using runtime = await LocalSkillRuntime.create({
      conversationsRoot: conversations,
      conversationId: "narrow-1",
    });
    const workspace = runtime.cwd;
    const [prepared] = await runtime.prepare({
      skills: [{
        skill,
        config: new SkillRuntimeConfig({
          env: { NARROW_TOKEN: "t0ken-value" },
          bootstrap: [
            './setup.sh > built.txt; echo "$NARROW_TOKEN" >> built.txt',
          ],
        }),
      }],
    });
    check(prepared, "prepared");
    check(prepared.basePath.startsWith(`${workspace}/skills/`), "copied");
    const built = await runtime.fs.readText(`${prepared.basePath}/built.txt`, {
      maxBytes: 1000,
    });
    check(built === "setup ran\nt0ken-value\n", `bootstrap output ${built}`);

    const pwd = await runtime.execute({ command: "pwd; echo $NARROW_TOKEN" });
    check(pwd.exitCode === 0, `pwd exit ${pwd.exitCode}: ${pwd.stderr}`);
    check(pwd.stdout === `${workspace}\nt0ken-value\n`, `pwd ${pwd.stdout}`);

    // The file system, inside the workspace.
    await runtime.fs.writeText("out/notes.txt", "hello");
    check(
      (await runtime.fs.readText("out/notes.txt", { maxBytes: 100 })) ===
        "hello",
      "read back",
    );
    const info = await runtime.fs.stat("out/notes.txt");
    check(info?.type === "file" && info.size === 5, "stat");
    const listing = await runtime.fs.list(".", { depth: 3 });
    check(listing.entries.some((e) => e.name === "notes.txt"), "list");
    const stream = await runtime.fs.readStream("out/notes.txt");
    const streamed = await new Response(stream).text();
    check(streamed === "hello", "stream");
    const downloaded = await runtime.fs.download(
      "out/notes.txt",
      `${workspace}/out/copy.txt`,
    );
    check(downloaded.bytes === 5, "download");
    const cat = await runtime.execute({ command: "cat out/copy.txt" });
    check(cat.stdout === "hello", "command sees fs writes");

    // Search (rg may not run under --allow-run=bash: the fallback answers).
    const grep = await runtime.search.grep({
      pattern: "hello",
      outputMode: "files_with_matches",
    });
    check(
      grep.mode === "files_with_matches" &&
        grep.files.some((f) => f.endsWith("notes.txt")),
      `search ${JSON.stringify(grep)}`,
    );

    // Outside the workspace through the fs: refused by the fence.
    const escape = await errorOf(() =>
      runtime.fs.readText(`${outside}/secret.txt`, { maxBytes: 100 })
    );
    check(escape instanceof WorkspaceEscapeError, `escape ${escape}`);
    report.escapeMessage = escape.message;
    const escapeCwd = await errorOf(() =>
      runtime.execute({ command: "pwd", cwd: outside })
    );
    check(escapeCwd instanceof WorkspaceEscapeError, `cwd escape ${escapeCwd}`);

    // The timeout kills the whole group under --allow-run=bash.
    const start = performance.now();
    const timed = await runtime.execute({
      command: "echo $$ > group.pid; sleep 30 & sleep 30 & wait",
      timeoutMs: 500,
    });
    report.timeoutElapsedMs = performance.now() - start;
    check(timed.timedOut && timed.exitCode === -1, "timed out");
    report.pgid = Number(
      (await runtime.fs.readText("group.pid", { maxBytes: 100 })).trim(),
    );
    report.workspace = workspace;
  }

  // A plain runtime reaches only what the flags allow: a clear permission error.
  {
    await using plain = new LocalSkillRuntime({ cwd: conversations });
    const denied = await errorOf(() =>
      plain.fs.readText(`${outside}/secret.txt`, { maxBytes: 100 })
    );
    check(denied instanceof RuntimePermissionError, `denied ${denied}`);
    check(
      denied.permission === "read" && denied.source === "deno",
      "read/deno",
    );
    report.permissionMessage = denied.message;
    const deniedWrite = await errorOf(() =>
      plain.fs.writeText(`${outside}/new.txt`, "x")
    );
    check(
      deniedWrite instanceof RuntimePermissionError,
      `denied ${deniedWrite}`,
    );
    report.writePermissionMessage = deniedWrite.message;
  }

  console.log(`RESULT ${JSON.stringify(report)}`);
}

if (import.meta.main) await main(Deno.args);
