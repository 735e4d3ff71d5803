/**
 * Contract checks for the test servers: an OpenAPI document (YAML or JSON)
 * (the official ones read from `../shared/specs/` when that is beside the
 * clone, see {@linkcode loadSharedContract}), the response schema of an operation found by
 * method, path (concrete or template), status and content type, `$ref`
 * resolved, OpenAPI specifics adapted to JSON Schema (`nullable`, `example`),
 * and bodies validated with a JSON Schema validator (ajv 8.20.0 with
 * ajv-formats 3.0.1, the versions the lock already holds; pinned, test-only;
 * the skillrun module never imports it).
 *
 * @module
 */
import { Ajv2020 } from "npm:ajv@8.20.0/dist/2020.js";
import addFormatsModule from "npm:ajv-formats@3.0.1";
import { parseYaml } from "../../_internal/std.ts";
import { sharedData } from "../helpers/shared_data.ts";
import { isObject } from "./_common.ts";

/** A JSON Schema, after adaptation. */
export type JsonSchema = Record<string, unknown> | boolean;

/** Which answer to look up. */
export interface ResponseQuery {
  /** HTTP method, any case. */
  readonly method: string;
  /**
   * The path below the document's server URL (e.g. `/sandboxes/abc` for a
   * lifecycle URL `/v1/sandboxes/abc`; a leading server path such as `/v1`
   * is also accepted), concrete or as the template.
   */
  readonly path: string;
  /** The status. */
  readonly status: number;
  /** The content type (parameters ignored); default the only one declared. */
  readonly contentType?: string;
}

/** What the document declares for one answer. */
export interface ResponseSpec {
  /** The path template that matched, e.g. `/sandboxes/{sandboxId}`. */
  readonly template: string;
  /** The status key that matched (`"200"`, `"4XX"` or `"default"`). */
  readonly statusKey: string;
  /** The content types declared (empty: no body declared). */
  readonly contentTypes: readonly string[];
  /** The content type chosen, if any. */
  readonly contentType?: string;
  /** Its schema, adapted and with every `$ref` resolved, if any. */
  readonly schema?: JsonSchema;
}

/** The result of a validation. */
export interface ContractResult {
  /** Whether the body matches. */
  readonly valid: boolean;
  /** The validator's findings, one line each (empty when valid). */
  readonly errors: readonly string[];
}

const HTTP_METHODS = new Set([
  "get",
  "put",
  "post",
  "delete",
  "options",
  "head",
  "patch",
  "trace",
]);

/**
 * One OpenAPI document, for contract checks of the answers of a test server.
 *
 * @example A lifecycle error body checked against the spec
 * ```ts
 * import { assert, assertEquals } from "@std/assert";
 * import { OpenApiContract } from "./_contract.ts";
 *
 * // A spec-shaped document stated here (the official ones are in ../shared/specs/).
 * const contract = new OpenApiContract({
 *   servers: [{ url: "http://localhost:8080/v1" }],
 *   paths: {
 *     "/sandboxes/{sandboxId}": {
 *       get: {
 *         responses: {
 *           "404": {
 *             content: {
 *               "application/json": {
 *                 schema: { $ref: "#/components/schemas/Error" },
 *               },
 *             },
 *           },
 *         },
 *       },
 *     },
 *   },
 *   components: {
 *     schemas: {
 *       Error: {
 *         type: "object",
 *         required: ["code", "message"],
 *         properties: { code: { type: "string" }, message: { type: "string" } },
 *       },
 *     },
 *   },
 * });
 * const query = { method: "GET", path: "/v1/sandboxes/abc", status: 404 };
 * assertEquals(contract.responseSpec(query).template, "/sandboxes/{sandboxId}");
 * assert(contract.validate(query, { code: "NOT_FOUND", message: "no" }).valid);
 * assert(!contract.validate(query, { message: "no" }).valid);
 * ```
 */
export class OpenApiContract {
  readonly #document: Record<string, unknown>;
  readonly #serverPaths: readonly string[];
  readonly #templates: readonly { template: string; pattern: RegExp }[];
  readonly #validators = new Map<string, ValidateFunction>();
  readonly #ajv: Ajv2020 = newAjv();

