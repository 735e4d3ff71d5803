/**
 * Reads the `--config` file of `run` and `mcp`: the application-side runtime
 * configuration of each skill (environment and bootstrap commands), as JSON.
 *
 * ```json
 * {
 *   "csv-report": {
 *     "env": { "REPORT_TITLE": "Sales" },
 *     "bootstrap": ["bash scripts/bootstrap.sh", { "command": "make", "timeoutMs": 60000 }]
 *   }
 * }
 * ```
 *
 * @module
 */
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { UsageError } from "./_args.ts";

/** The most bytes of a configuration file: 1 MiB. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Reads and validates a configuration file. Messages name the file and the
 * skill, never a value.
 *
 * Permissions: `--allow-read` of the file.
 *
 * @param path The JSON file.
 * @returns The configuration of each skill, by name (trimmed).
 * @throws {UsageError} The file cannot be read, is not JSON, is not an object
 * of objects, or a configuration is invalid.
 *
 * @example Reading a configuration file
 * ```ts
 * import { readConfigFile } from "./_config.ts";
 * import { assert } from "@std/assert";
 * const file = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(file, '{"demo": {"env": {"A": "1"}, "bootstrap": ["true"]}}');
 * const configs = await readConfigFile(file);
 * assert(configs.get("demo")?.env.A === "1");
 * await Deno.remove(file);
 * ```
 */
export async function readConfigFile(
  path: string,
): Promise<Map<string, SkillRuntimeConfig>> {
  let text: string;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) throw new Error("not a file");
    if (info.size > MAX_CONFIG_BYTES) {
      throw new Error(`larger than the ${MAX_CONFIG_BYTES} bytes limit`);
    }
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new UsageError(
      `Cannot read config "${path}": ${
        error instanceof Deno.errors.NotFound ? "no such file" : message(error)
      }`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `Cannot read config "${path}": not valid JSON (${jsonProblem(error)})`,
    );
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new UsageError(
      `Cannot read config "${path}": expected an object of skill names`,
    );
  }
  const configs = new Map<string, SkillRuntimeConfig>();
  for (const [rawName, options] of Object.entries(data)) {
    const name = rawName.trim();
    if (
      options === null || typeof options !== "object" || Array.isArray(options)
    ) {
      throw new UsageError(
        `Cannot read config "${path}": skill "${name}" must be an object with "env" and "bootstrap"`,
      );
    }
    const unknown = Object.keys(options).filter((key) =>
      key !== "env" && key !== "bootstrap"
    );
    if (unknown.length > 0) {
      throw new UsageError(
        `Cannot read config "${path}": skill "${name}" has unknown field "${
          unknown[0]
        }" (expected "env" and "bootstrap")`,
      );
    }
    const { env, bootstrap } = options as {
      env?: unknown;
      bootstrap?: unknown;
    };
    if (
      env !== undefined &&
      (env === null || typeof env !== "object" || Array.isArray(env))
    ) {
      throw new UsageError(
        `Cannot read config "${path}": skill "${name}": "env" must be an object of names and string values`,
      );
    }
    if (bootstrap !== undefined && !Array.isArray(bootstrap)) {
      throw new UsageError(
        `Cannot read config "${path}": skill "${name}": "bootstrap" must be a list of commands`,
      );
    }
    try {
      configs.set(name, new SkillRuntimeConfig(options));
    } catch (error) {
      throw new UsageError(
        `Cannot read config "${path}": skill "${name}": ${message(error)}`,
      );
    }
  }
  return configs;
}

/**
 * The parser's complaint without the text it quotes: V8 shows the source
 * around an unexpected token (`Unexpected token 's', ..."KEY": s3cr"...`),
 * which may be a secret value.
 */
function jsonProblem(error: unknown): string {
  const text = message(error);
  if (!text.endsWith("is not valid JSON")) return text;
  const head = text.replace(/\s*'.*$/s, "").replace(/[\s,]+$/, "");
  return `${head || "Unexpected text"}; the text around it is not shown`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
