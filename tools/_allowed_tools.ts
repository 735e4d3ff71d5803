/**
 * A skill's `allowed-tools` (Claude Code's syntax) as rules, and whether
 * they cover one tool call. Strict: a `bash` command is split into its parts
 * by `shell-quote`'s tokenizer, each part must be covered, and anything that
 * cannot be read safely (substitutions, variables, redirections, subshells,
 * backslashes, comments, unbalanced quotes) is never covered (it asks).
 *
 * @module
 */
// @ts-types="npm:@types/shell-quote@1.7.5"
import type { parse as Parse } from "shell-quote";

// shell-quote is CommonJS: loading it costs every cold start about 20 ms,
// so it is loaded when a skill with command patterns becomes active
// (`loadCommandParser()`), not at import.
let parse: typeof Parse | undefined;

/**
 * Loads the command tokenizer that {@linkcode commandParts} needs (once).
 *
 * @returns When it is loaded.
 */
export async function loadCommandParser(): Promise<void> {
  parse ??= (await import("shell-quote")).parse as typeof Parse;
}

/** One `allowed-tools` entry understood. */
export interface AllowedToolRule {
  /** Our tool name, e.g. `bash`, `read`, `bash_output`. */
  readonly tool: string;
  /**
   * For `bash` with a command: its words, and whether further arguments are
   * allowed (`Bash(git:*)`, `Bash(git *)`) or not (`Bash(npm run test)`).
   * Absent: every call of the tool (`Read`, `Bash`, `Bash(*)`).
   */
  readonly command?: {
    readonly words: readonly string[];
    readonly prefix: boolean;
  };
}

/** The rules of a list of entries, and the entries left out (with why). */
export interface AllowedToolRules {
  /** The entries understood. */
  readonly rules: readonly AllowedToolRule[];
  /** Entries that pre-approve nothing, each with the reason. */
  readonly ignored: readonly string[];
}

// Claude Code's tool names that differ from ours once snake_cased.
const ALIASES: Readonly<Record<string, string>> = {
  kill_shell: "kill_bash",
  ls: "ls",
  multi_edit: "edit",
};

/** `BashOutput` → `bash_output`, `Read` → `read`. */
function ourToolName(name: string): string {
  const snake = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
  return ALIASES[snake] ?? snake;
}

// Characters a pattern's words may hold (nothing the shell would read).
const PLAIN_WORD = /^[A-Za-z0-9_./:=@%+,^~-]+$/;

/**
 * Reads `allowed-tools` entries: `Read`, `Bash`, `Bash(*)`, `Bash(git:*)`,
 * `Bash(git diff:*)`, `Bash(git *)`, `Bash(npm run test)`. Tool names match
 * ours case-insensitively (`BashOutput` → `bash_output`). Anything else (a
 * path pattern on a file tool, quotes or operators in a command pattern, a
 * `*` inside it) pre-approves nothing and is listed in `ignored`.
 *
 * @param entries The skill's `allowedTools`.
 * @returns The rules and the ignored entries.
 */
export function parseAllowedTools(
  entries: readonly string[],
): AllowedToolRules {
  const rules: AllowedToolRule[] = [];
  const ignored: string[] = [];
  for (const raw of entries) {
    const entry = typeof raw === "string" ? raw.trim() : "";
    const match = /^([A-Za-z][A-Za-z0-9_]*)(?:\((.*)\))?$/s.exec(entry);
    if (!match) {
      ignored.push(`${JSON.stringify(raw)}: not a tool name nor Tool(...)`);
      continue;
    }
    const tool = ourToolName(match[1]!);
    const spec = match[2]?.trim();
    if (spec === undefined || spec === "*" || spec === "") {
      rules.push({ tool });
      continue;
    }
    if (tool !== "bash") {
      ignored.push(
        `${
          JSON.stringify(raw)
        }: only Bash takes a pattern (a file tool's path pattern is not supported)`,
      );
      continue;
    }
    let text = spec;
    let prefix = false;
    if (text.endsWith(":*")) {
      text = text.slice(0, -2);
      prefix = true;
    } else if (/\s\*$/.test(text)) {
      text = text.slice(0, -1);
      prefix = true;
    }
    const words = text.trim().split(/\s+/).filter((word) => word !== "");
    if (words.length === 0 || !words.every((word) => PLAIN_WORD.test(word))) {
      ignored.push(
        `${
          JSON.stringify(raw)
        }: a command pattern is plain words, optionally ending in ":*" or " *"`,
      );
      continue;
    }
    rules.push({ tool, command: { words, prefix } });
  }
  return { rules, ignored };
}

