/**
 * Security suite: what the remote workspace fence promises beyond refusing
 * links on the way, on every remote kind: writes through a hard link leave
 * the outside file alone (a temporary file renamed over the target, modes
 * kept), a link swapped in while a write is under way is refused (the check
 * and the rename are one command), `grep`, `glob` and `ls` follow a link
 * given as their path only to a place inside the workspace, and
 * `publish_file` never announces another size than it streams.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { assertOk, assertRefused } from "./_harness.ts";
import type { ActiveFault } from "../servers/_faults.ts";
import {
  type RemoteSecurityCase,
  remoteSecurityCases,
  type RemoteWorld,
} from "./_remote.ts";

const ESCAPE = ["outside the workspace"];

/**
 * Waits until a held request reached the server (its fault was hit), the
 * call ended without it, or `ms` passed: what follows then happens while
 * the request is held, whatever the machine's load.
 */
async function reached(
  held: ActiveFault,
  call: Promise<unknown>,
  ms: number,
): Promise<void> {
  let ended = false;
  call.then(() => ended = true, () => ended = true);
  const end = Date.now() + ms;
  while (held.hits === 0 && !ended && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function hardLink(world: RemoteWorld, name = "hard.txt"): Promise<void> {
  await Deno.remove(`${world.workspace}/${name}`).catch(() => {});
  await Deno.link(`${world.outside}/secret.txt`, `${world.workspace}/${name}`);
}

async function modeOf(path: string): Promise<number> {
  return (await Deno.stat(path)).mode! & 0o7777;
}

const hardLinks: RemoteSecurityCase = {
  name:
    "write, edit and fs.writeText through a hard link never change the outside file",
  async attack(world) {
    await hardLink(world);
    assertOk(
      await world.call("write", {
        file_path: "hard.txt",
        content: "rewritten\n",
      }),
    );
    assertEquals(
      await Deno.readTextFile(`${world.workspace}/hard.txt`),
      "rewritten\n",
    );
    await hardLink(world);
    assertOk(
      await world.call("edit", {
        file_path: "hard.txt",
        old_string: "outside",
        new_string: "edited",
      }),
    );
    assertEquals(
      await Deno.readTextFile(`${world.workspace}/hard.txt`),
      "edited secret\n",
    );
    await hardLink(world);
    await world.runtime.fs.writeText("hard.txt", "by the application\n");
    assertEquals(
      await Deno.readTextFile(`${world.workspace}/hard.txt`),
      "by the application\n",
    );
    // Larger than what travels in the command: uploaded, then renamed.
    await hardLink(world);
    const large = "y".repeat(100 * 1024);
    await world.runtime.fs.writeText("hard.txt", large);
    assertEquals(await Deno.readTextFile(`${world.workspace}/hard.txt`), large);
    // Nothing left behind: no temporary file.
    const names = [];
    for await (const entry of Deno.readDir(world.workspace)) {
      names.push(entry.name);
    }
    assert(!names.some((n) => n.startsWith(".skillrun-")), names.join(" "));
    // (the snapshot compares the outside file: content, mode, time)
  },
  async control(world) {
    assertOk(
      await world.call("write", { file_path: "new/p.txt", content: "p" }),
    );
    assertEquals(await modeOf(`${world.workspace}/new/p.txt`), 0o644);
    assertOk(
      await world.call("edit", {
        file_path: "new/p.txt",
        old_string: "p",
        new_string: "q",
      }),
    );
    assertEquals(await Deno.readTextFile(`${world.workspace}/new/p.txt`), "q");
    assertOk(await world.sh("printf 'echo 1\\n' > run.sh && chmod 750 run.sh"));
    assertOk(
      await world.call("write", { file_path: "run.sh", content: "echo 2\n" }),
    );
    assertEquals(await modeOf(`${world.workspace}/run.sh`), 0o750);
    await world.runtime.fs.writeText("run.sh", "z".repeat(40 * 1024));
    assertEquals(await modeOf(`${world.workspace}/run.sh`), 0o750);
    for (
      const text of [
        "with 'quotes', $HOME, `ticks`, %s and \\x41 back\r\n",
        "héllo — ✓ \u{1F600}\n\n",
        "a\0b (a NUL byte: uploaded, then renamed)",
        "",
        "-n",
      ]
    ) {
      await world.runtime.fs.writeText("odd $1 name's.txt", text);
      assertEquals(
        await Deno.readTextFile(`${world.workspace}/odd $1 name's.txt`),
        text,
      );
    }
  },
};

const swappedWhileWriting: RemoteSecurityCase = {
  name:
    "a file swapped for a link to outside while a write is under way is not written through",
  async attack(world) {
    assertOk(await world.sh("echo before > target.txt"));
    // A fenced write is one command in the sandbox (the check of what is
    // there, a temporary file, the rename over the target). The server holds
    // that command's request (1.5 s at most) once it has arrived: the target
    // is swapped for a link while the write is under way, then it goes on.
    const release = Promise.withResolvers<void>();
    const held = world.faults.add({
      method: "POST",
      path: world.routes.exec,
      fault: { kind: "slow", delayMs: 1500, until: release.promise },
    });
    const write = world.call("write", {
      file_path: "target.txt",
      content: "pwned\n",
    });
    await reached(held, write, 1500);
    // The race happened: the write's request was held when the swap came.
    assert(held.hits > 0, "the write never reached the server's exec route");
    // An atomic swap (a rename), as a command's `mv -T` would do it.
    await Deno.symlink(
      `${world.outside}/secret.txt`,
      `${world.workspace}/swap.tmp`,
    );
    await Deno.rename(
      `${world.workspace}/swap.tmp`,
      `${world.workspace}/target.txt`,
    );
    release.resolve();
    const result = await write;
    if (result.isError) assertRefused(result, "symbolic link");
    world.faults.clear();
    // (the snapshot: the outside file keeps its bytes)
  },
  async control(world) {
    await Deno.remove(`${world.workspace}/target.txt`);
    assertOk(
      await world.call("write", { file_path: "target.txt", content: "ok\n" }),
    );
    assertEquals(
      await Deno.readTextFile(`${world.workspace}/target.txt`),
      "ok\n",
    );
  },
};

const searchRoots: RemoteSecurityCase = {
  name:
    "grep, glob and ls given a link follow it inside the workspace, refuse it to outside",
  async setup(world) {
    assertOk(
      await world.sh(
        `ln -s ${world.outside}/dir outdir && ln -s ${world.outside}/secret.txt outfile && mkdir -p realdir/sub && echo inner > realdir/a.txt && ln -s realdir indir && ln -s realdir/a.txt infile`,
      ),
    );
  },
  async attack(world) {
    assertRefused(await world.call("ls", { path: "outdir" }), ...ESCAPE);
    assertRefused(
      await world.call("glob", { pattern: "*", path: "outdir" }),
      ...ESCAPE,
    );
    for (const path of ["outdir", "outfile", "outdir/inner.txt"]) {
      assertRefused(
        await world.call("grep", { pattern: "e", path }),
        ...ESCAPE,
      );
    }
    assertRefused(
      await world.call("ls", { path: `${world.workspace}/outdir/` }),
      ...ESCAPE,
    );
    // Searching the workspace does not follow the links either.
    const grep = await world.call("grep", { pattern: "outside secret" });
    assertOk(grep, "No files found");
  },
  async control(world) {
    assertOk(await world.call("ls", { path: "indir" }), "a.txt");
    assertOk(
      await world.call("glob", { pattern: "*.txt", path: "indir" }),
      "a.txt",
    );
    assertOk(
      await world.call("grep", { pattern: "inner", path: "indir" }),
      "a.txt",
    );
    assertOk(
      await world.call("grep", { pattern: "inner", path: "infile" }),
      "a.txt",
    );
    assertOk(await world.call("ls", { path: "realdir" }), "sub");
  },
};

const publishSize: RemoteSecurityCase = {
  name:
    "publish_file never announces a size other than the bytes it streams (a file grown meanwhile)",
  async attack(world) {
    const path = `${world.workspace}/grow.txt`;
    await Deno.writeTextFile(path, "x".repeat(1000));
    // The download is held (1.2 s at most) while the file grows.
    const release = Promise.withResolvers<void>();
    const held = world.faults.add({
      method: ["vercel", "deno-sandbox"].includes(world.kind) ? "POST" : "GET",
      path: world.routes.download,
      fault: { kind: "slow", delayMs: 1200, until: release.promise },
      times: 1,
    });
    const publish = world.call("publish_file", { file_path: "grow.txt" });
    await reached(held, publish, 1200);
    await Deno.writeTextFile(path, "y".repeat(500), { append: true });
    release.resolve();
    const result = await publish;
    const record = world.published.get("grow.txt");
    if (result.isError) {
      assertRefused(result, "changed while it was published");
    } else {
      assert(record, "nothing reached the publisher");
      assertEquals(record.announced, record.streamed, result.text);
    }
  },
  async control(world) {
    assertOk(
      await world.call("publish_file", { file_path: "alive.txt" }),
      "6 bytes",
    );
    assertEquals(world.published.get("alive.txt"), {
      announced: 6,
      streamed: 6,
    });
  },
};

const readSizes: RemoteSecurityCase = {
  name:
    "reads bring back exactly the file, small or large, and refuse one over the limit",
  async attack(world) {
    await Deno.writeTextFile(`${world.workspace}/big.txt`, "b".repeat(300_000));
    let refused = "";
    try {
      await world.runtime.fs.readText("big.txt", { maxBytes: 1000 });
    } catch (error) {
      refused = String(error);
    }
    assert(refused.includes("larger than"), refused);
    await Deno.link(
      `${world.outside}/secret.txt`,
      `${world.workspace}/hard.txt`,
    );
    // A hard link is the same file: reading it is reading the workspace's.
    assertEquals(
      await world.runtime.fs.readText("hard.txt", { maxBytes: 100 }),
      "outside secret\n",
    );
  },
  async control(world) {
    assertEquals(
      await world.runtime.fs.readText("big.txt", { maxBytes: 1 << 20 }),
      "b".repeat(300_000),
    );
    const bytes = new Uint8Array(256).map((_, i) => i);
    await Deno.writeFile(`${world.workspace}/all.bin`, bytes);
    assertEquals(await world.runtime.fs.readBytes("all.bin"), bytes);
    assertEquals(
      await world.runtime.fs.readText("alive.txt", { maxBytes: 6 }),
      "alive\n",
    );
  },
};

remoteSecurityCases("remote fence", [
  readSizes,
  hardLinks,
  swappedWhileWriting,
  searchRoots,
  publishSize,
]);
