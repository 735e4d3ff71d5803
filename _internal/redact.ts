/**
 * Keeps configured values out of error messages, tool outputs and the catalog.
 *
 * The rule (it keeps two promises at once: no secret in any output, whole or
 * in part, and ordinary text left intact):
 *
 * - A value of {@linkcode MIN_SECRET_LENGTH} (8) characters or more is a
 *   secret: every occurrence is replaced with {@linkcode REDACTED}, inside
 *   words too. A multi-line value is replaced whole, and each of its lines of
 *   8 characters or more (spaces and `\r` trimmed) is a secret of its own, so
 *   a PEM key shown line by line loses every line.
 * - Next to a cut (the `[... N bytes omitted ...]` marker of a bounded output),
 *   the start of a secret before the marker, or its end after it, is replaced
 *   too when it is {@linkcode MIN_FRAGMENT_LENGTH} (3) characters or more: at
 *   most two characters of a secret can stand next to a cut. Callers redact
 *   before they cut, so their own cuts never split a secret. An excerpt's
 *   ellipsis (`…`, as error messages cut a server's long answer) is a cut
 *   too: the start of a secret right before it is replaced.
 * - A secret is also found in the forms a server's answer may give it back:
 *   with its runs of white space collapsed to one space, and JSON-escaped.
 * - A value of 4 to 7 characters is a word, not a secret: it is replaced only
 *   where it stands alone (no letter, digit or `_` right before or after), so
 *   `MODE=prod` hides "prod" but leaves "production" alone.
 * - Shorter values are never replaced: they would mangle ordinary text. Keep
 *   secrets long (every real key or token is).
 *
 * @module
 */

/** Values this long or longer are secrets: replaced wherever they occur. */
export const MIN_SECRET_LENGTH = 8;

/** Values this long (up to {@linkcode MIN_SECRET_LENGTH}) are replaced as whole words. */
export const MIN_WORD_LENGTH = 4;

/** The shortest piece of a secret replaced next to a cut marker. */
export const MIN_FRAGMENT_LENGTH = 3;

/** What replaces a secret value. */
export const REDACTED = "[redacted]";

/** The end of an excerpt (see `runtimes/remote/http.ts`). */
const ELLIPSIS = "…";

/** The marker a bounded output collector puts where it dropped bytes. */
const CUT_MARKER = /\n\[\.\.\. \d+ bytes omitted \.\.\.\]\n/g;

/**
 * Removes configured values from texts by the module's rule. Build one per set
 * of values and reuse it: the values are sorted and compiled once.
 *
 * @example Secrets, words and ordinary text
 * ```ts
 * import { assert } from "@std/assert";
 * import { Redactor } from "./redact.ts";
 * const redactor = new Redactor(["s3cr3t-token", "prod", "eu"]);
 * assert(
 *   redactor.redact("token=s3cr3t-token mode=prod production eu") ===
 *     "token=[redacted] mode=[redacted] production eu",
 * );
 * ```
 */
export class Redactor {
  readonly #secrets: readonly string[];
  readonly #words: RegExp | null;

