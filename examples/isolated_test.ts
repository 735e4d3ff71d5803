import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
} from "../runtimes/local/isolated.ts";

const repo = hostPath.resolve(
  hostPath.fromFileUrl(new URL("../", import.meta.url)),
);
const example = hostPath.join(repo, "examples", "isolated.ts");

const NO_SANDBOX: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

/** The documented line: the first line of the example, less its `// `. */
async function documentedLine(): Promise<string> {
  const first = (await Deno.readTextFile(example)).split("\n", 1)[0]!;
  assert(first.startsWith("// deno run "), first);
  return first.slice(3);
}

Deno.test("the isolated example's line is the same in the example and in examples/README.md", async () => {
  const line = await documentedLine();
  const readme = await Deno.readTextFile(
    hostPath.join(repo, "examples", "README.md"),
  );
  // The README calls Deno as a fresh clone can: `npx -y deno@2.9.6 run ...`.
  assertStringIncludes(
    readme,
    `npx -y deno@2.9.6 ${line.slice("deno ".length)}`,
  );
  assertMatch(line, /--allow-run=bwrap,bash,rg /);
  assert(!line.includes("-A"), "no blanket permissions");
});

const name =
  "the isolated example runs its skills in a sandbox that reaches nothing else";
if (NO_SANDBOX !== null) console.error(`Ignoring "${name}": ${NO_SANDBOX}`);
Deno.test({
  name,
  ignore: NO_SANDBOX !== null,
  fn: async () => {
    const [command, ...args] = (await documentedLine()).split(" ");
    assertEquals(command, "deno");
    const output = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: repo,
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    const workspace = /^workspace: (.+)$/m.exec(stdout)?.[1];
    try {
      assertEquals(output.code, 0, `${stdout}\n${stderr}`);
      assert(workspace, stdout);
      // The skills work inside: bash with a bootstrap, and Deno.
      assertStringIncludes(stdout, "csv-report: wrote ../../report.md");
      assert(
        (await Deno.readTextFile(hostPath.join(workspace, "report.md")))
          .startsWith("# Sales in a sandbox\n"),
      );
      assertStringIncludes(stdout, "json-to-table: wrote tasks.md (3 rows)");
      assertStringIncludes(
        await Deno.readTextFile(hostPath.join(workspace, "tasks.md")),
        "| id | title | owner |",
      );
      // Nothing else of the host.
      assertStringIncludes(
        stdout,
        `cat: ${repo}/README.md: No such file or directory`,
      );
      assertStringIncludes(
        stdout,
        "/usr/escape.txt: Read-only file system",
      );
      assertStringIncludes(stdout, "Network is unreachable");
      assertStringIncludes(stdout, "HOME=/tmp/home");
      for (
        const escape of [hostPath.join(repo, "escape.txt"), "/usr/escape.txt"]
      ) {
        assertEquals(
          await Deno.stat(escape).then(() => true, () => false),
          false,
          escape,
        );
      }
      // The fence report at the end.
      assertStringIncludes(
        stdout,
        "runtime: local, conversation mode, isolated (bubblewrap",
      );
      assertStringIncludes(stdout, "  network: none (loopback included)");
      assertStringIncludes(stdout, "\n0 errors, ");
    } finally {
      if (workspace) {
        await Deno.remove(workspace, { recursive: true }).catch(() => {});
      }
    }
  },
});