  /**
   * @param document The parsed OpenAPI document.
   * @param source Where it came from, for messages.
   */
  constructor(document: unknown, readonly source: string = "OpenAPI document") {
    if (!isObject(document) || !isObject(document.paths)) {
      throw new TypeError(
        `Cannot use "${source}": it is not an OpenAPI document with paths`,
      );
    }
    this.#document = document;
    const servers = Array.isArray(document.servers) ? document.servers : [];
    this.#serverPaths = servers
      .map((server) => {
        try {
          return new URL(String((server as { url?: unknown }).url)).pathname
            .replace(/\/$/, "");
        } catch {
          return "";
        }
      })
      .filter((path) => path !== "");
    this.#templates = Object.keys(document.paths).map((template) => ({
      template,
      pattern: new RegExp(
        "^" +
          template.split(/(\{[^/{}]+\})/).map((part) =>
            /^\{[^/{}]+\}$/.test(part)
              ? "[^/]+"
              : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          ).join("") + "$",
      ),
    }));
  }

  /**
   * Reads an OpenAPI document from a file (`.json`, else YAML).
   *
   * @param file Its path or `file:` URL.
   * @returns The contract.
   */
  static async load(file: string | URL): Promise<OpenApiContract> {
    const text = await Deno.readTextFile(file);
    const name = String(file);
    const document = name.endsWith(".json")
      ? JSON.parse(text)
      : parseYaml(text);
    return new OpenApiContract(document, name);
  }

  /** The path template a concrete path matches, if any. */
  template(path: string): string | undefined {
    const paths = this.#document.paths as Record<string, unknown>;
    const candidates = [path];
    for (const prefix of this.#serverPaths) {
      if (path.startsWith(prefix + "/")) {
        candidates.push(path.slice(prefix.length));
      }
    }
    for (const candidate of candidates) {
      if (Object.hasOwn(paths, candidate)) return candidate;
    }
    for (const candidate of candidates) {
      // The most literal template wins (`/a/b` before `/a/{x}`).
      const found = this.#templates
        .filter(({ pattern }) => pattern.test(candidate))
        .sort((a, b) =>
          (a.template.match(/\{/g)?.length ?? 0) -
          (b.template.match(/\{/g)?.length ?? 0)
        )[0];
      if (found !== undefined) return found.template;
    }
    return undefined;
  }

  /**
   * What the document declares for an answer.
   *
   * @param query Method, path, status and content type.
   * @returns The declared answer.
   * @throws {RangeError} When the document declares no such operation or status.
   */
  responseSpec(query: ResponseQuery): ResponseSpec {
    const where = `${query.method.toUpperCase()} ${query.path}`;
    const template = this.template(query.path);
    if (template === undefined) {
      throw new RangeError(
        `Cannot find "${where}" in ${this.source}: no path matches`,
      );
    }
    const item = this.#resolve(
      (this.#document.paths as Record<string, unknown>)[template],
    );
    const method = query.method.toLowerCase();
    if (
      !HTTP_METHODS.has(method) || !isObject(item) || !isObject(item[method])
    ) {
      throw new RangeError(
        `Cannot find "${where}" in ${this.source}: ${template} has no ${method.toUpperCase()}`,
      );
    }
    const responses = this.#resolve(item[method].responses);
    if (!isObject(responses)) {
      throw new RangeError(
        `Cannot find "${where}" in ${this.source}: no responses`,
      );
    }
    const status = String(query.status);
    const statusKey = [status, `${status[0]}XX`, `${status[0]}xx`, "default"]
      .find((key) => Object.hasOwn(responses, key));
    if (statusKey === undefined) {
      throw new RangeError(
        `Cannot find "${where}" ${status} in ${this.source}: the status is not declared (${
          Object.keys(responses).join(", ")
        })`,
      );
    }
    const response = this.#resolve(responses[statusKey]);
    // Swagger 2.0: the schema sits on the answer, the types in `produces`.
    const content = isObject(response) && isObject(response.content)
      ? response.content
      : isObject(response) && response.schema !== undefined
      ? Object.fromEntries(
        (Array.isArray(item[method].produces)
          ? item[method].produces as string[]
          : ["application/json"]).map((type) => [type, response]),
      )
      : {};
    const contentTypes = Object.keys(content);
    const base = { template, statusKey, contentTypes };
    if (contentTypes.length === 0) return base;
    const wanted = query.contentType?.split(";")[0]?.trim().toLowerCase();
    const contentType = wanted === undefined
      ? contentTypes[0]!
      : contentTypes.find((type) => type.toLowerCase() === wanted) ??
        contentTypes.find((type) => matchesRange(type, wanted));
    if (contentType === undefined) {
      throw new RangeError(
        `Cannot find "${where}" ${status} as ${wanted} in ${this.source}: declared ${
          contentTypes.join(", ")
        }`,
      );
    }
    const media = this.#resolve(content[contentType]);
    if (!isObject(media) || media.schema === undefined) {
      return { ...base, contentType };
    }
    return {
      ...base,
      contentType,
      schema: this.#schema(media.schema, []),
    };
  }

  /**
   * Validates a parsed JSON body against the declared schema.
   *
   * @param query Method, path, status and content type.
   * @param body The parsed body.
   * @returns Whether it matches and why not.
   */
  validate(query: ResponseQuery, body: unknown): ContractResult {
    const spec = this.responseSpec(query);
    if (spec.schema === undefined) {
      return spec.contentTypes.length === 0 && body !== undefined
        ? { valid: false, errors: ["a body was given but none is declared"] }
        : { valid: true, errors: [] };
    }
    const key =
      `${spec.template} ${query.method.toLowerCase()} ${spec.statusKey} ${spec.contentType}`;
    let validator = this.#validators.get(key);
    if (validator === undefined) {
      validator = this.#ajv.compile(spec.schema as Record<string, unknown>);
      this.#validators.set(key, validator);
    }
    const valid = validator(body) as boolean;
    return {
      valid,
      errors: valid
        ? []
        : (validator.errors ?? []).map((error) =>
          `${error.instancePath || "/"} (${error.schemaPath}): ${
            error.message ?? "invalid"
          }`
        ),
    };
  }

  /**
   * Reads a response and checks it: status declared, content type declared,
   * JSON body valid against the schema (a non-JSON declared body is returned
   * as text). The response body is consumed.
   *
   * @param response The answer.
   * @param request Its method and path (or the `Request` itself).
   * @returns The parsed JSON body, the text of a non-JSON body, or
   *   `undefined` for an empty one.
   * @throws {Error} Naming each mismatch.
   */
  async check(
    response: Response,
    request: { method: string; path: string } | Request,
  ): Promise<unknown> {
    const method = request.method;
    const path = request instanceof Request
      ? new URL(request.url).pathname
      : request.path;
    const contentType = response.headers.get("content-type") ?? undefined;
    const text = await response.text();
    const query: ResponseQuery = contentType === undefined || text === ""
      ? { method, path, status: response.status }
      : { method, path, status: response.status, contentType };
    const where = `${method} ${path} ${response.status}`;
    const spec = this.responseSpec(query);
    if (text === "") {
      if (spec.schema !== undefined && spec.contentType?.includes("json")) {
        throw new Error(
          `${where}: the body is empty but ${spec.contentType} is declared`,
        );
      }
      return undefined;
    }
    if (spec.contentTypes.length === 0) {
      throw new Error(
        `${where}: a body was sent but none is declared: ${text.slice(0, 200)}`,
      );
    }
    if (!spec.contentType?.includes("json")) return text;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`${where}: the body is not JSON: ${text.slice(0, 200)}`);
    }
    const result = this.validate(query, body);
    if (!result.valid) {
      throw new Error(
        `${where}: the body does not match ${spec.template} in ${this.source}:\n  ${
          result.errors.join("\n  ")
        }\nbody: ${text.slice(0, 500)}`,
      );
    }
    return body;
  }

  #resolve(value: unknown, seen: readonly string[] = []): unknown {
    if (!isObject(value) || typeof value.$ref !== "string") return value;
    const ref = value.$ref;
    if (seen.includes(ref)) {
      throw new RangeError(
        `Cannot resolve "${ref}" in ${this.source}: it refers to itself`,
      );
    }
    return this.#resolve(this.#pointer(ref), [...seen, ref]);
  }

  #pointer(ref: string): unknown {
    if (!ref.startsWith("#/")) {
      throw new RangeError(
        `Cannot resolve "${ref}" in ${this.source}: only local references are read`,
      );
    }
    let node: unknown = this.#document;
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll(
        "~0",
        "~",
      );
      if (!isObject(node) || !Object.hasOwn(node, key)) {
        throw new RangeError(
          `Cannot resolve "${ref}" in ${this.source}: "${key}" is missing`,
        );
      }
      node = node[key];
    }
    return node;
  }

  /** OpenAPI schema → JSON Schema 2020-12, references inlined. */
  #schema(value: unknown, stack: readonly string[]): JsonSchema {
    if (typeof value === "boolean") return value;
    if (!isObject(value)) return {};
    if (typeof value.$ref === "string") {
      if (stack.includes(value.$ref)) {
        throw new RangeError(
          `Cannot inline "${value.$ref}" in ${this.source}: the schema is recursive`,
        );
      }
      // OpenAPI 3.1 allows siblings of $ref (e.g. description); keep constraints only.
      const target = this.#schema(this.#pointer(value.$ref), [
        ...stack,
        value.$ref,
      ]);
      const siblings = Object.keys(value).filter((key) =>
        key !== "$ref" && !ANNOTATIONS.has(key)
      );
      if (siblings.length === 0) return target;
      const rest: Record<string, unknown> = {};
      for (const key of siblings) rest[key] = value[key];
      return { allOf: [target, this.#schema(rest, stack)] };
    }
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (ANNOTATIONS.has(key) || key === "nullable") continue;
      if (SCHEMA_MAPS.has(key) && isObject(child)) {
        const map: Record<string, unknown> = {};
        for (const [name, schema] of Object.entries(child)) {
          map[name] = this.#schema(schema, stack);
        }
        out[key] = map;
      } else if (SCHEMA_LISTS.has(key) && Array.isArray(child)) {
        out[key] = child.map((schema) => this.#schema(schema, stack));
      } else if (
        SCHEMA_VALUES.has(key) &&
        (isObject(child) || typeof child === "boolean")
      ) {
        out[key] = this.#schema(child, stack);
      } else {
        out[key] = child;
      }
    }
    if (value.nullable === true) {
      // OpenAPI 3.0 `nullable`, still used in these 3.1 documents.
      if (typeof out.type === "string") out.type = [out.type, "null"];
      else if (Array.isArray(out.type) && !out.type.includes("null")) {
        out.type = [...out.type, "null"];
      }
      if (Array.isArray(out.enum) && !out.enum.includes(null)) {
        out.enum = [...out.enum, null];
      }
    }
    return out;
  }
}

