/**
 * The standard-library functions skillrun uses, with explicit types.
 *
 * Development maps `@std/...` to `npm:deno-std@1.4.0/...` (the JSR registry is
 * not reachable from our build machines), which ships std's JavaScript without
 * declarations: the types declared here keep `any` from spreading. Under the
 * official `jsr:@std/*` packages (what JSR users get, and what CI checks with
 * `deno task test:official`), every declaration below is checked against std's
 * own types (plain assignments, no casts), so it cannot drift from them.
 *
 * @module
 */
import * as bytes from "@std/bytes";
import * as yaml from "@std/yaml";
import { TextLineStream as StdTextLineStream } from "@std/streams/text-line-stream";

/** Options of {@linkcode parseYaml}. */
export interface ParseYamlOptions {
  /** `"failsafe"` keeps every scalar a string. */
  schema?: "failsafe" | "json" | "core" | "default" | "extended";
}

/** Parses one YAML document. Throws a `SyntaxError` on unreadable YAML. */
export const parseYaml: (text: string, options?: ParseYamlOptions) => unknown =
  yaml.parse;

/** The bytes of several arrays, joined into a new one (`@std/bytes`). */
export const concatBytes: (buffers: readonly Uint8Array[]) => Uint8Array =
  bytes.concat;

/** Splits a stream of text into lines, without their `\n` or `\r\n` (`@std/streams`). */
export const TextLineStream: new () => TransformStream<string, string> =
  StdTextLineStream;

export { hostPath, type PathFunctions, posix } from "./std_path.ts";
