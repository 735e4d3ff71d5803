/**
 * The AIO Sandbox runtime: skills and commands on one existing AIO container
 * (`/v1/bash/*`, `/v1/file/*`), with an optional bearer token.
 *
 * @example Using a container (not run: it needs a running AIO Sandbox)
 * ```ts ignore
 * import { AioSkillRuntime } from "@skillrun/skillrun/aio";
 *
 * await using runtime = new AioSkillRuntime({
 *   baseUrl: "http://127.0.0.1:8080",
 *   apiKey: Deno.env.get("AIO_TOKEN"),
 * });
 * const result = await runtime.execute({ command: "uname -a" });
 * console.log(result.stdout);
 * ```
 *
 * This entry holds what is this kind's own: its runtime, its options and its
 * errors. What every kind shares (the conversation stores,
 * `RemoteHttpError`, the runtime contract) comes from
 * `@skillrun/skillrun` and, for writing a runtime, `@skillrun/skillrun/runtime`.
 *
 * @module
 */
export { AioSkillRuntime, type AioSkillRuntimeOptions } from "./runtime.ts";
export { AioOperationError, type AioOperationErrorOptions } from "./client.ts";