const ANNOTATIONS: ReadonlySet<string> = new Set([
  "example",
  "examples",
  "description",
  "summary",
  "externalDocs",
  "xml",
  "discriminator",
]);
const SCHEMA_MAPS: ReadonlySet<string> = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
]);
const SCHEMA_LISTS: ReadonlySet<string> = new Set([
  "allOf",
  "anyOf",
  "oneOf",
  "prefixItems",
]);
const SCHEMA_VALUES: ReadonlySet<string> = new Set([
  "items",
  "additionalProperties",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
]);

type ValidateFunction = ReturnType<Ajv2020["compile"]>;

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  // ajv-formats is CommonJS: its function is the default export or its .default.
  const addFormats = ((addFormatsModule as unknown as { default?: unknown })
    .default ?? addFormatsModule) as (ajv: Ajv2020) => void;
  addFormats(ajv);
  return ajv;
}

function matchesRange(declared: string, actual: string): boolean {
  const [type, subtype] = declared.toLowerCase().split("/");
  const [actualType] = actual.split("/");
  return (type === "*" || type === actualType) && subtype === "*";
}

/**
 * The official OpenAPI description `../shared/specs/<relative>`, when it is
 * beside the clone: a cross-check of a test server's answers. Absent, the
 * answer is `undefined` and the tests check the server's behaviour without it
 * (with `CI=true` absence is a failure).
 *
 * @param relative Its path below `../shared/specs/`.
 * @param what What it is, for the failure in CI.
 * @returns The contract, or `undefined` without `../shared`.
 */
