/**
 * How an approval request names a call, in a module of its own: the MCP
 * server asks with it without loading the tool kit's shared helpers.
 *
 * @module
 */
import type { ToolApprovalCall } from "./approval.ts";

/** `the bash call "git status"`, `the write call to "a.txt"`. */
export function describeCall(call: ToolApprovalCall): string {
  const input = call.input;
  const pick = (key: string) =>
    typeof input[key] === "string" ? input[key] as string : undefined;
  const command = pick("command");
  const path = pick("file_path") ?? pick("path") ?? pick("pattern");
  const skill = call.skill ? ` (skill "${call.skill}")` : "";
  if (command !== undefined) {
    return `the ${call.tool} call ${JSON.stringify(command)}${skill}`;
  }
  if (path !== undefined) {
    return `the ${call.tool} call on ${JSON.stringify(path)}${skill}`;
  }
  const other = JSON.stringify(input);
  return `the ${call.tool} call ${
    other.length > 200 ? `${other.slice(0, 200)}...` : other
  }${skill}`;
}
