/**
 * How the AIO test server (`aio.ts`) answers: the envelope
 * `{success, message, data, hint}`, FastAPI's 422 `{detail: [...]}` for a
 * body that does not validate (with pydantic's words), and a failed file
 * operation as HTTP 200 with a `FileOperationError`.
 *
 * @module
 */
import { errorText } from "./_common.ts";

/** The body of an injected status fault: the AIO envelope. */
export function faultBody(status: number): string {
  return JSON.stringify({
    success: false,
    message: `injected fault: status ${status}`,
    data: null,
    hint: null,
  });
}

/** The envelope of every JSON answer. */
export function envelope(
  data: unknown,
  options: { success?: boolean; message?: string; status?: number } = {},
): Response {
  return Response.json({
    success: options.success ?? true,
    message: options.message ?? "Operation successful",
    data: data ?? null,
    hint: null,
  }, { status: options.status ?? 200 });
}

interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** FastAPI's 422 with pydantic's issues. */
export function validationError(issues: ValidationIssue[]): Response {
  return Response.json({ detail: issues }, { status: 422 });
}

type FieldKind =
  | "string"
  | "number"
  | "integer"
  | "boolean"
  | "string-map"
  | "string-array";

interface FieldSpec {
  readonly kind: FieldKind;
  readonly required?: boolean;
  readonly nullable?: boolean;
  readonly values?: readonly string[];
}

/** Validates a JSON body as FastAPI/pydantic would, with its error shapes. */
function validateBody(
  body: unknown,
  fields: Readonly<Record<string, FieldSpec>>,
): ValidationIssue[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return [{
      loc: ["body"],
      msg:
        "Input should be a valid dictionary or object to extract fields from",
      type: "model_attributes_type",
    }];
  }
  const record = body as Record<string, unknown>;
  const issues: ValidationIssue[] = [];
  for (const [name, spec] of Object.entries(fields)) {
    const value = record[name];
    if (value === undefined) {
      if (spec.required) {
        issues.push({
          loc: ["body", name],
          msg: "Field required",
          type: "missing",
        });
      }
      continue;
    }
    if (value === null) {
      if (!spec.nullable) {
        issues.push({
          loc: ["body", name],
          msg: `Input should be a valid ${spec.kind}`,
          type: `${spec.kind}_type`,
        });
      }
      continue;
    }
    let ok: boolean;
    switch (spec.kind) {
      case "string":
        ok = typeof value === "string";
        break;
      case "number":
        ok = typeof value === "number" && Number.isFinite(value);
        break;
      case "integer":
        ok = typeof value === "number" && Number.isInteger(value);
        break;
      case "boolean":
        ok = typeof value === "boolean";
        break;
      case "string-map":
        ok = typeof value === "object" && !Array.isArray(value) &&
          Object.values(value as object).every((v) => typeof v === "string");
        break;
      case "string-array":
        ok = Array.isArray(value) && value.every((v) => typeof v === "string");
        break;
    }
    if (ok && spec.values && !spec.values.includes(value as string)) {
      issues.push({
        loc: ["body", name],
        msg: `Input should be ${spec.values.map((v) => `'${v}'`).join(" or ")}`,
        type: "enum",
      });
      continue;
    }
    if (!ok) {
      issues.push({
        loc: ["body", name],
        msg: `Input should be a valid ${spec.kind}`,
        type: `${spec.kind}_type`,
      });
    }
  }
  return issues;
}

/** Reads a JSON body and validates it, or gives the 422 that says why not. */
export async function readJson(
  request: Request,
  fields: Readonly<Record<string, FieldSpec>>,
): Promise<Record<string, unknown> | Response> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return validationError([{
      loc: ["body", 0],
      msg: "JSON decode error",
      type: "json_invalid",
    }]);
  }
  const issues = validateBody(body, fields);
  if (issues.length > 0) return validationError(issues);
  return body as Record<string, unknown>;
}

/** Maps a file-system error to the spec's `error_type`. */
function errorType(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "not_found";
  if (error instanceof Deno.errors.PermissionDenied) return "permission_denied";
  if (error instanceof Deno.errors.AlreadyExists) return "already_exists";
  if (
    error instanceof Deno.errors.IsADirectory ||
    error instanceof Deno.errors.NotADirectory
  ) return "invalid_target";
  if (error instanceof TypeError && /utf-?8|decode/i.test(String(error))) {
    return "decode_error";
  }
  return "io_error";
}

/** HTTP 200 with `success: false` and a `FileOperationError`. */
export function fileError(
  path: string,
  operation: string,
  error: unknown,
  type = errorType(error),
): Response {
  const message = errorText(error);
  return envelope({
    path,
    operation,
    message,
    error_type: type,
    retryable: false,
    errno: null,
    errno_name: null,
    exception_type: error instanceof Error ? error.name : null,
  }, { success: false, message: `Failed to ${operation} ${path}: ${message}` });
}
