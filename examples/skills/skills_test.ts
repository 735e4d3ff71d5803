import {
  assertEquals,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { loadSkills } from "../../skill/load.ts";
import { validateSkill } from "../../skill/validate.ts";

const HERE = hostPath.fromFileUrl(new URL(".", import.meta.url));

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const source = hostPath.join(from, entry.name);
    const target = hostPath.join(to, entry.name);
    if (entry.isDirectory) await copyTree(source, target);
    else if (entry.isFile) await Deno.copyFile(source, target);
  }
}

/** A copy of one example skill in a temp folder, removed after `fn`. */
async function withCopy(
  name: string,
  fn: (skillDir: string, work: string) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir();
  try {
    const skillDir = hostPath.join(root, name);
    await copyTree(hostPath.join(HERE, name), skillDir);
    const work = hostPath.join(root, "work");
    await Deno.mkdir(work);
    await fn(skillDir, work);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...(options.env ?? {}) };
  const output = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("the example skills load without warnings and pass strict validation", async () => {
  const { skills, warnings } = await loadSkills(HERE);
  assertEquals(warnings, []);
  assertEquals(skills.map((s) => s.name), ["csv-report", "json-to-table"]);
  for (const skill of skills) {
    assertEquals(skill.warnings, [], skill.name);
    assertEquals(await validateSkill(skill.basePath), [], skill.name);
  }
});

Deno.test("csv-report refuses to run before its bootstrap, then reports with REPORT_TITLE", async () => {
  await withCopy("csv-report", async (skillDir, work) => {
    const script = hostPath.join(skillDir, "scripts", "report.sh");
    const input = hostPath.join(skillDir, "data", "sales.csv");
    const before = await run("bash", [script, input, "out/report.md"], {
      cwd: work,
      env: { REPORT_TITLE: "Q3 sales" },
    });
    assertEquals(before.code, 3);
    assertStringIncludes(before.stderr, "not bootstrapped");

    const bootstrap = await run("bash", ["scripts/bootstrap.sh"], {
      cwd: skillDir,
    });
    assertEquals(bootstrap.code, 0, bootstrap.stderr);
    assertEquals(
      (await Deno.readTextFile(hostPath.join(skillDir, "cache", ".ready")))
        .startsWith("ready\n"),
      true,
    );

    const untitled = await run("bash", [script, input, "out/report.md"], {
      cwd: work,
      env: { REPORT_TITLE: "" },
    });
    assertEquals(untitled.code, 4);
    assertStringIncludes(untitled.stderr, "REPORT_TITLE is not set");

    const report = await run("bash", [script, input, "out/report.md"], {
      cwd: work,
      env: { REPORT_TITLE: "Q3 sales" },
    });
    assertEquals(report.code, 0, report.stderr);
    const text = await Deno.readTextFile(
      hostPath.join(work, "out", "report.md"),
    );
    assertStringIncludes(text, "# Q3 sales\n");
    assertStringIncludes(text, "Source: `sales.csv`, 6 rows, 4 columns.");
    assertStringIncludes(
      text,
      "| units | 6 | 50.00 | 3.00 | 15.00 | 8.33 |",
    );
    assertStringIncludes(
      text,
      "| revenue | 6 | 863.38 | 26.00 | 269.91 | 143.90 |",
    );
    assertStringIncludes(text, "| region | 6 | - | - | - | - |");
  });
});

Deno.test("json-to-table writes a sorted Markdown table with Deno", async () => {
  await withCopy("json-to-table", async (skillDir, work) => {
    const result = await run(Deno.execPath(), [
      "run",
      "--allow-read",
      "--allow-write",
      hostPath.join(skillDir, "scripts", "json_to_table.ts"),
      hostPath.join(skillDir, "data", "tasks.json"),
      "tables/tasks.md",
      "--columns",
      "id,title,estimate",
      "--sort",
      "estimate",
    ], { cwd: work });
    assertEquals(result.code, 0, result.stderr);
    assertStringIncludes(result.stdout, "wrote tables/tasks.md (3 rows)");
    assertEquals(
      await Deno.readTextFile(hostPath.join(work, "tables", "tasks.md")),
      "| id | title | estimate |\n| --- | --- | --- |\n" +
        "| 2 | Review the design | 1.5 |\n" +
        "| 3 | Write the release notes | 2 |\n" +
        "| 1 | Fix the login \\| logout bug | 5 |\n",
    );
    await Deno.writeTextFile(hostPath.join(work, "bad.json"), '{"a": 1}');
    const bad = await run(Deno.execPath(), [
      "run",
      "--allow-read",
      "--allow-write",
      hostPath.join(skillDir, "scripts", "json_to_table.ts"),
      "bad.json",
      "out.md",
    ], { cwd: work });
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "must be a JSON array of objects");
  });
});
