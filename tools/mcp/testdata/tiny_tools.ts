// Tiny tools for the MCP server's tests, and a stdio server over them when run.
import type { Tool } from "../../types.ts";
import { serveMcp } from "../mod.ts";

const textInput = {
  type: "object",
  properties: { text: { type: "string", description: "Any text" } },
  required: ["text"],
  additionalProperties: false,
} as const;

/** Tools with every kind of outcome. */
export const tinyTools: Tool[] = [
  {
    name: "echo",
    description: "Repeats the text",
    inputSchema: textInput,
    execute: (input) =>
      Promise.resolve({
        text: `echo: ${(input as { text?: unknown }).text}`,
        isError: false,
      }),
  },
  {
    name: "fail",
    description: "Fails with the text",
    inputSchema: textInput,
    execute: (input) =>
      Promise.resolve({
        text: `Cannot do "${(input as { text?: unknown }).text}": it fails`,
        isError: true,
      }),
  },
  {
    name: "throws",
    description: "Breaks the Tool contract by throwing",
    inputSchema: {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
    },
    execute: () => Promise.reject(new Error("boom")),
  },
  {
    name: "sleep",
    description: "Answers after some milliseconds",
    inputSchema: {
      type: "object",
      properties: { ms: { type: "integer", minimum: 0 } },
      required: ["ms"],
      additionalProperties: false,
    },
    execute: (input) =>
      new Promise((resolve) => {
        const ms = (input as { ms: number }).ms;
        setTimeout(
          () => resolve({ text: `slept ${ms} ms`, isError: false }),
          ms,
        );
      }),
  },
  {
    name: "wait",
    description: "Waits until its call is cancelled",
    inputSchema: {
      type: "object",
      properties: { ms: { type: "integer", minimum: 1 } },
      required: [],
      additionalProperties: false,
    },
    execute: (_input, options) =>
      new Promise((resolve) => {
        const signal = options?.signal;
        if (signal === undefined) {
          resolve({ text: "no signal", isError: true });
          return;
        }
        signal.addEventListener("abort", () => {
          resolve({ text: "cancelled", isError: true });
        }, { once: true });
      }),
  },
];

if (import.meta.main) {
  await serveMcp(tinyTools);
  console.error("tiny server: closed");
}
