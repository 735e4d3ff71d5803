/**
 * The `skillrun` command line.
 *
 * ```sh
 * deno run -A cli.ts list [--json] <dir>...        # skills found, with warnings
 * deno run -A cli.ts validate [--json] <path>...   # strict check; exit 1 if invalid
 * deno run -A cli.ts run <skills-dir> <skill> -- <command>  # run in the skill's folder
 * deno run -A cli.ts mcp --skills <dir>             # serve the tools over MCP (stdio)
 * deno run -A cli.ts doctor [--isolate] [--json]    # what the runtime can reach
 * deno run -A cli.ts run --isolate <dir> <skill> -- <command>  # in a sandbox
 * deno run -A cli.ts list --catalog <dir>           # the catalog text a system prompt carries
 * deno run -A cli.ts pack <skill-dir> [-o FILE] [--format zip|tar.gz]  # prints the digest
 * deno run -A cli.ts add <source> [--into DIR] [--digest sha256:...]   # install + lock
 * deno run -A cli.ts verify [DIR]                   # lock vs disk; exit 1 on a mismatch
 * deno run -A cli.ts index <dir-of-packages> [--base-url URL]  # well-known index.json
 * deno run -A cli.ts --version
 * deno run -A cli.ts <command> --help
 * ```
 *
 * Exit codes: 0 success, 1 a skill is invalid or a path cannot be used, 2 bad
 * usage (unknown command or option, missing argument). `run` passes the
 * command's own exit code through (124 on `--timeout`, 130 on Ctrl-C).
 *
 * Needs `--allow-read` of the given paths (and of the current folder for
 * relative paths). `run` and `mcp` also need `--allow-run=bash` (`mcp`: and
 * `rg` when installed), `--allow-write` of what the tools may write (with
 * `--conversation`: the conversations root), and `--allow-env=PATH` so that
 * commands find the running `deno`. With `--isolate` (a bubblewrap sandbox
 * per command), `--allow-run=bwrap,bash`.
 *
 * @module
 */
import { hostPath } from "./_internal/std.ts";
import { VERSION } from "./_internal/version.ts";
import { formatCatalog } from "./skill/catalog.ts";
import { findSkillFolders, loadSkills } from "./skill/load.ts";
import { parseScopes, SCOPE_OPTION_HELP } from "./cli/_scope.ts";
import { validateSkill, type ValidationProblem } from "./skill/validate.ts";
import type { Skill } from "./skill/types.ts";
import {
  parseArgs,
  SKILLS_OPTION_HELP,
  splitList,
  UsageError,
} from "./cli/_args.ts";
import { RUN_HELP, runCommand } from "./cli/run.ts";
import { MCP_HELP, mcpCommand } from "./cli/mcp.ts";
import { DOCTOR_HELP, doctorCommand } from "./cli/doctor.ts";
import { PACKAGE_COMMANDS } from "./cli/package.ts";
import { printError, printLine } from "./cli/_print.ts";
import {
  CATALOG_BUDGET_HELP,
  catalogUsage,
  formatCatalogUsage,
  parseCatalogBudget,
} from "./cli/_catalog.ts";

/** One subcommand: its help and what it does. */
export interface CliCommand {
  /** One line for the list of commands. */
  readonly summary: string;
  /** The full help, printed by `<command> --help`. */
  readonly help: string;
  /**
   * Runs the command with the arguments after its name (`--help` is handled
   * before). Returns the exit code; throws the `UsageError` of `cli/_args.ts`
   * for bad usage (printed with the help, exit code 2).
   */
  run(args: string[]): Promise<number>;
}