/** Control operators: each side is a part, covered on its own. */
const CONTROL = new Set([";", "&&", "||", "|", "&", "|&", ";;"]);

// What is never read safely, anywhere in a command: substitutions and
// variables ($), backticks, escapes and line continuations (\), carriage
// returns and other control characters but tab and newline.
// deno-lint-ignore no-control-regex
const UNSAFE = /[`$\\\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/**
 * The parts of a command (the words of each simple command between control
 * operators and newlines), or `undefined` when it cannot be read safely.
 *
 * @param command The command as the model gave it.
 * @returns Each part's words.
 */
export function commandParts(command: string): string[][] | undefined {
  if (!parse) {
    throw new Error(
      "commandParts() before loadCommandParser(): the tokenizer is not loaded",
    );
  }
  if (UNSAFE.test(command)) return undefined;
  const parts: string[][] = [];
  for (const line of command.split("\n")) {
    // A newline inside quotes would join two lines we split: asks.
    if (!quotesBalanced(line)) return undefined;
    let tokens: ReturnType<typeof Parse>;
    try {
      tokens = parse(line, (name: string) => ({ op: "var", name }) as never);
    } catch {
      return undefined;
    }
    let words: string[] = [];
    for (const token of tokens) {
      if (typeof token === "string") {
        words.push(token);
        continue;
      }
      if ("op" in token && CONTROL.has(token.op)) {
        if (words.length) parts.push(words);
        words = [];
        continue;
      }
      // A glob is an argument the shell expands: only as an argument.
      if ("op" in token && token.op === "glob") {
        words.push(GLOB + token.pattern);
        continue;
      }
      // Redirections, subshells, process substitution, variables, comments.
      return undefined;
    }
    if (words.length) parts.push(words);
  }
  return parts;
}

// Marks a glob word so that it never equals a pattern's word.
const GLOB = "\u0000glob:";

function quotesBalanced(line: string): boolean {
  let quote: string | undefined;
  for (const char of line) {
    if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
  }
  return quote === undefined;
}

/** Whether one part's words are covered by a command rule. */
function partCovered(
  words: readonly string[],
  rule: NonNullable<AllowedToolRule["command"]>,
): boolean {
  if (
    rule.prefix
      ? words.length < rule.words.length
      : words.length !== rule.words.length
  ) {
    return false;
  }
  for (let i = 0; i < rule.words.length; i++) {
    if (words[i] !== rule.words[i]) return false;
  }
  return true;
}

/**
 * Whether the rules cover a `bash` command: every part of it covered by one
 * rule (a rule without a command covers all). A command that cannot be read
 * safely is covered only by such a rule.
 *
 * @param rules The rules (only `bash` rules count).
 * @param command The command.
 * @returns Whether it is covered.
 */
export function commandCovered(
  rules: readonly AllowedToolRule[],
  command: string,
): boolean {
  const bash = rules.filter((rule) => rule.tool === "bash");
  if (bash.some((rule) => rule.command === undefined)) return true;
  if (bash.length === 0) return false;
  const parts = commandParts(command);
  if (parts === undefined || parts.length === 0) return false;
  return parts.every((words) =>
    bash.some((rule) => partCovered(words, rule.command!))
  );
}

/**
 * Whether the rules cover one call: a rule naming the tool without a
 * pattern, or, for `bash`, every part of its command.
 *
 * @param rules The rules.
 * @param tool The tool called.
 * @param input Its validated input.
 * @returns Whether it is covered.
 */
export function callCovered(
  rules: readonly AllowedToolRule[],
  tool: string,
  input: Readonly<Record<string, unknown>>,
): boolean {
  if (tool === "bash") {
    return typeof input.command === "string" &&
      commandCovered(rules, input.command);
  }
  return rules.some((rule) => rule.tool === tool && rule.command === undefined);
}
