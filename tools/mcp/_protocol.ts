/**
 * The skills extension's identifier and the error the SDK answers as a
 * JSON-RPC error, in a module of their own: the server names them without
 * loading the skill catalog, which it loads only when it serves skills.
 *
 * @module
 */

/** The extension's identifier, declared in the server's capabilities. */
export const SKILLS_EXTENSION = "io.modelcontextprotocol/skills";

/**
 * An error the SDK answers as a JSON-RPC error with this code and this
 * message (no prefix added on our side).
 */
export class McpRequestError extends Error {
  override readonly name = "McpRequestError";
  /** The JSON-RPC error code. */
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}
