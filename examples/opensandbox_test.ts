import {
  assert,
  assertEquals,
  assertNotEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { startOpenSandboxServer } from "../tests/servers/opensandbox.ts";
import { runOpenSandboxExample } from "./opensandbox.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));

/** The flags the example's own header gives for a real server. */
async function headerFlags(): Promise<string[]> {
  const text = await Deno.readTextFile(
    hostPath.join(repo, "examples/opensandbox.ts"),
  );
  const line = /deno run (--allow-[^\n]*) examples\/opensandbox\.ts/.exec(text);
  assert(line, "the header shows no narrowed command");
  return line[1]!.split(/\s+/).filter((word) => word.startsWith("--allow-"));
}

Deno.test("the OpenSandbox example runs a skill in a conversation and resumes it without uploading again", async () => {
  await using server = await startOpenSandboxServer();
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    const lines: string[] = [];
    const result = await runOpenSandboxExample({
      baseUrl: server.url,
      conversationsRoot: `${temp}/conversations`,
      print: (line) => lines.push(line),
    });
    const transcript = lines.join("\n");
    assertEquals(result.errors, 0, transcript);
    assertEquals(result.resumedSandboxId, result.sandboxId);
    assertEquals(result.uploadsOnResume, 0);
    assertEquals(result.reportTitle, "# Q3 sales by product");
    assertStringIncludes(transcript, "→ skill ");
    // Configured values are secrets: the tools' outputs show them redacted.
    assertStringIncludes(transcript, "[redacted]");
    // "Destroys the conversation at the end": no workspace stays behind.
    const left = [];
    for await (const entry of Deno.readDir(`${temp}/conversations`)) {
      if (entry.name.startsWith("example-")) left.push(entry.name);
    }
    assertEquals(left, []);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the OpenSandbox example runs under its header's flags against a hand-started test server, in the conversations root it is given", async () => {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  // The test server as a user starts it by hand: it prints its URL first.
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", "tests/servers/opensandbox.ts"],
    cwd: repo,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const reader = server.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let first = "";
    while (!first.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      first += value;
    }
    reader.releaseLock();
    const url = first.trim();
    assert(url.startsWith("http://"), url);
    const root = `${temp}/conversations`;
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        ...await headerFlags(),
        "examples/opensandbox.ts",
      ],
      cwd: repo,
      env: {
        NO_COLOR: "1",
        OPEN_SANDBOX_URL: url,
        OPEN_SANDBOX_API_KEY: "unused",
        SKILLRUN_CONVERSATIONS_ROOT: root,
      },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    assertEquals(
      output.code,
      0,
      `${stdout}\n${new TextDecoder().decode(output.stderr)}`,
    );
    assertStringIncludes(stdout, "uploads on resume: 0");
    // The sandbox's paths are this machine's: the conversation lived in the
    // root given, not under /workspace.
    assertStringIncludes(stdout, `Base directory: ${root}/`);
  } finally {
    server.kill("SIGTERM");
    await server.stdout.cancel().catch(() => {});
    await server.status;
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the OpenSandbox example leaves no temporary folder when the server cannot be reached", async () => {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        ...await headerFlags(),
        "examples/opensandbox.ts",
      ],
      cwd: repo,
      env: {
        NO_COLOR: "1",
        TMPDIR: temp,
        // A port nobody listens on.
        OPEN_SANDBOX_URL: "http://127.0.0.1:9",
        OPEN_SANDBOX_API_KEY: "unused",
      },
      stdin: "null",
    }).output();
    assertNotEquals(output.code, 0);
    assertEquals(await Array.fromAsync(Deno.readDir(temp)), []);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("the OpenSandbox example says how to start a server when none is given", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", "examples/opensandbox.ts"],
    cwd: repo,
    env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    clearEnv: true,
    stdin: "null",
  }).output();
  assertEquals(output.code, 2);
  const stderr = new TextDecoder().decode(output.stderr);
  assertStringIncludes(stderr, "OPEN_SANDBOX_URL");
  assertStringIncludes(stderr, "tests/servers/opensandbox.ts");
});
