/**
 * Security suite: links and special files planted with the shell, then used
 * through the file tools, in conversation mode.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  assertOk,
  assertRefused,
  type SecurityCase,
  securityCases,
  type World,
} from "./_harness.ts";

const ESCAPE = ["outside the workspace"];

/** The file tools that take a path to a file. */
const FILE_TOOLS: readonly {
  readonly tool: string;
  readonly input: (path: string) => Record<string, unknown>;
}[] = [
  { tool: "read", input: (p) => ({ file_path: p }) },
  { tool: "write", input: (p) => ({ file_path: p, content: "pwned\n" }) },
  {
    tool: "edit",
    input: (p) => ({ file_path: p, old_string: "e", new_string: "PWNED" }),
  },
  { tool: "publish_file", input: (p) => ({ file_path: p }) },
  { tool: "grep", input: (p) => ({ pattern: "e", path: p }) },
];

/** A symlink planted by a command, then every file tool through it. */
function throughLink(
  kind: string,
  plant: (world: World) => string,
  expected: readonly string[] = ESCAPE,
): SecurityCase[] {
  return FILE_TOOLS.map(({ tool, input }) => ({
    name: `${tool} refuses ${kind}`,
    async setup(world) {
      const result = await world.sh(plant(world));
      assertOk(result);
    },
    async attack(world) {
      assertRefused(await world.call(tool, input("link")), ...expected);
    },
    async control(world) {
      // A symlink to a file inside the workspace is fine.
      assertOk(await world.sh("ln -sfn alive.txt inner-link"));
      assertOk(await world.call(tool, input("inner-link")));
    },
  }));
}

