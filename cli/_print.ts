/**
 * How the CLI prints lines: text that came from a skill, a package, an index,
 * a sandbox or a server can hold escape sequences (`\e[2J` clears a screen),
 * so every line goes through `escapeControl` first (newline and tab kept).
 *
 * @module
 */
import { escapeControl } from "../_internal/escape_text.ts";

/**
 * Prints a line on stdout, control characters escaped.
 *
 * @param text The line.
 */
export function printLine(text: string): void {
  console.log(escapeControl(text));
}

/**
 * Prints a line on stderr, control characters escaped.
 *
 * @param text The line.
 */
export function printError(text: string): void {
  console.error(escapeControl(text));
}
