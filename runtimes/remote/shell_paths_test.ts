import { assert, assertEquals } from "../../tests/helpers/assert.ts";
import { type ServerFileOps, withShellPaths } from "./shell_paths.ts";
import type { ShellRunner } from "./shell_files.ts";

/** Runs helper commands with the local bash. */
const bash: ShellRunner = async (command) => {
  const started = Date.now();
  const { code, stdout, stderr } = await new Deno.Command("bash", {
    args: ["-c", command],
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    stdout: text(stdout),
    stderr: text(stderr),
    exitCode: code,
    timedOut: false,
    aborted: false,
    stdoutBytes: stdout.length,
    stderrBytes: stderr.length,
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: Date.now() - started,
  };
};

/**
 * A server's file calls on this machine's files, refusing any path with a
 * `$` (as execd, which would expand it), recording the paths it got.
 */
function localServer(seen: string[]): ServerFileOps {
  const take = (path: string) => {
    if (path.includes("$")) throw new Error(`the server got "${path}"`);
    seen.push(path);
  };
  return {
    stat: (path) => {
      take(path);
      return Promise.resolve(null);
    },
    list: (path) => {
      take(path);
      return Promise.resolve([]);
    },
    open: async (path) => {
      take(path);
      return new Response(await Deno.readFile(path));
    },
    upload: async (files) => {
      for (const file of files) {
        take(file.remotePath);
        await Deno.mkdir(file.remotePath.replace(/\/[^/]*$/, ""), {
          recursive: true,
        });
        await Deno.writeTextFile(file.remotePath, String(file.content), {
          mode: file.mode ?? 0o644,
        });
      }
    },
    makeDirectories: async (paths) => {
      for (const path of paths) {
        take(path);
        await Deno.mkdir(path, { recursive: true });
      }
    },
  };
}

Deno.test("withShellPaths: a path holding $ never reaches the server's calls; the others do", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-paths-" });
  try {
    const seen: string[] = [];
    const files = withShellPaths(localServer(seen), bash);
    const dollar = `${dir}/cost $5/Outer$Inner.txt`;
    await files.makeDirectories([`${dir}/cost $5`, `${dir}/plain`]);
    await files.upload([{ remotePath: dollar, content: "five" }]);
    assertEquals(await Deno.readTextFile(dollar), "five");
    assertEquals((await Deno.stat(dollar)).mode! & 0o777, 0o644);
    const info = await files.stat(dollar);
    assertEquals([info?.type, info?.size, info?.name], [
      "file",
      4,
      "Outer$Inner.txt",
    ]);
    assertEquals(
      (await files.list(`${dir}/cost $5`, { depth: 1 })).map((e) => e.path),
      [dollar],
    );
    assertEquals(
      await (await files.open(dollar, { offset: 0 })).text(),
      "five",
    );
    assertEquals(await files.statMany!([dollar, `${dir}/none$`]), [
      info,
      null,
    ]);
    await files.stat(`${dir}/plain`);
    // The server saw the plain folder, the staged upload, the read's link.
    assertEquals(seen[0], `${dir}/plain`);
    assert(seen[1]!.startsWith("/tmp/.skillrun-upload-"), seen[1]);
    assert(seen[2]!.startsWith("/tmp/.skillrun-link-"), seen[2]);
    assertEquals(seen.slice(3), [`${dir}/plain`]);
    // The staging folder and the link are gone.
    for (const path of seen.slice(1, 3)) {
      assertEquals(await Deno.lstat(path).catch(() => null), null);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("withShellPaths: an upload without a mode over a file holding $ keeps that file's mode", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-paths-" });
  try {
    const target = `${dir}/run$.sh`;
    await Deno.writeTextFile(target, "old", { mode: 0o755 });
    await Deno.chmod(target, 0o755);
    const files = withShellPaths(localServer([]), bash);
    await files.upload([{ remotePath: target, content: "new" }]);
    assertEquals(await Deno.readTextFile(target), "new");
    assertEquals((await Deno.stat(target)).mode! & 0o777, 0o755);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
