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
 *   token: Deno.env.get("AIO_TOKEN"),
 * });
 * const result = await runtime.execute({ command: "uname -a" });
 * console.log(result.stdout);
 * ```
 *
 * @module
 */
export { type AioRuntimeOptions, AioSkillRuntime } from "./runtime.ts";
export {
  type AioCallOptions,
  AioClient,
  type AioClientOptions,
  type AioCommandInfo,
  type AioCommandStatus,
  type AioExecRequest,
  type AioExecResult,
  type AioFileInfo,
  type AioListRequest,
  AioOperationError,
  type AioOperationErrorOptions,
  type AioOutputRequest,
  type AioOutputResult,
} from "./client.ts";
export * from "../remote/kind_exports.ts";
