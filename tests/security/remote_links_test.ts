/**
 * Security suite: links and special files planted by a command in a remote
 * conversation's workspace, then used through the file tools, on every
 * remote kind. The remote file tools never follow a symbolic link the
 * sandbox made (even to a place inside: see `RemoteFileSystem`), and refuse
 * what is not a regular file without opening it.
 *
 * @module
 */
import { assert, assertLess } from "../helpers/assert.ts";
import { assertOk, assertRefused } from "./_harness.ts";
import { type RemoteSecurityCase, remoteSecurityCases } from "./_remote.ts";

const LINK = ["symbolic link"];

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
];

function throughLink(
  kind: string,
  plant: (outside: string) => string,
  path = "link",
): RemoteSecurityCase[] {
  return FILE_TOOLS.map(({ tool, input }) => ({
    name: `${tool} refuses ${kind}`,
    async setup(world) {
      assertOk(await world.sh(plant(world.outside)));
    },
    async attack(world) {
      assertRefused(await world.call(tool, input(path)), ...LINK);
    },
    async control(world) {
      assertOk(await world.call(tool, input("alive.txt")));
    },
  }));
}

remoteSecurityCases("remote links", [
  ...throughLink(
    "an absolute symlink to a file outside",
    (outside) => `ln -s ${outside}/secret.txt link`,
  ),
  ...throughLink(
    "a relative symlink to a file outside",
    () => `ln -s ../../outside/secret.txt link`,
  ),
  ...throughLink(
    "a file inside a symlinked folder outside",
    (outside) => `ln -s ${outside}/dir outdir`,
    "outdir/inner.txt",
  ),
  {
    name: "a FIFO is refused at once by read, write and edit (never opened)",
    async setup(world) {
      assertOk(await world.sh("mkfifo pipe"));
    },
    async attack(world) {
      for (const { tool, input } of FILE_TOOLS.slice(0, 3)) {
        const started = Date.now();
        const result = await world.call(tool, input("pipe"));
        assertRefused(result, "not a regular file");
        assertLess(Date.now() - started, 5_000, `${tool} blocked`);
      }
    },
    async control(world) {
      assertOk(
        await world.call("write", { file_path: "new.txt", content: "x\n" }),
      );
      const read = await world.call("read", { file_path: "new.txt" });
      assert(read.text.includes("x"), read.text);
    },
  },
]);
