/**
 * The egress flags shared by `run`, `mcp` and `doctor`: `--allow-host`,
 * `--deny-host`, `--secret NAME=HOST[,HOST...]` and `--resolve HOST=IP`
 * (each repeatable, and each a comma list as every list flag of the CLI:
 * in `--secret A=h1,h2,B=h3` an item without `=` is one more host of the
 * secret before it), turned into the isolated runtime's options. A secret's
 * value comes from the CLI's own environment variable of that name and never
 * appears in a message.
 *
 * @module
 */
import type { EgressOptions } from "../network/sandbox.ts";
import { EgressPolicy, type SecretSpec } from "../network/policy.ts";
import { type FlagKind, splitList, UsageError } from "./_args.ts";

/** The egress flags and their kinds, for {@linkcode parseArgs}. */
export const EGRESS_FLAGS: Readonly<Record<string, FlagKind>> = {
  "allow-host": "list",
  "deny-host": "list",
  secret: "list",
  resolve: "list",
};

/** The help lines of the egress flags. */
export const EGRESS_HELP: string =
  `  --allow-host PATTERN With --isolate: commands reach this host through a
                       policy proxy on the host, and nothing else (repeatable;
                       "api.example.com", "*.example.com", optional ":port",
                       default ports 80 and 443); loopback, private and
                       metadata addresses are refused
  --deny-host PATTERN  Never this host, even if allowed (repeatable)
  --secret NAME=HOST[,HOST...]
                       Commands see a placeholder in $NAME; the proxy puts
                       the value of this program's $NAME in the headers of
                       HTTPS requests to those hosts only (repeatable)
  --resolve HOST=IP    The proxy uses IP for HOST (like curl's --resolve); a
                       mapped name may reach a loopback or private address
                       (repeatable)
`;

/**
 * The isolated runtime's egress options from the parsed lists.
 *
 * @param lists The repeatable flags given.
 * @param flags The other flags (`--isolate`, `--allow-net`).
 * @param env Reads a variable of the CLI's environment (the secrets' values).
 * @returns The options, or `{}` when no egress flag is given.
 * @throws {UsageError} An egress flag without `--isolate`, `--allow-host`
 * or `--deny-host` with `--allow-net`, a malformed `--secret` or
 * `--resolve`, or a secret whose variable is not set.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { egressOptions } from "./_egress.ts";
 * const options = egressOptions(
 *   { "allow-host": ["pypi.org"], secret: ["TOKEN=api.example.com"] },
 *   { isolate: true },
 *   (name) => name === "TOKEN" ? "t0ken" : undefined,
 * );
 * assert(options.network?.allow[0] === "pypi.org");
 * assert(options.secrets?.TOKEN?.hosts[0] === "api.example.com");
 * ```
 */
export function egressOptions(
  lists: Readonly<Record<string, readonly string[]>>,
  flags: Readonly<Record<string, string | boolean>>,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): EgressOptions {
  const allow = lists["allow-host"] ?? [];
  const deny = lists["deny-host"] ?? [];
  const secretFlags = lists.secret ?? [];
  const resolveFlags = lists.resolve ?? [];
  const given = [
    ["--allow-host", allow],
    ["--deny-host", deny],
    ["--secret", secretFlags],
    ["--resolve", resolveFlags],
  ] as const;
  const first = given.find(([, values]) => values.length > 0);
  if (first === undefined) return {};
  if (flags.isolate !== true) {
    throw new UsageError(
      `Option "${
        first[0]
      }" needs "--isolate" (without it commands are not fenced at all)`,
    );
  }
  if (flags["allow-net"] === true && (allow.length > 0 || deny.length > 0)) {
    throw new UsageError(
      'Option "--allow-net" allows every host: give it or "--allow-host"/"--deny-host", not both',
    );
  }
  // The parser split every value at its commas (the CLI's one rule for list
  // flags): an item without "=" is one more host of the secret before it.
  const grouped: { name: string; flag: string; hosts: string[] }[] = [];
  for (const item of secretFlags.flatMap(splitList)) {
    const eq = item.indexOf("=");
    const last = grouped.at(-1);
    if (eq === -1 && last !== undefined) {
      last.hosts.push(item.trim());
      last.flag += `,${item}`;
      continue;
    }
    if (eq <= 0) {
      throw new UsageError(
        `Option "--secret ${item}" must be NAME=HOST[,HOST...]`,
      );
    }
    const host = item.slice(eq + 1).trim();
    grouped.push({
      name: item.slice(0, eq),
      flag: item,
      hosts: host === "" ? [] : [host],
    });
  }
  const secrets: Record<string, SecretSpec> = {};
  for (const { name, flag, hosts } of grouped) {
    if (hosts.length === 0) {
      throw new UsageError(
        `Option "--secret ${flag}" must be NAME=HOST[,HOST...]`,
      );
    }
    const value = env(name);
    if (value === undefined || value === "") {
      throw new UsageError(
        `Option "--secret ${flag}": the environment variable ${name} is not set (the value is read from it)`,
      );
    }
    if (Object.hasOwn(secrets, name)) {
      throw new UsageError(`Option "--secret" names ${name} twice`);
    }
    secrets[name] = { hosts, value };
  }
  const resolve: Record<string, string> = {};
  for (const flag of resolveFlags) {
    const eq = flag.indexOf("=");
    if (eq <= 0 || eq === flag.length - 1) {
      throw new UsageError(`Option "--resolve ${flag}" must be HOST=IP`);
    }
    resolve[flag.slice(0, eq)] = flag.slice(eq + 1);
  }
  const options: EgressOptions = {
    ...(allow.length > 0 || deny.length > 0 || flags["allow-net"] !== true
      ? { network: { allow, ...(deny.length > 0 ? { deny } : {}) } }
      : {}),
    ...(secretFlags.length > 0 ? { secrets } : {}),
    ...(resolveFlags.length > 0 ? { resolve } : {}),
  };
  try {
    EgressPolicy.create({
      ...options,
      ...(flags["allow-net"] === true ? { allowNet: true } : {}),
    });
  } catch (error) {
    if (error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
  return options;
}
