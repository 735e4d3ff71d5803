/**
 * A small real tool for the adapter tests: it echoes its input.
 *
 * @module
 */
import type { Tool, ToolResult } from "../../tools/types.ts";
import { validateInput } from "../../tools/_input.ts";

/** A tool that returns its validated input as JSON; `fail: true` makes an error result. */
export const echoTool: Tool = {
  name: "echo",
  description: "Echoes its input.",
  inputSchema: {
    type: "object",
    properties: {
      text: { type: "string", description: "What to echo." },
      times: { type: "integer", minimum: 1, description: "How often." },
      fail: { type: "boolean", description: "Return an error result." },
    },
    required: ["text"],
    additionalProperties: false,
  },
  execute(input: unknown, options = {}): Promise<ToolResult> {
    const checked = validateInput(echoTool.inputSchema, input);
    if (!checked.ok) {
      return Promise.resolve({ text: checked.message, isError: true });
    }
    return Promise.resolve({
      text: `${JSON.stringify(checked.value)}${
        options.signal ? " (signal)" : ""
      }`,
      isError: checked.value.fail === true,
    });
  },
};
