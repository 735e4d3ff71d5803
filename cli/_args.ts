/**
 * A small command-line parser shared by the subcommands: `--name value`,
 * `--name=value`, boolean flags, positionals, and everything after `--` kept
 * apart.
 *
 * @module
 */
import { shellJoin } from "../_internal/shell_quote.ts";

/**
 * The kind of value a flag takes: `list` may be repeated, and each of its
 * values may be a comma-separated list (`--skills a --skills b,c`).
 */
export type FlagKind = "string" | "boolean" | "list";

/** What {@linkcode parseArgs} returns. */
export interface ParsedArgs {
  /** The flags given, by name (without dashes); a `list` flag is not here. */
  readonly flags: Readonly<Record<string, string | boolean>>;
  /** The values of each `list` flag given, commas split, in order. */
  readonly lists: Readonly<Record<string, readonly string[]>>;
  /** The arguments that are not flags, before `--`. */
  readonly positionals: readonly string[];
  /** Everything after the first `--`, untouched; `undefined` without `--`. */
  readonly rest: readonly string[] | undefined;
}

/** A command-line mistake; the CLI prints its message and exits with 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * Parses arguments against a table of known flags. `-h` is read as `--help`.
 *
 * @param args The arguments after the subcommand's name.
 * @param known The flags the subcommand accepts and their kinds.
 * @returns Flags, positionals and what follows `--`.
 * @throws {UsageError} An unknown flag, a missing value, a value given to a
 * boolean flag, or a flag given twice.
 *
 * @example Parsing a subcommand's arguments
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseArgs } from "./_args.ts";
 * const parsed = parseArgs(["skills", "--timeout=5", "x", "--", "ls", "-l"], {
 *   timeout: "string",
 * });
 * assert(parsed.flags.timeout === "5");
 * assert(parsed.positionals.join() === "skills,x");
 * assert(parsed.rest?.join(" ") === "ls -l");
 * ```
 */
export function parseArgs(
  args: readonly string[],
  known: Readonly<Record<string, FlagKind>>,
): ParsedArgs {
  const flags: Record<string, string | boolean> = {};
  const lists: Record<string, string[]> = {};
  const positionals: string[] = [];
  let rest: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      rest = args.slice(i + 1);
      break;
    }
    if (arg === "-h") {
      flags.help = true;
      continue;
    }
    if (!arg.startsWith("--") || arg === "-") {
      if (arg.startsWith("-") && arg !== "-") {
        throw new UsageError(`Unknown option "${arg}"`);
      }
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const kind = name === "help" ? "boolean" : known[name];
    if (kind === undefined) throw new UsageError(`Unknown option "--${name}"`);
    if (kind !== "list" && Object.hasOwn(flags, name)) {
      throw new UsageError(`Option "--${name}" is given more than once`);
    }
    if (kind === "boolean") {
      if (eq !== -1) {
        throw new UsageError(`Option "--${name}" takes no value`);
      }
      flags[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      value = args[i + 1];
      if (value === undefined || value === "--") {
        throw new UsageError(`Option "--${name}" needs a value`);
      }
      i++;
    }
    if (kind === "list") {
      const values = splitList(value);
      if (values.length === 0) {
        throw new UsageError(`Option "--${name}" needs a value`);
      }
      (lists[name] ??= []).push(...values);
      continue;
    }
    flags[name] = value;
  }
  return { flags, lists, positionals, rest };
}

/**
 * The one rule for naming several skill folders, on every command: repeat
 * `--skills`, or separate folders with commas (in `--skills` and in a
 * positional folder alike). Empty items are dropped.
 *
 * @param value One argument.
 * @returns The folders it names.
 *
 * @example Splitting a comma list
 * ```ts
 * import { assert } from "@std/assert";
 * import { splitList } from "./_args.ts";
 * assert(splitList("a,b,,c").join(" ") === "a b c");
 * ```
 */
export function splitList(value: string): string[] {
  return value.split(",").filter((item) => item !== "");
}

/** The line of every command's help that states the rule of {@linkcode splitList}. */
export const SKILLS_OPTION_HELP: string =
  `  --skills <dir>       A skill folder or a folder of skills (several: repeat
                       --skills or separate folders with commas)`;

/**
 * Turns the words after `--` into one shell command: a single word is used as
 * it is (so `-- 'ls | wc -l'` keeps its pipe); several words are each quoted,
 * so `-- python3 x.py "a b"` passes `a b` as one argument.
 *
 * @param words The words after `--`.
 * @returns The command line for `bash -c`.
 * @throws {UsageError} No words, or only blank ones.
 *
 * @example Joining words
 * ```ts
 * import { assert } from "@std/assert";
 * import { commandLine } from "./_args.ts";
 * assert(commandLine(["ls | wc -l"]) === "ls | wc -l");
 * assert(commandLine(["echo", "a b", "it's"]) === "echo 'a b' 'it'\\''s'");
 * ```
 */
export function commandLine(words: readonly string[]): string {
  if (words.length === 0 || words.every((word) => word.trim() === "")) {
    throw new UsageError('No command given after "--"');
  }
  if (words.length === 1) return words[0]!;
  return shellJoin(words);
}