function firstLine(text: string, max: number): string {
  const line = text.split("\n", 1)[0]!.trim();
  const chars = Array.from(line);
  return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : line;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function skillJson(skill: Skill): Record<string, unknown> {
  return {
    name: skill.name,
    description: skill.description,
    location: skill.location,
    basePath: skill.basePath,
    ...(skill.license === undefined ? {} : { license: skill.license }),
    ...(skill.compatibility === undefined
      ? {}
      : { compatibility: skill.compatibility }),
    ...(skill.metadata === undefined ? {} : { metadata: skill.metadata }),
    ...(skill.allowedTools === undefined
      ? {}
      : { allowedTools: skill.allowedTools }),
    warnings: skill.warnings,
  };
}

const listCommand: CliCommand = {
  summary: "List the skills found in folders, with their warnings",
  help:
    `Usage: skillrun list [--json | --catalog] [--skills <dir>]... [--scope <scopes>] [<dir>...]

List the skills found in each folder (a skill folder or a folder of skills,
searched to 5 levels), leniently: skills that break the Agent Skills rules are
listed with warnings; files that cannot be used are reported on stderr.
Folders are given with --skills or as arguments, by the same rule.

Options:
${SKILLS_OPTION_HELP}
${SCOPE_OPTION_HELP}
  --json               Print a JSON array of {name, description, location,
                       basePath, license?, compatibility?, metadata?,
                       allowedTools?, warnings, inCatalog}
  --catalog            Print the catalog a model is given (the text the skill
                       tool's description and a system prompt carry)
${CATALOG_BUDGET_HELP}  --help               Show this help

The lines before the count say how much of the catalog budget the skills take
and, over it, which skills fall outside the skill tool's listing (in --json:
inCatalog false).`,
  async run(args) {
    const { flags, lists, positionals, rest } = parseArgs(args, {
      json: "boolean",
      catalog: "boolean",
      skills: "list",
      scope: "list",
      "catalog-budget": "string",
    });
    const scopes = lists.scope ? parseScopes(lists.scope) : undefined;
    const budget = parseCatalogBudget(flags["catalog-budget"]);
    if (flags.json && flags.catalog) {
      throw new UsageError(
        'Options "--json" and "--catalog" exclude each other',
      );
    }
    const dirs = [
      ...(lists.skills ?? []),
      ...[...positionals, ...(rest ?? [])].flatMap(splitList),
    ];
    if (dirs.length === 0 && scopes === undefined) {
      throw new UsageError("Missing argument: at least one folder");
    }
    let result;
    try {
      result = await loadSkills(dirs, scopes ? { scopes } : {});
    } catch (error) {
      printError(`skillrun list: ${describeError(error)}`);
      return 1;
    }
    for (const warning of result.warnings) printError(`warning: ${warning}`);
    let usage;
    try {
      usage = catalogUsage(result.skills, budget);
    } catch (error) {
      printError(`skillrun list: ${describeError(error)}`);
      return 1;
    }
    if (flags.catalog) {
      printLine(formatCatalog(result.skills));
      return 0;
    }
    if (flags.json) {
      const outside = new Set(usage?.outside);
      printLine(JSON.stringify(
        result.skills.map((skill) => ({
          ...skillJson(skill),
          inCatalog: !outside.has(skill.name),
        })),
        null,
        2,
      ));
      return 0;
    }
    for (const skill of result.skills) {
      printLine(`${skill.name}  ${skill.location}`);
      printLine(`    ${firstLine(skill.description, 100)}`);
      for (const warning of skill.warnings) {
        printLine(`    warning: ${warning}`);
      }
    }
    const count = result.skills.length;
    if (usage) printLine(formatCatalogUsage(usage).trimEnd());
    printLine(`${count} skill${count === 1 ? "" : "s"}`);
    return 0;
  },
};

interface Checked {
  path: string;
  name?: string;
  problems: ValidationProblem[];
}

async function checkPath(path: string): Promise<Checked[]> {
  let isFolder: boolean;
  try {
    isFolder = (await Deno.stat(path)).isDirectory;
  } catch (error) {
    return [unreadable(path, error)];
  }
  const targets = [path];
  if (isFolder && !(await exists(hostPath.join(path, "SKILL.md")))) {
    // A folder of skills: check each one found in it.
    try {
      const { folders, warnings } = await findSkillFolders(path);
      for (const warning of warnings) printError(`warning: ${warning}`);
      if (folders.length > 0) targets.splice(0, 1, ...[...folders].sort());
    } catch (error) {
      return [unreadable(path, error)];
    }
  }
  const checked: Checked[] = [];
  for (const target of targets) {
    let problems: ValidationProblem[];
    try {
      problems = await validateSkill(target);
    } catch (error) {
      checked.push(unreadable(target, error));
      continue;
    }
    const entry: Checked = { path: target, problems };
    const name = await nameOf(target);
    if (name !== undefined) entry.name = name;
    checked.push(entry);
  }
  return checked;
}

function unreadable(path: string, error: unknown): Checked {
  const message = error instanceof Deno.errors.NotFound
    ? `path: no such file or folder "${path}"`
    : `path: cannot read "${path}": ${describeError(error)}`;
  return { path, problems: [{ field: "path", message }] };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function nameOf(path: string): Promise<string | undefined> {
  try {
    const { skills } = await loadSkills(path, { maxDepth: 0 });
    return skills[0]?.name;
  } catch {
    return undefined;
  }
}

const validateCommand: CliCommand = {
  summary: "Check skills strictly against the Agent Skills rules",
  help: `Usage: skillrun validate [--json] <path>...

Check each skill strictly against the Agent Skills rules (name, description,
compatibility, license, metadata, allowed-tools, unknown fields, YAML). A path
is a skill folder, its SKILL.md, or a folder of skills (each one is checked).
Exits with 1 when any skill is invalid.

Options:
  --json    Print a JSON array of {path, name?, valid, problems: [{field, message}]}
  --help    Show this help`,
  async run(args) {
    const { flags, positionals, rest } = parseArgs(args, { json: "boolean" });
    const paths = [...positionals, ...(rest ?? [])];
    if (paths.length === 0) {
      throw new UsageError("Missing argument: at least one skill folder");
    }
    const checked: Checked[] = [];
    for (const path of paths) checked.push(...await checkPath(path));
    const invalid = checked.filter((c) => c.problems.length > 0).length;
    if (flags.json) {
      printLine(JSON.stringify(
        checked.map((c) => ({
          path: c.path,
          ...(c.name === undefined ? {} : { name: c.name }),
          valid: c.problems.length === 0,
          problems: c.problems,
        })),
        null,
        2,
      ));
    } else {
      for (const c of checked) {
        const label = c.name === undefined ? c.path : `${c.name} (${c.path})`;
        printLine(`${c.problems.length ? "invalid" : "ok     "} ${label}`);
        for (const p of c.problems) printLine(`  - ${p.message}`);
      }
      printLine(`${checked.length - invalid} valid, ${invalid} invalid`);
    }
    return invalid > 0 ? 1 : 0;
  },
};

const runCliCommand: CliCommand = {
  summary: "Prepare a skill and run a command in its folder",
  help: RUN_HELP.trimEnd(),
  run: (args) => runCommand(args),
};

const mcpCliCommand: CliCommand = {
  summary:
    "Serve the skill tools to an MCP client (stdio, or HTTP with --http)",
  help: MCP_HELP.trimEnd(),
  run: (args) => mcpCommand(args),
};

const doctorCliCommand: CliCommand = {
  summary: "Report what the local runtime can reach and what it needs",
  help: DOCTOR_HELP.trimEnd(),
  run: (args) => doctorCommand(args),
};

/** The subcommands. Adding one is adding an entry. */
const COMMANDS: Readonly<Record<string, CliCommand>> = {
  list: listCommand,
  validate: validateCommand,
  run: runCliCommand,
  mcp: mcpCliCommand,
  doctor: doctorCliCommand,
  ...PACKAGE_COMMANDS,
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) =>
    `  ${name.padEnd(width)}  ${command.summary}`
  );
  return `Usage: skillrun <command> [options] [arguments]

Use Agent Skills (folders with a SKILL.md) from the command line.

Commands:
${lines.join("\n")}

Options:
  --version  Print the version
  --help     Show this help

Run "skillrun <command> --help" for a command's options.`;
}