  /**
   * Compiles the values.
   *
   * @param values The configured values (non-strings are ignored).
   */
  constructor(values: Iterable<string>) {
    const secrets = new Set<string>();
    const words = new Set<string>();
    for (const value of values) {
      if (typeof value !== "string") continue;
      if (value.length >= MIN_SECRET_LENGTH) {
        secrets.add(value);
        const collapsed = value.replace(/\s+/g, " ").trim();
        if (collapsed.length >= MIN_SECRET_LENGTH) secrets.add(collapsed);
        const escaped = JSON.stringify(value).slice(1, -1);
        if (escaped !== value) secrets.add(escaped);
        if (/[\r\n]/.test(value)) {
          for (const line of value.split(/\r?\n|\r/)) {
            const trimmed = line.trim();
            if (trimmed.length >= MIN_SECRET_LENGTH) secrets.add(trimmed);
          }
        }
      } else if (value.length >= MIN_WORD_LENGTH && !/[\r\n]/.test(value)) {
        words.add(value);
      }
    }
    this.#secrets = [...secrets].sort((a, b) => b.length - a.length);
    this.#words = words.size === 0 ? null : new RegExp(
      `(?<![\\p{L}\\p{N}_])(?:${
        [...words].sort((a, b) => b.length - a.length).map(escapeRegExp).join(
          "|",
        )
      })(?![\\p{L}\\p{N}_])`,
      "gu",
    );
  }

  /** Whether there is nothing to redact. */
  get empty(): boolean {
    return this.#secrets.length === 0 && this.#words === null;
  }

  /** The longest secret's length (0 without secrets). */
  get longest(): number {
    return this.#secrets[0]?.length ?? 0;
  }

  /**
   * Replaces secrets, words and fragments of secrets at cut markers.
   *
   * @param text The text to clean.
   * @returns The text without the values.
   */
  redact(text: string): string {
    if (this.empty || text === "") return text;
    let result = text;
    if (this.#secrets.length > 0 && result.includes("bytes omitted ...]")) {
      result = this.#redactCuts(result);
    }
    if (this.#secrets.length > 0 && result.includes(ELLIPSIS)) {
      result = result.split(ELLIPSIS).map((piece, i, all) =>
        i === all.length - 1
          ? piece
          : this.#prefixAtEnd(piece) > 0
          ? `${
            piece.slice(0, piece.length - this.#prefixAtEnd(piece))
          }${REDACTED}`
          : piece
      ).join(ELLIPSIS);
    }
    for (const secret of this.#secrets) {
      if (result.includes(secret)) result = result.split(secret).join(REDACTED);
    }
    if (this.#words) result = result.replace(this.#words, REDACTED);
    return result;
  }

  /**
   * Like {@linkcode Redactor.redact} for a text that was cut at its end: the
   * start of a secret that ends it (the piece the cut left, of at least
   * `MIN_FRAGMENT_LENGTH` characters) is replaced too, so that no later cut,
   * wherever the redactions before it move it, can show that piece.
   *
   * @param text The text to clean, cut at its end.
   * @returns The text without the values.
   *
   * @example A secret cut by a limit
   * ```ts
   * import { assert } from "@std/assert";
   * import { Redactor } from "./redact.ts";
   * const redactor = new Redactor(["s3cr3t-token"]);
   * assert(redactor.redactCutEnd("key=s3cr3t-to") === "key=[redacted]");
   * ```
   */
  redactCutEnd(text: string): string {
    const result = this.redact(text);
    if (this.#secrets.length === 0) return result;
    const piece = this.#prefixAtEnd(result);
    return piece === 0 ? result : `${result.slice(0, -piece)}${REDACTED}`;
  }

  /** Replaces the pieces of secrets that stand right before or after a cut. */
  #redactCuts(text: string): string {
    const pieces: string[] = [];
    let last = 0;
    for (const match of text.matchAll(CUT_MARKER)) {
      const start = match.index;
      const end = start + match[0].length;
      const before = text.slice(last, start);
      pieces.push(
        before.slice(0, before.length - this.#prefixAtEnd(before)),
      );
      if (this.#prefixAtEnd(before) > 0) pieces.push(REDACTED);
      pieces.push(match[0]);
      const suffix = this.#suffixAtStart(text, end);
      if (suffix > 0) pieces.push(REDACTED);
      last = end + suffix;
    }
    pieces.push(text.slice(last));
    return pieces.join("");
  }

  /** The length of the longest start of a secret that ends `text`. */
  #prefixAtEnd(text: string): number {
    let best = 0;
    for (const secret of this.#secrets) {
      for (
        let k = Math.min(secret.length - 1, text.length);
        k >= MIN_FRAGMENT_LENGTH && k > best;
        k--
      ) {
        if (text.endsWith(secret.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }

  /** The length of the longest end of a secret that starts `text` at `at`. */
  #suffixAtStart(text: string, at: number): number {
    let best = 0;
    for (const secret of this.#secrets) {
      for (
        let k = Math.min(secret.length - 1, text.length - at);
        k >= MIN_FRAGMENT_LENGTH && k > best;
        k--
      ) {
        if (text.startsWith(secret.slice(secret.length - k), at)) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}

/**
 * Removes configured values from `text` by the module's rule (see
 * {@linkcode Redactor}; build one when redacting many texts).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { redactSecrets } from "./redact.ts";
 * const text = redactSecrets("token=abcd1234efgh region=eu", ["abcd1234efgh", "eu"]);
 * assert(text === "token=[redacted] region=eu");
 * ```
 *
 * @param text The text to clean.
 * @param values The configured values (e.g. a configuration's environment values).
 * @returns The text without the values.
 */
export function redactSecrets(text: string, values: Iterable<string>): string {
  return new Redactor(values).redact(text);
}

/**
 * Removes configured values from an error in place, by the module's rule:
 * every string property of its own (the message, the stack, a server's
 * message, a code, a URL...), then its `cause` and, for an
 * `AggregateError`, its `errors`, down to a few levels. Use it where an error
 * made from a server's answer leaves for the application.
 *
 * @example A server that echoes a configured value
 * ```ts
 * import { assert } from "@std/assert";
 * import { Redactor, redactError } from "./redact.ts";
 * const error = new Error("bad env: TOKEN=abcd1234efgh", {
 *   cause: new Error("abcd1234efgh"),
 * });
 * redactError(error, new Redactor(["abcd1234efgh"]));
 * assert(error.message === "bad env: TOKEN=[redacted]");
 * assert((error.cause as Error).message === "[redacted]");
 * ```
 *
 * @param error What was thrown (anything; only errors and strings change).
 * @param redactor The values.
 * @returns The same error (a string: the redacted string).
 */
export function redactError<T>(error: T, redactor: Redactor): T {
  if (redactor.empty) return error;
  if (typeof error === "string") return redactor.redact(error) as T;
  const seen = new Set<object>();
  const visit = (value: unknown, depth: number): void => {
    if (!(value instanceof Error) || seen.has(value) || depth > 8) return;
    seen.add(value);
    for (const name of Object.getOwnPropertyNames(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, name);
      if (!descriptor || typeof descriptor.value !== "string") continue;
      const clean = redactor.redact(descriptor.value);
      if (clean === descriptor.value) continue;
      if (descriptor.writable || descriptor.configurable) {
        try {
          Object.defineProperty(value, name, { ...descriptor, value: clean });
        } catch {
          // frozen: left as it is
        }
      }
    }
    visit(value.cause, depth + 1);
    if (value instanceof AggregateError && Array.isArray(value.errors)) {
      for (const inner of value.errors) visit(inner, depth + 1);
    }
  };
  visit(error, 0);
  return error;
}

/**
 * A copy of a JSON-like value (objects, arrays, strings, numbers...) with
 * every string redacted by the module's rule, the values of `skipKeys` (e.g.
 * base64 data) left as they are. Use it on an answer built from files and
 * configurations before it leaves (an MCP answer, a JSON result).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Redactor, redactDeep } from "./redact.ts";
 * const answer = { prompts: [{ name: "api", description: "uses abcd1234efgh" }] };
 * assertEquals(redactDeep(answer, new Redactor(["abcd1234efgh"])), {
 *   prompts: [{ name: "api", description: "uses [redacted]" }],
 * });
 * ```
 *
 * @param value The value.
 * @param redactor The values to remove.
 * @param skipKeys Keys whose values are kept whole.
 * @returns The redacted copy (the value itself when there is nothing to redact).
 */
export function redactDeep<T>(
  value: T,
  redactor: Redactor,
  skipKeys: ReadonlySet<string> = new Set(),
): T {
  if (redactor.empty) return value;
  const visit = (item: unknown, depth: number): unknown => {
    if (typeof item === "string") return redactor.redact(item);
    if (item === null || typeof item !== "object" || depth > 64) return item;
    if (Array.isArray(item)) return item.map((one) => visit(one, depth + 1));
    const copy: Record<string, unknown> = {};
    for (const [key, one] of Object.entries(item)) {
      copy[key] = skipKeys.has(key) ? one : visit(one, depth + 1);
    }
    return copy;
  };
  return visit(value, 0) as T;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}
