/**
 * The Deno Sandbox JSON-RPC contract (`../shared/specs/deno-sandbox/
 * rpc.schema.json`, from the SDK's zod schemas), with the types `schema.js`
 * gives the optional fields the runtime sends; `undefined` without
 * `../shared` (with `CI=true` its absence is a failure).
 *
 * @module
 */
import { sharedData } from "../helpers/shared_data.ts";
import { RpcContract } from "./_contract.ts";

const SPECS = sharedData(
  "specs/deno-sandbox/",
  "the Deno Sandbox JSON-RPC contract",
);
// The types schema.js gives the properties the JSON Schema leaves open.
const STRING_LIST = { type: "array", items: { type: "string" } };
const RECORD = { type: "object", additionalProperties: { type: "string" } };
/** The contract, or `undefined` without `../shared`. */
export const contract: RpcContract | undefined = SPECS.present
  ? await RpcContract.load(new URL("rpc.schema.json", SPECS.url), {
    spawn: { args: STRING_LIST, env: RECORD, cwd: { type: "string" } },
    writeFile: {
      options: {
        type: "object",
        properties: { mode: { type: "number" } },
        additionalProperties: false,
      },
    },
    mkdir: {
      options: {
        type: "object",
        properties: { recursive: { type: "boolean" } },
        additionalProperties: false,
      },
    },
    open: {
      options: {
        type: "object",
        properties: { read: { type: "boolean" } },
        additionalProperties: false,
      },
    },
  })
  : undefined;
