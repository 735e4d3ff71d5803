import {
  assert,
  assertEquals,
  assertLess,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { liveGroupMembers, runDenoScript } from "./helpers/testing.ts";

const SCRIPT = new URL("./testdata/narrowed_runtime.ts", import.meta.url)
  .pathname;

Deno.test({
  name:
    "the local runtime works fully under --allow-read=<skills>,<root> --allow-write=<root> --allow-run=bash",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const temp = await Deno.realPath(await Deno.makeTempDir());
    try {
      const skills = `${temp}/skills`;
      const conversations = `${temp}/conversations`;
      const outside = `${temp}/outside`;
      await Deno.mkdir(`${skills}/narrow`, { recursive: true });
      await Deno.mkdir(outside);
      await Deno.writeTextFile(`${outside}/secret.txt`, "secret");
      await Deno.writeTextFile(
        `${skills}/narrow/SKILL.md`,
        "---\nname: narrow\ndescription: Narrow\n---\nRun it.\n",
      );
      await Deno.writeTextFile(
        `${skills}/narrow/setup.sh`,
        "#!/bin/bash\necho setup ran\n",
      );
      await Deno.chmod(`${skills}/narrow/setup.sh`, 0o755);

      const flags = [
        `--allow-read=${skills},${conversations}`,
        `--allow-write=${conversations}`,
        "--allow-run=bash",
      ];
      const { code, stdout, stderr } = await runDenoScript(SCRIPT, flags, [
        skills,
        conversations,
        outside,
      ]);
      assertEquals(code, 0, `stdout:\n${stdout}\nstderr:\n${stderr}`);
      const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
      assert(line, stdout);
      const report = JSON.parse(line.slice("RESULT ".length)) as {
        escapeMessage: string;
        permissionMessage: string;
        writePermissionMessage: string;
        timeoutElapsedMs: number;
        pgid: number;
        workspace: string;
      };
      assertEquals(report.workspace, `${conversations}/narrow-1`);
      assertStringIncludes(report.escapeMessage, report.workspace);
      assertStringIncludes(report.permissionMessage, `${outside}/secret.txt`);
      assertStringIncludes(report.permissionMessage, "--allow-read");
      assertStringIncludes(report.writePermissionMessage, "--allow-write");
      // The group kill worked with bash's kill (Deno.kill(-pgid) is refused).
      assertLess(report.timeoutElapsedMs, 500 + 750 + 1000);
      assert(report.pgid > 1);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assertEquals(liveGroupMembers(report.pgid), []);
      // The source skill was not modified; the secret was not touched.
      assertEquals(
        [...Deno.readDirSync(`${skills}/narrow`)].map((e) => e.name).sort(),
        ["SKILL.md", "setup.sh"],
      );
      assertEquals(await Deno.readTextFile(`${outside}/secret.txt`), "secret");
    } finally {
      await Deno.remove(temp, { recursive: true });
    }
  },
});

Deno.test("connect() of a remote runtime without --allow-net fails at once with a RuntimePermissionError naming the flag", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/connect.ts`;
    const entry = new URL("../runtimes/opensandbox/mod.ts", import.meta.url);
    await Deno.writeTextFile(
      script,
      `import { OpenSandboxSkillRuntime } from ${
        JSON.stringify(entry.href)
      };\n` +
        "const runtime = new OpenSandboxSkillRuntime({ baseUrl: 'http://127.0.0.1:18089', apiKey: 'k' });\n" +
        "const started = performance.now();\n" +
        "try { await runtime.connect(); } catch (e) {\n" +
        "  console.log(JSON.stringify({ name: e.name, ms: performance.now() - started, message: e.message }));\n" +
        "}\n",
    );
    const { stdout, stderr } = await runDenoScript(script, []);
    const report = JSON.parse(stdout || "{}") as {
      name?: string;
      ms?: number;
      message?: string;
    };
    assertEquals(report.name, "RuntimePermissionError", stderr);
    assertStringIncludes(report.message!, "--allow-net=127.0.0.1:18089");
    // Never retried: no back-off of a denial that cannot change.
    assert(report.ms! < 500, `${report.ms} ms`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
