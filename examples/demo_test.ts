import {
  assert,
  assertEquals,
  assertLess,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import denoJson from "../deno.json" with { type: "json" };
import { DEMO_STEPS } from "./demo.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));

Deno.test("the demo task runs with narrowed permissions only", () => {
  const task = denoJson.tasks.demo;
  assertMatch(task, /^deno run (--allow-[a-z]+=\S+ )+examples\/demo\.ts$/);
  assert(!/--allow-all|-A\b|--allow-net|--allow-ffi|--allow-sys/.test(task));
  assertStringIncludes(task, "--allow-write=.skillrun ");
});

Deno.test("the demo runs under its task's exact flags and its transcript shows every tool's result", async () => {
  const [command, ...args] = denoJson.tasks.demo.split(" ");
  assertEquals(command, "deno");
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: repo,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const ms = performance.now() - started;
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  const workspace = /^workspace: (.+)$/m.exec(stdout)?.[1];
  const downloaded = /^Downloaded the report .*:\n {2}(.+)$/m.exec(stdout)?.[1];
  try {
    assertEquals(output.code, 0, `${stdout}\n${stderr}`);
    assertLess(ms, 30_000, "the demo should take seconds");
    assert(workspace?.startsWith(hostPath.join(repo, ".skillrun", "demo-")));

    // Every step's call and result are in the transcript, in order.
    let at = 0;
    for (const [index, step] of DEMO_STEPS.entries()) {
      const header = `[${index + 1}/${DEMO_STEPS.length}]`;
      const found = stdout.indexOf(header, at);
      assert(found >= at, `missing ${header}`);
      at = found;
      const label = step.expectError ? "error" : "ok";
      assertMatch(
        stdout.slice(at),
        new RegExp(`^ {2}← ${step.tool}: ${label} \\(\\d+ ms\\)$`, "m"),
      );
    }
    for (
      const tool of [
        "skill",
        "bash",
        "write",
        "edit",
        "read",
        "grep",
        "glob",
        "ls",
      ]
    ) {
      assertStringIncludes(stdout, `  → ${tool} {`);
      assertStringIncludes(stdout, `  ← ${tool}: ok`);
    }
    // What each tool returned.
    assertStringIncludes(stdout, '│ Skill "csv-report" is ready');
    assertStringIncludes(stdout, '│ Skill "json-to-table" is ready');
    assertStringIncludes(stdout, "/data/q3.csv (158 bytes)"); // write
    assertStringIncludes(stdout, "3\tsouth,widget,9,180.00"); // edit
    assertStringIncludes(stdout, "│ csv-report: wrote out/q3-report.md"); // bash
    assertStringIncludes(stdout, "10\t| revenue | 6 | 1108.84 |"); // read
    assertMatch(stdout, /q3-report\.md:10:\| revenue/); // grep
    assertMatch(stdout, /│ \S+\/out\/q3-report\.md\n/); // glob
    assertMatch(stdout, /│ data\/q3\.csv\n/); // ls
    assertStringIncludes(stdout, "json-to-table: wrote out/tasks.md (3 rows)"); // deno
    assertStringIncludes(
      stdout,
      "| 1 | Fix the login \\| logout bug | bo | 5 |",
    );
    assertStringIncludes(stdout, "path is outside the workspace");
    // The configured title is a secret to the model, not to the file.
    assertStringIncludes(stdout, "1\t# [redacted]");
    assert(downloaded, stdout);
    const report = await Deno.readTextFile(downloaded);
    assert(report.startsWith("# Q3 sales by product\n"), report);
    assertStringIncludes(report, "| revenue | 6 | 1108.84 |");
    assertStringIncludes(
      stdout,
      "its first line, with the configured title: # Q3 sales by product",
    );
  } finally {
    if (workspace) await Deno.remove(workspace, { recursive: true });
    if (downloaded) await Deno.remove(downloaded).catch(() => {});
  }
});
