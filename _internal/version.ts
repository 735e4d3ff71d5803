/**
 * The package's version, read from its `deno.json` (one place to change).
 *
 * @module
 */
import config from "../deno.json" with { type: "json" };

/** The version of skillrun, e.g. `0.1.0`. */
export const VERSION: string = config.version;
