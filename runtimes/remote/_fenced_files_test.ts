import { assertEquals, assertRejects } from "../../tests/helpers/assert.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import type { ExecuteResult } from "../types.ts";
import type { ShellRunner } from "./shell_files.ts";
import {
  fencedRead,
  fencedRealPath,
  fencedWrite,
  INLINE_READ_BYTES,
} from "./_fenced_files.ts";

/** Runs the helper commands with the machine's own bash, as a sandbox would. */
const bash: ShellRunner = async (command) => {
  const output = await new Deno.Command("bash", {
    args: ["-c", command],
    cwd: "/",
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    stdout: decode(output.stdout),
    stderr: decode(output.stderr),
    exitCode: output.code,
    timedOut: false,
    aborted: false,
    stdoutBytes: output.stdout.length,
    stderrBytes: output.stderr.length,
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 0,
  } satisfies ExecuteResult;
};

async function world(): Promise<
  { root: string; outside: string } & AsyncDisposable
> {
  const base = await Deno.realPath(await Deno.makeTempDir());
  const root = `${base}/ws`;
  const outside = `${base}/outside`;
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(`${outside}/secret.txt`, "secret\n");
  return {
    root,
    outside,
    [Symbol.asyncDispose]: () => Deno.remove(base, { recursive: true }),
  };
}

const ODD = "a\nb 'q' $HOME `x`.txt";

Deno.test("fencedRealPath: names with newlines and quotes, links inside followed, outside refused", async () => {
  await using w = await world();
  await Deno.mkdir(`${w.root}/${ODD}`);
  await Deno.symlink(ODD, `${w.root}/in`);
  await Deno.symlink(w.outside, `${w.root}/out`);
  assertEquals(
    await fencedRealPath(bash, w.root, `${w.root}/in`, "in"),
    `${w.root}/${ODD}`,
  );
  assertEquals(
    await fencedRealPath(bash, w.root, `${w.root}/${ODD}`, ODD),
    `${w.root}/${ODD}`,
  );
  assertEquals(await fencedRealPath(bash, w.root, `${w.root}/none`, "x"), null);
  await assertRejects(
    () => fencedRealPath(bash, w.root, `${w.root}/out`, "out"),
    WorkspaceEscapeError,
    "outside the workspace",
  );
  await assertRejects(
    () => fencedRealPath(bash, w.root, `${w.root}/out/secret.txt`, "o"),
    WorkspaceEscapeError,
  );
});

Deno.test("fencedWrite and fencedRead: odd names, hard links detached, modes kept, links and FIFOs refused", async () => {
  await using w = await world();
  const upload = async (path: string, bytes: Uint8Array) => {
    await Deno.writeFile(path, bytes, { mode: 0o644 });
  };
  const write = (target: string, text: string) =>
    fencedWrite({
      shell: bash,
      upload,
      root: w.root,
      target,
      given: target,
      bytes: new TextEncoder().encode(text),
    });
  const read = (target: string, limit?: number) =>
    fencedRead(bash, w.root, target, target, limit);
  const odd = `${w.root}/d/${ODD}`;
  await write(odd, "one\n");
  assertEquals(await Deno.readTextFile(odd), "one\n");
  assertEquals((await Deno.stat(odd)).mode! & 0o777, 0o644);
  assertEquals(await read(odd), new TextEncoder().encode("one\n"));
  await Deno.chmod(odd, 0o700);
  await write(odd, "x".repeat(50_000)); // uploaded, then renamed
  assertEquals((await Deno.stat(odd)).mode! & 0o777, 0o700);
  await Deno.link(`${w.outside}/secret.txt`, `${w.root}/hard`);
  await write(`${w.root}/hard`, "mine\n");
  assertEquals(await Deno.readTextFile(`${w.outside}/secret.txt`), "secret\n");
  assertEquals(await read(`${w.root}/none`), null);
  const big = `${w.root}/big`;
  await Deno.writeTextFile(big, "b".repeat(INLINE_READ_BYTES + 10));
  assertEquals(await read(big), "large");
  assertEquals((await read(big, 11) as Uint8Array).length, 11);
  await Deno.symlink(`${w.outside}/secret.txt`, `${w.root}/link`);
  await Deno.symlink(w.outside, `${w.root}/dir`);
  for (const path of [`${w.root}/link`, `${w.root}/dir/secret.txt`]) {
    await assertRejects(() => read(path), WorkspaceEscapeError);
    await assertRejects(() => write(path, "pwned"), WorkspaceEscapeError);
  }
  await new Deno.Command("mkfifo", { args: [`${w.root}/fifo`] }).output();
  await assertRejects(() => read(`${w.root}/fifo`), TypeError, "not a regular");
  await assertRejects(() => write(`${w.root}/fifo`, "x"), TypeError);
  assertEquals(await Deno.readTextFile(`${w.outside}/secret.txt`), "secret\n");
  const left = [];
  for await (const entry of Deno.readDir(`${w.root}/d`)) left.push(entry.name);
  assertEquals(left, [ODD]);
});
