/**
 * OpenTelemetry spans through `@opentelemetry/api`: a no-op unless the
 * application (or Deno's built-in OpenTelemetry) registers a tracer
 * provider. One `execute_tool <name>` span per tool call with the GenAI
 * attributes (`gen_ai.operation.name`, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`), children for preparation, runtime commands and
 * HTTP requests (whose `traceparent` carries the trace to the server), and
 * errors recorded.
 *
 * @module
 */
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import denoJson from "../deno.json" with { type: "json" };

/** The tracer's name: the package's name. */
export const TRACER_NAME: string = denoJson.name;

let cached: Tracer | undefined;

function tracer(): Tracer {
  // A ProxyTracer: it follows a provider registered later.
  cached ??= trace.getTracer(TRACER_NAME, denoJson.version);
  return cached;
}

/** The span given to work when nothing traces (records nothing). */
const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

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

/** The API's no-op provider: the delegate of a proxy nobody set. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered: without one, spans are skipped
 * altogether (no context switch, no span object), so tracing costs nothing.
 */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  // The global provider is the API's proxy: it traces once a provider was
  // set behind it (its delegate is then no longer the API's no-op).
  return !(provider instanceof ProxyTracerProvider) ||
    provider.getDelegate() !== NOOP_PROVIDER;
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
  return tracer().startActiveSpan(
    name,
    { kind, attributes },
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
    code: SpanStatusCode.ERROR,
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
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * Adds the active trace context (`traceparent`, `tracestate`) to outgoing
 * headers, through the registered propagator (none: nothing added).
 *
 * @param headers The request's headers.
 */
export function injectTraceContext(headers: Headers): void {
  if (!tracing()) return;
  propagation.inject(context.active(), headers, {
    set: (carrier, key, value) => carrier.set(key, value),
  });
}

export { SpanKind };
