/**
 * OpenTelemetry spans through `@opentelemetry/api`: a no-op unless the
 * application (or Deno's built-in OpenTelemetry) registers a tracer
 * provider. One `execute_tool <name>` span per tool call with the GenAI
 * attributes (`gen_ai.operation.name`, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`), children for preparation, runtime commands and
 * HTTP requests (whose `traceparent` carries the trace to the server), and
 * errors recorded.
 *
 * The API is loaded on the first span, not at import: a provider registered
 * through any copy of the API (or by Deno) is seen in the API's global slot,
 * so nothing of the API is loaded while nothing traces (loading it costs
 * about 30 ms of every cold start: it is CommonJS).
 *
 * @module
 */
import type { Span, SpanKind as ApiSpanKind, Tracer } from "@opentelemetry/api";
import denoJson from "../deno.json" with { type: "json" };

/** The tracer's name: the package's name. */
export const TRACER_NAME: string = denoJson.name;

type Api = typeof import("@opentelemetry/api");

let api: Api | undefined;
let loading: Promise<Api> | undefined;

/** The API, loaded once. */
function loadApi(): Promise<Api> {
  loading ??= import("@opentelemetry/api").then((module) => {
    api = module;
    noopProvider = new module.ProxyTracerProvider().getDelegate();
    return module;
  });
  return loading;
}

let cached: Tracer | undefined;

function tracer(loaded: Api): Tracer {
  // A ProxyTracer: it follows a provider registered later.
  cached ??= loaded.trace.getTracer(TRACER_NAME, denoJson.version);
  return cached;
}

/** Where every copy of the API (major version 1), and Deno, register. */
const GLOBAL_SLOT = Symbol.for("opentelemetry.js.api.1");

/** What the API keeps in its global slot (the parts read here). */
interface GlobalSlot {
  trace?: unknown;
}

/** The API's no-op provider: the delegate of a proxy nobody set. */
let noopProvider: unknown;

/** The kinds of span (the API's `SpanKind` values). */
export const SpanKind = {
  INTERNAL: 0,
  SERVER: 1,
  CLIENT: 2,
  PRODUCER: 3,
  CONSUMER: 4,
} as const;

/** A kind of span. */
export type SpanKind = typeof SpanKind[keyof typeof SpanKind];

/** The API's status code of a failed span. */
const STATUS_ERROR = 2;

/** The span given to work when nothing traces (records nothing). */
const NOOP_SPAN: Span = {
  spanContext: () => ({
    traceId: "00000000000000000000000000000000",
    spanId: "0000000000000000",
    traceFlags: 0,
  }),
  setAttribute: () => NOOP_SPAN,
  setAttributes: () => NOOP_SPAN,
  addEvent: () => NOOP_SPAN,
  addLink: () => NOOP_SPAN,
  addLinks: () => NOOP_SPAN,
  setStatus: () => NOOP_SPAN,
  updateName: () => NOOP_SPAN,
  end: () => {},
  isRecording: () => false,
  recordException: () => {},
};

/**
 * Whether spans are recorded at all: a tracer provider is registered (by
 * the application, or Deno's built-in OpenTelemetry). Without one, callers
 * skip even building a span's attributes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tracingActive } from "./otel.ts";
 * assert(typeof tracingActive() === "boolean");
 * ```
 *
 * @returns Whether a provider is registered.
 */
export function tracingActive(): boolean {
  return tracing();
}

/**
 * Whether a tracer provider is registered: without one, spans are skipped
 * altogether (no context switch, no span object), so tracing costs nothing.
 */
function tracing(): boolean {
  const slot = (globalThis as { [GLOBAL_SLOT]?: GlobalSlot })[GLOBAL_SLOT];
  // Nothing registered a provider: the API need not even be loaded.
  if (slot?.trace === undefined) return false;
  if (!api) return true;
  const provider = api.trace.getTracerProvider();
  // The global provider is the API's proxy: it traces once a provider was
  // set behind it (its delegate is then no longer the API's no-op).
  return !(provider instanceof api.ProxyTracerProvider) ||
    provider.getDelegate() !== noopProvider;
}

/** Attributes of a span: strings, numbers and booleans. */
export type SpanAttributes = Readonly<
  Record<string, string | number | boolean>
>;

/**
 * Runs `fn` inside a new active span (a child of the active one), ending it
 * when `fn` settles; a thrown error is recorded and the status set to error.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { inSpan } from "./otel.ts";
 * assertEquals(await inSpan("work", {}, () => Promise.resolve(2)), 2);
 * ```
 *
 * @param name The span's name.
 * @param attributes Its attributes.
 * @param fn The work; it may set more on the span.
 * @param kind The span's kind (default internal).
 * @returns What `fn` returns.
 */
export function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracing()) return fn(NOOP_SPAN);
  return loadApi().then((loaded) => {
    // Loading the API may show that the provider is the API's no-op.
    if (!tracing()) return fn(NOOP_SPAN);
    return tracer(loaded).startActiveSpan(
      name,
      { kind: kind as ApiSpanKind, attributes },
      async (span) => {
        try {
          return await fn(span);
        } catch (error) {
          recordError(span, error);
          throw error;
        } finally {
          span.end();
        }
      },
    );
  });
}

/**
 * Marks a span as failed, with the error recorded as an exception event.
 *
 * @param span The span.
 * @param error The error (or a message).
 */
export function recordError(span: Span, error: unknown): void {
  if (error instanceof Error) span.recordException(error);
  else span.recordException(String(error));
  span.setStatus({
    code: STATUS_ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/**
 * Marks a span as failed with a message (a result that is an error).
 *
 * @param span The span.
 * @param message Why.
 */
export function markError(span: Span, message: string): void {
  span.setStatus({ code: STATUS_ERROR, message });
}

/**
 * Adds the active trace context (`traceparent`, `tracestate`) to outgoing
 * headers, through the registered propagator (none: nothing added).
 *
 * @param headers The request's headers.
 * @returns When they are added.
 */
export async function injectTraceContext(headers: Headers): Promise<void> {
  if (!tracing()) return;
  const { context, propagation } = api ?? await loadApi();
  propagation.inject(context.active(), headers, {
    set: (carrier, key, value) => carrier.set(key, value),
  });
}
