import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));
const example = hostPath.join(repo, "examples", "narrowed_permissions.ts");

/** The documented line: the first line of the example, less its `// `. */
async function documentedLine(): Promise<string> {
  const first = (await Deno.readTextFile(example)).split("\n", 1)[0]!;
  assert(first.startsWith("// deno run "), first);
  return first.slice(3);
}

Deno.test("the narrowed permissions line is the same in the example and in examples/README.md", async () => {
  const line = await documentedLine();
  const readme = await Deno.readTextFile(
    hostPath.join(repo, "examples", "README.md"),
  );
  // The README calls Deno as a fresh clone can: `npx -y deno@2.9.6 run ...`.
  assertStringIncludes(
    readme,
    `npx -y deno@2.9.6 ${line.slice("deno ".length)}`,
  );
  assertMatch(line, /--allow-read=\S+ --allow-write=\S+ --allow-run=bash /);
  assert(!line.includes("--allow-env"), "no environment access");
  assert(!line.includes("-A"), "no blanket permissions");
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  workspace: string | undefined;
}

let running: Promise<Run> | undefined;

/** Runs the example once with exactly its documented line (shared by the tests). */
function runExample(): Promise<Run> {
  running ??= (async () => {
    const [command, ...args] = (await documentedLine()).split(" ");
    assertEquals(command, "deno");
    const output = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: repo,
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    return {
      code: output.code,
      stdout,
      stderr: new TextDecoder().decode(output.stderr),
      workspace: /^workspace: (.+)$/m.exec(stdout)?.[1],
    };
  })();
  return running;
}

Deno.test("the narrowed permissions example runs under exactly its documented line", async () => {
  const { code, stdout, stderr, workspace } = await runExample();
  try {
    assertEquals(code, 0, `${stdout}\n${stderr}`);
    assert(workspace, stdout);
    assert(
      workspace.startsWith(hostPath.join(repo, ".skillrun", "narrowed") + "/"),
    );
    assertStringIncludes(stdout, 'skill {"name":"csv-report"} -> ok');
    assertMatch(
      stdout,
      /\nbash \{[^\n]*-> ok\ncsv-report: wrote \.\.\/\.\.\/report\.md/,
    );
    assertMatch(
      stdout,
      /\nread \{"file_path":"report\.md"\} -> ok\n[^\n]*report\.md/,
    );
    // The configured title is a secret: redacted for the model.
    assertStringIncludes(stdout, "1\t# [redacted]");
    assertStringIncludes(
      stdout,
      '"file_path":"notes/todo.txt","content":"check Q4\\n"} -> ok',
    );
    assertMatch(stdout, /\nls \{[^\n]*-> ok\n[^]*notes\/todo\.txt/);
    assertMatch(
      stdout,
      /read \{"file_path":"[^"]*README\.md"\} -> error\n[^\n]*outside the workspace/,
    );
    assertMatch(
      stdout,
      /write \{"file_path":"\.\.\/escape\.txt"[^\n]*-> error\n[^\n]*outside the workspace/,
    );
    assertEquals(
      await Deno.readTextFile(hostPath.join(workspace, "notes", "todo.txt")),
      "check Q4\n",
    );
    assert(
      (await Deno.readTextFile(hostPath.join(workspace, "report.md")))
        .startsWith("# Sales under narrowed permissions\n"),
    );
    assertEquals(
      await Deno.stat(hostPath.join(workspace, "..", "escape.txt")).then(
        () => true,
        () => false,
      ),
      false,
    );
    assertEquals(stderr, "");
  } finally {
    if (workspace) {
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
    }
  }
});

Deno.test("glob works under the narrowed permissions line (no rg allowed)", async () => {
  const { stdout, workspace } = await runExample();
  try {
    assertMatch(
      stdout,
      /glob \{"pattern":"\*\*\/\*\.md"\} -> ok\n[^\n]*report\.md/,
    );
  } finally {
    if (workspace) {
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
    }
  }
});