securityCases("links", [
  ...throughLink(
    "an absolute symlink to a file outside",
    (w) => `ln -s ${w.outside}/secret.txt link`,
  ),
  ...throughLink(
    "a relative symlink to a file outside",
    () => `ln -s ../../outside/secret.txt link`,
  ),
  ...throughLink(
    "a chain of symlinks ending outside",
    (w) =>
      `ln -s ${w.outside}/secret.txt hop2 && ln -s hop2 hop1 && ln -s hop1 link`,
  ),
  {
    name:
      "a symlink to a folder outside refuses listing, searching and writing into it",
    async setup(world) {
      assertOk(await world.sh(`ln -s ${world.outside}/dir outdir`));
    },
    async attack(world) {
      assertRefused(await world.call("ls", { path: "outdir" }), ...ESCAPE);
      assertRefused(
        await world.call("glob", { pattern: "*", path: "outdir" }),
        ...ESCAPE,
      );
      assertRefused(
        await world.call("grep", { pattern: "inner", path: "outdir" }),
        ...ESCAPE,
      );
      assertRefused(
        await world.call("write", {
          file_path: "outdir/new.txt",
          content: "x",
        }),
        ...ESCAPE,
      );
      assertRefused(
        await world.call("bash", {
          command: "ls",
          working_directory: "outdir",
        }),
        ...ESCAPE,
      );
      // Searching the workspace does not follow the link either.
      const grep = await world.call("grep", { pattern: "inner" });
      assertOk(grep, "No files found");
    },
    async control(world) {
      assertOk(
        await world.sh("mkdir -p realdir && echo inner > realdir/a.txt"),
      );
      assertOk(
        await world.call("grep", { pattern: "inner", path: "realdir" }),
        "a.txt",
      );
    },
  },
  {
    name: "a symlink swapped in after a first use is refused on the next call",
    async attack(world) {
      assertOk(await world.sh("echo 'first version' > swap.txt"));
      assertOk(
        await world.call("read", { file_path: "swap.txt" }),
        "first version",
      );
      assertOk(
        await world.sh(
          `rm swap.txt && ln -s ${world.outside}/secret.txt swap.txt`,
        ),
      );
      for (const { tool, input } of FILE_TOOLS) {
        assertRefused(await world.call(tool, input("swap.txt")), ...ESCAPE);
      }
    },
    async control(world) {
      assertOk(await world.sh("rm swap.txt && echo back > swap.txt"));
      assertOk(await world.call("read", { file_path: "swap.txt" }), "back");
    },
  },
  {
    name: "a folder swapped for a symlink after a first write is refused",
    async attack(world) {
      assertOk(
        await world.call("write", { file_path: "out/a.txt", content: "1" }),
      );
      assertOk(await world.sh(`rm -r out && ln -s ${world.outside}/dir out`));
      assertRefused(
        await world.call("write", { file_path: "out/a.txt", content: "2" }),
        ...ESCAPE,
      );
      assertRefused(
        await world.call("read", { file_path: "out/inner.txt" }),
        ...ESCAPE,
      );
    },
    async control(world) {
      assertOk(await world.sh("rm out && mkdir out"));
      assertOk(
        await world.call("write", { file_path: "out/a.txt", content: "3" }),
      );
    },
  },
  {
    name: "the skills folder replaced by a symlink outside is not copied into",
    async attack(world) {
      assertOk(await world.sh(`rm -r skills && ln -s ${world.outside} skills`));
      const result = await world.call("skill", { name: "api" });
      assertRefused(result, ...ESCAPE);
    },
    async control(world) {
      assertOk(await world.sh("rm skills && mkdir skills"));
      assertOk(await world.call("skill", { name: "api" }), "Base directory");
    },
  },
  {
    name: "write and edit through a hard link never change the outside file",
    async setup(world) {
      await Deno.link(
        `${world.outside}/secret.txt`,
        `${world.workspace}/hard.txt`,
      );
    },
    async attack(world) {
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
      assertOk(await world.sh("rm hard.txt"));
      await Deno.link(
        `${world.outside}/secret.txt`,
        `${world.workspace}/hard.txt`,
      );
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
      assertOk(await world.sh("rm hard.txt"));
      // (the snapshot compares the outside file: content and link count)
    },
    async control(world) {
      assertOk(
        await world.call("write", { file_path: "plain.txt", content: "p" }),
      );
      assertOk(
        await world.call("edit", {
          file_path: "plain.txt",
          old_string: "p",
          new_string: "q",
        }),
      );
      assertEquals(
        await Deno.readTextFile(`${world.workspace}/plain.txt`),
        "q",
      );
    },
  },
  {
    name:
      "a FIFO is refused by every file tool without blocking, and grep names it",
    async setup(world) {
      assertOk(await world.sh("mkfifo pipe && ln -s pipe to-pipe"));
    },
    async attack(world) {
      const start = performance.now();
      for (const path of ["pipe", "to-pipe"]) {
        for (const { tool, input } of FILE_TOOLS) {
          const result = await world.call(tool, input(path));
          if (tool === "grep") {
            assertRefused(result, "not a regular file");
          } else {
            assertRefused(result, "not a regular file", "a pipe");
          }
        }
      }
      const grep = await world.call("grep", { pattern: "x" });
      assertOk(grep, "pipe (not a regular file");
      assert(performance.now() - start < 20_000);
      assert((await Deno.lstat(`${world.workspace}/pipe`)).isFifo);
    },
    async control(world) {
      assertOk(await world.call("read", { file_path: "alive.txt" }), "alive");
    },
  },
  {
    name:
      "a device behind a symlink (char device made by a command) is refused, never streamed",
    async setup(world) {
      assertOk(
        await world.sh("ln -s /dev/zero zero && ln -s /dev/urandom random"),
      );
    },
    async attack(world) {
      for (const path of ["zero", "random", "/dev/zero"]) {
        for (const { tool, input } of FILE_TOOLS) {
          assertRefused(
            await world.call(tool, input(path)),
            ...ESCAPE,
            "not a regular file",
            "a device",
          );
        }
      }
    },
    async control(world) {
      assertOk(await world.call("ls", {}), "zero");
    },
  },
  {
    name:
      "a sparse 1 TiB file: read's window, grep's skip and publish in bounded time",
    world: { limits: { fileTimeoutMs: 2000 } },
    async setup(world) {
      assertOk(
        await world.sh(
          "printf 'head line\\n%.0s' $(seq 1000) > sparse.txt && truncate -s 1T sparse.txt",
        ),
      );
    },
    async attack(world) {
      const start = performance.now();
      // The 1 TiB line itself: its first window, cut, with the reason.
      assertOk(
        await world.call("read", { file_path: "sparse.txt", offset: 1001 }),
        "line 1001 is longer than the 4 MiB limit of one read",
      );
      // Past it: refused at once, not scanned to its end.
      assertRefused(
        await world.call("read", { file_path: "sparse.txt", offset: 1002 }),
        "line 1001 is longer than the 4 MiB limit of one read",
      );
      const grep = await world.call("grep", {
        pattern: "head",
        output_mode: "count",
      });
      assertOk(grep, "sparse.txt (larger than the size limit");
      assertRefused(
        await world.call("edit", {
          file_path: "sparse.txt",
          old_string: "head",
          new_string: "x",
        }),
        "larger than",
      );
      assert(performance.now() - start < 30_000);
    },
    async control(world) {
      assertOk(
        await world.call("read", { file_path: "sparse.txt", limit: 2 }),
        "head line",
      );
    },
  },
]);
