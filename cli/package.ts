/**
 * The package commands of the CLI: `pack`, `add`, `verify`, `index`.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { parseArgs, UsageError } from "./_args.ts";
import { printError, printLine } from "./_print.ts";
import { packageProgress } from "./_progress.ts";
import {
  type InstalledSkillPackage,
  installFromIndex,
  installFromPath,
  installFromStore,
  installFromUrl,
  LOCK_FILE,
  lockPackage,
  packSkill,
  readLock,
  S3SkillPackageStore,
  verifyLock,
  writeSkillIndex,
} from "../package/mod.ts";

/** One package command: its summary, help and what it does. */
export interface PackageCliCommand {
  /** One line for the list of commands. */
  readonly summary: string;
  /** The full help. */
  readonly help: string;
  /** Runs it; returns the exit code. */
  run(args: string[]): Promise<number>;
}

/** The folder `add` and `verify` use by default. */
export const DEFAULT_INTO = "skills";

/** The progress line on stderr when it is a terminal (nothing otherwise). */
function progressOnStderr(subject: string) {
  let terminal = false;
  try {
    terminal = Deno.stderr.isTerminal();
  } catch {
    terminal = false;
  }
  const encoder = new TextEncoder();
  return packageProgress({
    subject,
    terminal,
    write: (text) => {
      try {
        Deno.stderr.writeSync(encoder.encode(text));
      } catch {
        // A closed terminal loses only the progress line.
      }
    },
  });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `-o FILE` is `--output FILE`. */
function shortOutput(args: string[]): string[] {
  return args.map((arg) => arg === "-o" ? "--output" : arg);
}

const pack: PackageCliCommand = {
  summary: "Pack a skill folder into a reproducible archive; prints its digest",
  help: `Usage: skillrun pack <skill-dir> [-o FILE] [--format zip|tar.gz]

Pack a skill folder into a reproducible archive holding one top-level folder
named after the skill (sorted entries, fixed times, modes kept, secrets such
as .env and keys left out; a link in the folder is refused). Prints the
archive's digest (sha256:...) on stdout. On a terminal, a pack that takes more
than a second shows its progress on stderr (bytes, files, rate).

Options:
  -o, --output FILE  Where to write it (default ./<name>.zip or ./<name>.tar.gz)
  --format FORMAT    zip (default) or tar.gz
  --help             Show this help`,
  async run(args) {
    const { flags, positionals } = parseArgs(shortOutput(args), {
      output: "string",
      format: "string",
    });
    if (positionals.length !== 1) {
      throw new UsageError("Give exactly one skill folder");
    }
    const format = (flags.format ?? "zip") as string;
    if (format !== "zip" && format !== "tar.gz") {
      throw new UsageError(`--format must be zip or tar.gz, not "${format}"`);
    }
    const dir = positionals[0]!;
    const progress = progressOnStderr(dir);
    const onProgress = progress.onProgress
      ? { onProgress: progress.onProgress }
      : {};
    try {
      let output = flags.output as string | undefined;
      if (output === undefined) {
        // Packed once in memory to learn the name, then written.
        const packed = await packSkill(dir, { format, ...onProgress });
        progress.done();
        output = `${packed.name}.${format}`;
        await Deno.writeFile(output, packed.bytes!);
        printLine(packed.digest);
        printError(
          `wrote ${output} (${packed.size} bytes, ${packed.files} files)`,
        );
        return 0;
      }
      const packed = await packSkill(dir, { format, output, ...onProgress });
      progress.done();
      printLine(packed.digest);
      printError(
        `wrote ${output} (${packed.size} bytes, ${packed.files} files)`,
      );
      return 0;
    } catch (error) {
      progress.done();
      printError(`skillrun pack: ${message(error)}`);
      return 1;
    }
  },
};

const add: PackageCliCommand = {
  summary: "Install a skill package and record it in skills.lock.json",
  help: `Usage: skillrun add <source> [--into DIR] [--digest sha256:...]

Install a skill package into DIR (default ./${DEFAULT_INTO}) as
DIR/sha256-<hex>/<name>/, checked on the way (digest while streaming, every
entry of the archive), and record its name, source and digest in
DIR/${LOCK_FILE}. Sources:
  ./skill-dir                     a skill folder (packed first)
  ./skill.zip, ./skill.tar.gz     a local package
  https://host/skill.zip          a package URL (--digest required)
  https://host#name               skill "name" of host's well-known index
                                  (/.well-known/agent-skills/index.json)
  https://host/path/index.json#name   the same, from that index
  s3://bucket/prefix#sha256:...   a package in an S3-compatible store; the
                                  credentials come from AWS_ACCESS_KEY_ID,
                                  AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN),
                                  AWS_ENDPOINT_URL and AWS_REGION
Adding a name again replaces its entry. A digest mismatch installs nothing.
On a terminal, an install that takes more than a second shows its progress on
stderr (bytes, files, rate).

Options:
  --into DIR       The install folder and its lock (default ./${DEFAULT_INTO})
  --digest DIGEST  The digest the package must have
  --help           Show this help`,
  async run(args) {
    const { flags, positionals } = parseArgs(args, {
      into: "string",
      digest: "string",
    });
    if (positionals.length !== 1) {
      throw new UsageError("Give exactly one source");
    }
    const source = positionals[0]!;
    const into = (flags.into as string | undefined) ?? DEFAULT_INTO;
    const digest = flags.digest as string | undefined;
    const progress = progressOnStderr(source);
    const onProgress = progress.onProgress
      ? { onProgress: progress.onProgress }
      : {};
    const options = {
      root: into,
      ...(digest ? { digest } : {}),
      ...onProgress,
    };
    let pkg: InstalledSkillPackage;
    let recorded = source;
    try {
      if (/^https?:\/\//.test(source)) {
        const url = new URL(source);
        if (url.hash.length > 1) {
          const name = decodeURIComponent(url.hash.slice(1));
          url.hash = "";
          pkg = await installFromIndex(url.href, name, options);
        } else {
          if (!digest) {
            throw new UsageError(
              "A package URL needs --digest sha256:... (or use host#name for a well-known index)",
            );
          }
          pkg = await installFromUrl(url.href, digest, {
            root: into,
            ...onProgress,
          });
        }
      } else if (source.startsWith("s3://")) {
        const url = new URL(source);
        const wanted = decodeURIComponent(url.hash.slice(1)) || digest;
        if (!wanted) {
          throw new UsageError("An s3:// source needs #sha256:... or --digest");
        }
        const env = (name: string) => Deno.env.get(name) ?? "";
        const prefix = url.pathname.replace(/^\//, "");
        const store = new S3SkillPackageStore({
          endpoint: env("AWS_ENDPOINT_URL") || "https://s3.amazonaws.com",
          bucket: url.hostname,
          ...(prefix
            ? { prefix: prefix.endsWith("/") ? prefix : `${prefix}/` }
            : {}),
          region: env("AWS_REGION") || "us-east-1",
          accessKeyId: env("AWS_ACCESS_KEY_ID"),
          secretAccessKey: env("AWS_SECRET_ACCESS_KEY"),
          ...(env("AWS_SESSION_TOKEN")
            ? { sessionToken: env("AWS_SESSION_TOKEN") }
            : {}),
        });
        pkg = await installFromStore(store, wanted, {
          root: into,
          ...onProgress,
        });
      } else {
        pkg = await installFromPath(source, options);
        recorded = hostPath.resolve(source);
      }
      progress.done();
      const lock = await readLock(into);
      const before = lock.skills[pkg.name];
      await lockPackage(into, pkg, recorded);
      printLine(`${pkg.name} ${pkg.digest}`);
      printError(
        `${
          before && before.digest !== pkg.digest ? "replaced" : "added"
        } ${pkg.name} in ${hostPath.join(into, LOCK_FILE)} (${pkg.path})`,
      );
      return 0;
    } catch (error) {
      progress.done();
      if (error instanceof UsageError) throw error;
      printError(`skillrun add: ${message(error)}`);
      return 1;
    }
  },
};

const verify: PackageCliCommand = {
  summary:
    "Check installed skills against skills.lock.json; exit 1 on a mismatch",
  help: `Usage: skillrun verify [DIR]

Check every skill of DIR/${LOCK_FILE} (default ./${DEFAULT_INTO}) against what
is on disk: its package is installed and its files are exactly the locked ones
(nothing changed, added or removed; executable bits kept). Prints one line per
skill; exit 1 when any differs.

Options:
  --help  Show this help`,
  async run(args) {
    const { positionals } = parseArgs(args, {});
    if (positionals.length > 1) throw new UsageError("Give at most one folder");
    const dir = positionals[0] ?? DEFAULT_INTO;
    try {
      const checks = await verifyLock(dir);
      if (checks.length === 0) {
        printError(
          `skillrun verify: no skills in ${hostPath.join(dir, LOCK_FILE)}`,
        );
        return 1;
      }
      let ok = true;
      for (const check of checks) {
        printLine(`${check.ok ? "ok" : "MISMATCH"}  ${check.name}`);
        for (const problem of check.problems) printLine(`    ${problem}`);
        ok &&= check.ok;
      }
      return ok ? 0 : 1;
    } catch (error) {
      printError(`skillrun verify: ${message(error)}`);
      return 1;
    }
  },
};

const index: PackageCliCommand = {
  summary: "Write a well-known index (index.json) for a folder of packages",
  help: `Usage: skillrun index <dir-of-packages> [--base-url URL]

Write <dir>/index.json, a well-known skills index (Agent Skills discovery
v0.2.0: {name, type: "archive", description, url, digest}) listing every
*.zip, *.tar.gz and *.tgz of the folder, each checked first. Serve the folder
as /.well-known/agent-skills/.

Options:
  --base-url URL  The URL the folder is served at (entries get absolute URLs;
                  default: URLs relative to the index)
  --help          Show this help`,
  async run(args) {
    const { flags, positionals } = parseArgs(args, { "base-url": "string" });
    if (positionals.length !== 1) {
      throw new UsageError("Give exactly one folder of packages");
    }
    try {
      const baseUrl = flags["base-url"] as string | undefined;
      const written = await writeSkillIndex(
        positionals[0]!,
        baseUrl ? { baseUrl } : {},
      );
      for (const skill of written.skills) {
        printLine(`${skill.name} ${skill.digest} ${skill.url}`);
      }
      printError(
        `wrote ${
          hostPath.join(positionals[0]!, "index.json")
        } (${written.skills.length} skills)`,
      );
      return 0;
    } catch (error) {
      printError(`skillrun index: ${message(error)}`);
      return 1;
    }
  },
};

/** The package commands, by name. */
export const PACKAGE_COMMANDS: Readonly<Record<string, PackageCliCommand>> =
  Object.freeze({ pack, add, verify, index });
