/**
 * Security suite: path tricks against every file tool, in conversation mode.
 *
 * @module
 */
import {
  assertOk,
  assertRefused,
  type SecurityCase,
  securityCases,
  type World,
} from "./_harness.ts";

/** How each file tool is called with a path, and what a refusal says. */
const TOOLS: readonly {
  readonly tool: string;
  readonly input: (path: string) => Record<string, unknown>;
  /** A path inside the workspace the control uses. */
  readonly control: string;
}[] = [
  { tool: "read", input: (p) => ({ file_path: p }), control: "alive.txt" },
  {
    tool: "write",
    input: (p) => ({ file_path: p, content: "pwned\n" }),
    control: "new/written.txt",
  },
  {
    tool: "edit",
    input: (p) => ({ file_path: p, old_string: "i", new_string: "PWNED" }),
    control: "alive.txt",
  },
  { tool: "ls", input: (p) => ({ path: p }), control: "." },
  { tool: "glob", input: (p) => ({ pattern: "*", path: p }), control: "." },
  { tool: "grep", input: (p) => ({ pattern: "i", path: p }), control: "." },
  {
    tool: "publish_file",
    input: (p) => ({ file_path: p }),
    control: "alive.txt",
  },
  {
    tool: "bash",
    input: (p) => ({ command: "echo hi > here.txt", working_directory: p }),
    control: ".",
  },
];

const ESCAPE = ["outside the workspace", "Cannot use"];

/** One case per tool for one kind of path. */
function perTool(
  kind: string,
  pathOf: (world: World, tool: string) => string,
  expected: readonly string[] = ESCAPE,
  setup?: (world: World) => Promise<void>,
): SecurityCase[] {
  return TOOLS.map(({ tool, input, control }) => ({
    name: `${tool} refuses ${kind}`,
    ...(setup ? { setup } : {}),
    async attack(world) {
      const result = await world.call(tool, input(pathOf(world, tool)));
      assertRefused(result, ...expected);
    },
    async control(world) {
      assertOk(await world.call(tool, input(control)));
    },
  }));
}

securityCases("paths", [
  ...perTool("a leading ..", () => `../../outside/secret.txt`),
  ...perTool(
    ".. in the middle",
    () => `sub/../../../outside/dir`,
  ),
  ...perTool(
    "an absolute path outside",
    (w) => `${w.outside}/secret.txt`,
  ),
  ...perTool(
    "another conversation's workspace",
    (w) => `${w.root}/other/notes.txt`,
  ),
  // A trailing .. after a real folder name, and a path with only dots.
  {
    name: "write refuses a trailing .. and a path of dots",
    async attack(world) {
      for (const path of ["skills/../../x.txt", "..", "../..", "./../"]) {
        assertRefused(
          await world.call("write", { file_path: path, content: "x" }),
          ...ESCAPE,
          "it is a folder",
        );
      }
    },
    async control(world) {
      assertOk(
        await world.call("write", {
          file_path: "skills/../x.txt",
          content: "x",
        }),
        "Created",
      );
    },
  },
  {
    name: "encoded separators and .. are names, never decoded",
    async attack(world) {
      for (
        const path of [
          "..%2f..%2foutside%2fsecret.txt",
          "%2e%2e/%2e%2e/outside/secret.txt",
          "..%252f..%252foutside",
        ]
      ) {
        const result = await world.call("write", {
          file_path: path,
          content: "stays inside",
        });
        // Either refused or written inside under that literal name.
        if (!result.isError) {
          assertOk(result, world.workspace);
        }
      }
      assertRefused(
        await world.call("read", { file_path: "..%2foutside%2fsecret.txt" }),
        "no such file",
      );
    },
    async control(world) {
      assertOk(
        await world.call("read", {
          file_path: "..%2f..%2foutside%2fsecret.txt",
        }),
        "stays inside",
      );
    },
  },
  {
    name: "Unicode look-alike separators and dots are plain characters",
    async attack(world) {
      // FULLWIDTH SOLIDUS, DIVISION SLASH, FRACTION SLASH, ONE DOT LEADER.
      for (const sep of ["\uff0f", "\u2215", "\u2044"]) {
        const path = `..${sep}..${sep}outside${sep}secret.txt`;
        const result = await world.call("write", {
          file_path: path,
          content: "u",
        });
        assertOk(result, world.workspace);
      }
      const leader = await world.call("write", {
        file_path: "\u2024\u2024/\u2024\u2024/x.txt",
        content: "u",
      });
      assertOk(leader, world.workspace);
    },
    async control(world) {
      assertOk(await world.call("ls", {}), "\uff0f");
    },
  },
  {
    name:
      "a NUL byte is refused before normalisation (a\\0/.. must not become .)",
    async attack(world) {
      for (
        const path of ["alive.txt\u0000", "x\u0000/../alive.txt", "\u0000"]
      ) {
        for (const tool of ["read", "write", "ls", "grep"]) {
          const input = tool === "read"
            ? { file_path: path }
            : tool === "write"
            ? { file_path: path, content: "x" }
            : tool === "ls"
            ? { path }
            : { pattern: "a", path };
          assertRefused(await world.call(tool, input), "NUL");
        }
      }
    },
    async control(world) {
      assertOk(
        await world.call("read", { file_path: "x/../alive.txt" }),
        "alive",
      );
    },
  },
  {
    name: "very long paths and names are refused cleanly, never crash",
    async attack(world) {
      const longName = "a".repeat(300);
      const deep = Array.from({ length: 2000 }, () => "d").join("/");
      const result = await world.call("write", {
        file_path: `${longName}.txt`,
        content: "x",
      });
      assertRefused(result);
      assertRefused(await world.call("read", { file_path: `${deep}/x.txt` }));
      assertRefused(
        await world.call("read", {
          file_path: `${"../".repeat(5000)}outside/secret.txt`,
        }),
        ...ESCAPE,
      );
    },
    async control(world) {
      assertOk(
        await world.call("write", {
          file_path: `${"b".repeat(200)}.txt`,
          content: "x",
        }),
        "Created",
      );
    },
  },
]);
