/**
 * The MCP server's default conversations root, in a module of its own so the
 * CLI can name it without loading the MCP SDK.
 *
 * @module
 */
import { isAbsolute } from "@std/path/posix/is-absolute";
import { join as posixJoin } from "@std/path/posix/join";

// Only the two path functions this needs, not all of `@std/path/posix` (some
// forty modules that importing `./mcp` would load for them); on Windows, its
// Windows functions, loaded only there.
const join: (...paths: string[]) => string = Deno.build.os === "windows"
  ? (await import("@std/path/windows")).join
  : posixJoin;

/**
 * The default conversations root of the MCP server's local runtime: an
 * absolute place that does not depend on the directory an MCP client starts
 * the server in. `$XDG_STATE_HOME/skillrun/conversations` when
 * `XDG_STATE_HOME` is an absolute path, else
 * `$HOME/.local/state/skillrun/conversations` (on Windows
 * `%LOCALAPPDATA%\skillrun\conversations`).
 *
 * Needs `--allow-env` for those variables.
 *
 * @returns The absolute path (not created here).
 * @throws {Error} None of those variables is set or readable: pass a root.
 *
 * @example Where MCP sessions work by default
 * ```ts
 * import { assert } from "@std/assert";
 * import { defaultMcpConversationsRoot } from "@skillrun/skillrun/mcp";
 * const root = defaultMcpConversationsRoot();
 * assert(root.endsWith("conversations") && root.includes("skillrun"));
 * ```
 */
export function defaultMcpConversationsRoot(): string {
  const env = (name: string): string | undefined => {
    try {
      return Deno.env.get(name) || undefined;
    } catch {
      return undefined;
    }
  };
  if (Deno.build.os === "windows") {
    const local = env("LOCALAPPDATA");
    if (local) return join(local, "skillrun", "conversations");
  } else {
    const state = env("XDG_STATE_HOME");
    if (state && isAbsolute(state)) {
      return join(state, "skillrun", "conversations");
    }
    const home = env("HOME");
    if (home && isAbsolute(home)) {
      return join(
        home,
        ".local",
        "state",
        "skillrun",
        "conversations",
      );
    }
  }
  throw new Error(
    "Cannot choose the MCP conversations root: neither XDG_STATE_HOME nor HOME (LOCALAPPDATA on Windows) is readable; pass a root (--root <dir>, or conversationsRoot)",
  );
}
