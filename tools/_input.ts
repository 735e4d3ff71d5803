/**
 * Validation of a tool call's input against the tool's JSON Schema (the small
 * subset the tools use: `string`, `integer`, `number`, `boolean`, `enum`,
 * `minimum`, `maximum`, `minLength`, `required`, `additionalProperties: false`).
 *
 * @module
 */
import type { JsonSchema } from "./types.ts";

/** The input of a tool call after validation: parameters by name. */
export type ToolInput = Readonly<Record<string, unknown>>;

/** What {@linkcode validateInput} returns. */
export type ValidationResult =
  | { readonly ok: true; readonly value: ToolInput }
  | { readonly ok: false; readonly message: string };

/**
 * Checks a tool call's input against the tool's schema. An optional parameter
 * given as `null` counts as not given (OpenAI's strict mode sends `null` for
 * parameters the model leaves out).
 *
 * @example Refusing an unknown parameter
 * ```ts
 * import { assert } from "@std/assert";
 * import { validateInput } from "./_input.ts";
 * const schema = {
 *   type: "object",
 *   properties: { command: { type: "string" } },
 *   required: ["command"],
 *   additionalProperties: false,
 * } as const;
 * const result = validateInput(schema, { command: "ls", cwd: "/" });
 * assert(!result.ok && result.message.includes('Unknown parameter "cwd"'));
 * ```
 *
 * @param schema The tool's input schema.
 * @param input The input as the model sent it.
 * @returns The parameters (absent and `null` optional ones left out), or a
 * message listing every problem.
 */
export function validateInput(
  schema: JsonSchema,
  input: unknown,
): ValidationResult {
  const given = input === undefined || input === null ? {} : input;
  if (typeof given !== "object" || Array.isArray(given)) {
    return {
      ok: false,
      message: `Invalid input: expected an object of parameters, got ${
        kindOf(given)
      }`,
    };
  }
  const problems: string[] = [];
  const value: Record<string, unknown> = {};
  const names = Object.keys(schema.properties);
  for (const [key, raw] of Object.entries(given as Record<string, unknown>)) {
    const property = Object.hasOwn(schema.properties, key)
      ? schema.properties[key]
      : undefined;
    if (!property) {
      problems.push(
        `Unknown parameter "${key}": expected ${
          names.length ? `one of ${names.join(", ")}` : "no parameters"
        }`,
      );
      continue;
    }
    // `null` means "not given": fine when optional, reported below when required.
    if (raw === null || raw === undefined) continue;
    const problem = checkValue(key, property, raw);
    if (problem) problems.push(problem);
    else value[key] = raw;
  }
  for (const key of schema.required) {
    const raw = (given as Record<string, unknown>)[key];
    if (raw === undefined || raw === null) {
      problems.push(`Missing required parameter "${key}"`);
    }
  }
  if (problems.length === 1) {
    return { ok: false, message: `Invalid input: ${problems[0]}` };
  }
  if (problems.length > 1) {
    return {
      ok: false,
      message: `Invalid input:\n${problems.map((p) => `- ${p}`).join("\n")}`,
    };
  }
  return { ok: true, value };
}

function checkValue(
  key: string,
  property: Readonly<Record<string, unknown>>,
  raw: unknown,
): string | undefined {
  const type = property.type;
  switch (type) {
    case "string":
      if (typeof raw !== "string") return wrongType(key, "a string", raw);
      if (
        typeof property.minLength === "number" &&
        raw.length < property.minLength
      ) {
        return `Parameter "${key}" must not be empty`;
      }
      break;
    case "boolean":
      if (typeof raw !== "boolean") return wrongType(key, "a boolean", raw);
      break;
    case "integer":
    case "number": {
      if (typeof raw !== "number" || !Number.isFinite(raw)) {
        return wrongType(
          key,
          type === "integer" ? "an integer" : "a number",
          raw,
        );
      }
      if (type === "integer" && !Number.isInteger(raw)) {
        return `Parameter "${key}" must be an integer, got ${raw}`;
      }
      if (typeof property.minimum === "number" && raw < property.minimum) {
        return `Parameter "${key}" must be at least ${property.minimum}, got ${raw}`;
      }
      if (typeof property.maximum === "number" && raw > property.maximum) {
        return `Parameter "${key}" must be at most ${property.maximum}, got ${raw}`;
      }
      break;
    }
  }
  if (Array.isArray(property.enum) && !property.enum.includes(raw)) {
    return `Parameter "${key}" must be one of ${
      property.enum.map((v) => JSON.stringify(v)).join(", ")
    }, got ${JSON.stringify(raw)}`;
  }
  return undefined;
}

function wrongType(key: string, expected: string, raw: unknown): string {
  const shown = typeof raw === "string"
    ? `string ${JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw)}`
    : kindOf(raw);
  return `Parameter "${key}" must be ${expected}, got ${shown}`;
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") {
    return Number.isFinite(value) ? `number ${value}` : String(value);
  }
  if (typeof value === "boolean") return `boolean ${value}`;
  return typeof value === "object" ? "an object" : typeof value;
}