export async function loadSharedContract(
  relative: string,
  what: string,
): Promise<OpenApiContract | undefined> {
  const data = sharedData(`specs/${relative}`, what);
  return data.present ? await OpenApiContract.load(data.url) : undefined;
}

/**
 * Reads an answer's body, checked against the contract when there is one
 * ({@linkcode OpenApiContract.check}), else as that check would give it: JSON
 * parsed when the content type is JSON, text otherwise, `undefined` when empty.
 *
 * @param contract The contract, if any.
 * @param response The answer.
 * @param request Method and path.
 * @returns The body.
 */
export async function checkedBody(
  contract: OpenApiContract | undefined,
  response: Response,
  request: { method: string; path: string } | Request,
): Promise<unknown> {
  if (contract !== undefined) return await contract.check(response, request);
  const text = await response.text();
  if (text === "") return undefined;
  const type = response.headers.get("content-type") ?? "";
  return type.includes("json") ? JSON.parse(text) : text;
}

/**
 * The Deno Sandbox JSON-RPC contract (`rpc.schema.json`, generated from the
 * SDK's zod schemas): each method's `params` (what a client sends) and
 * `result` (what the SDK parses: `{ok}` or `{error: SerializedError}`), the
 * stream notifications and the JSON-RPC envelope.
 *
 * @example A spawn's params and an error result
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { RpcContract } from "./_contract.ts";
 * const contract = new RpcContract({
 *   methods: {
 *     spawn: {
 *       params: { type: "object", required: ["command"] },
 *       result: { type: "object" },
 *     },
 *   },
 * });
 * assertEquals(contract.params("spawn", { command: "ls" }), []);
 * assertEquals(contract.params("spawn", {}).length, 1);
 * ```
 */