/**
 * Runs the command line: dispatches to a subcommand (`list`, `validate`...),
 * printing to stdout and stderr.
 *
 * Needs `--allow-read` of the paths given.
 *
 * @param args The command-line arguments, e.g. `Deno.args`.
 * @returns The exit code: 0 success, 1 failure (invalid skill, unusable path),
 * 2 bad usage.
 *
 * @example Listing skills as JSON
 * ```ts
 * import { assert } from "@std/assert";
 * import { main } from "@skillrun/skillrun/cli";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/hello`);
 * await Deno.writeTextFile(
 *   `${root}/hello/SKILL.md`,
 *   "---\nname: hello\ndescription: Says hello.\n---\n",
 * );
 * assert(await main(["validate", `${root}/hello`]) === 0);
 * assert(await main(["nope"]) === 2);
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function main(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    printError(mainHelp());
    return 2;
  }
  if (name === "--version" || name === "-V") {
    printLine(`skillrun ${VERSION}`);
    return 0;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    const topic = rest[0];
    if (topic === undefined) {
      printLine(mainHelp());
      return 0;
    }
    if (!Object.hasOwn(COMMANDS, topic)) {
      printError(`skillrun: unknown command "${topic}"\n\n${mainHelp()}`);
      return 2;
    }
    printLine(COMMANDS[topic]!.help);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    printError(`skillrun: unknown command "${name}"\n\n${mainHelp()}`);
    return 2;
  }
  const options = rest.includes("--")
    ? rest.slice(0, rest.indexOf("--"))
    : rest;
  if (options.includes("--help") || options.includes("-h")) {
    printLine(command.help);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      printError(`skillrun ${name}: ${error.message}\n\n${command.help}`);
      return 2;
    }
    throw error;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