export class RpcContract {
  readonly #ajv: Ajv2020 = newAjv();
  readonly #doc: Record<string, unknown>;

  /**
   * @param doc The document (`methods`, `notifications`, `envelope`, `$defs`).
   * @param overlay Stricter schemas of optional params (the `{}` of the
   * document), by method and property.
   */
  constructor(
    doc: Record<string, unknown>,
    overlay: Readonly<Record<string, Record<string, JsonSchema>>> = {},
  ) {
    const copy = structuredClone(doc) as Record<string, unknown>;
    const methods = (copy.methods ?? {}) as Record<
      string,
      { params: { properties?: Record<string, JsonSchema> } }
    >;
    for (const [method, properties] of Object.entries(overlay)) {
      const params = methods[method]?.params;
      if (params) params.properties = { ...params.properties, ...properties };
    }
    delete copy.$schema;
    copy.$id = "rpc";
    this.#doc = copy;
    this.#ajv.addSchema(copy);
  }

  /**
   * Loads the document.
   *
   * @param url Where it is.
   * @param overlay See the constructor.
   * @returns The contract.
   */
  static async load(
    url: URL,
    overlay: Readonly<Record<string, Record<string, JsonSchema>>> = {},
  ): Promise<RpcContract> {
    return new RpcContract(JSON.parse(await Deno.readTextFile(url)), overlay);
  }

  /** Whether the document describes the method. */
  has(method: string): boolean {
    return method in ((this.#doc.methods ?? {}) as object);
  }

  /** The problems of a method's params (none: `[]`). */
  params(method: string, value: unknown): string[] {
    return this.#check(`rpc#/methods/${method}/params`, value, method);
  }

  /** The problems of a method's result. */
  result(method: string, value: unknown): string[] {
    return this.#check(`rpc#/methods/${method}/result`, value, method);
  }

  /** The problems of a notification's params. */
  notification(method: string, value: unknown): string[] {
    return this.#check(
      `rpc#/notifications/${method.replaceAll("/", "~1")}`,
      value,
      method,
    );
  }

  /** The problems of an envelope (`request`, `notification`, `successResponse`, ...). */
  envelope(kind: string, value: unknown): string[] {
    return this.#check(`rpc#/envelope/${kind}`, value, kind);
  }

  #check(ref: string, value: unknown, what: string): string[] {
    const validate = this.#ajv.getSchema(ref);
    if (!validate) return [`${what}: not in the contract`];
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) =>
      `${what}${e.instancePath} ${e.message ?? "invalid"}`
    );
  }
}
