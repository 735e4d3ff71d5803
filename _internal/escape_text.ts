/**
 * One escaping of text that came from outside (a skill, a package, an index, a
 * sandbox, a server) before a person or a model reads it: control characters,
 * Unicode tag characters and bidi controls become visible `\u....` escapes,
 * so a terminal never runs an escape sequence from a skill and the model and
 * the person read the same text.
 *
 * @module
 */

/**
 * Characters that are escaped: C0 controls but tab and newline, DEL, C1
 * controls, bidi embeddings, overrides and isolates (U+202A-U+202E,
 * U+2066-U+2069), the marks U+200E, U+200F and U+061C, and the Unicode tag
 * characters (U+E0000-U+E007F).
 */
const HIDDEN =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|\udb40[\udc00-\udc7f]/g;

const HIDDEN_TEST = new RegExp(HIDDEN.source);

/**
 * Text with every control character (tab and newline aside), bidi control and
 * Unicode tag character written as a visible escape: `\r`, `\u001b`,
 * `\u202e`, `\udb40\udc41` (U+E0041, as its UTF-16 pair): the escapes of
 * JSON and JavaScript, so escaped JSON stays JSON of the same value. Text
 * without any comes back as it is.
 *
 * @example A description that would clear the screen
 * ```ts
 * import { assert } from "@std/assert";
 * import { escapeControl } from "./escape_text.ts";
 * assert(escapeControl("ok\u001b[2J\ttab\nline") === "ok\\u001b[2J\ttab\nline");
 * assert(escapeControl("a\u202eb\u{e0041}") === "a\\u202eb\\udb40\\udc41");
 * const json = escapeControl(JSON.stringify({ d: "x\u202e\u{e0041}\u0085" }));
 * assert(JSON.parse(json).d === "x\u202e\u{e0041}\u0085");
 * ```
 *
 * @param text Any text.
 * @returns The text, escaped.
 */
export function escapeControl(text: string): string {
  if (!HIDDEN_TEST.test(text)) return text;
  return text.replace(HIDDEN, (char) => {
    if (char === "\r") return "\\r";
    let escaped = "";
    for (let i = 0; i < char.length; i++) {
      escaped += `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`;
    }
    return escaped;
  });
}

/** A class of characters a person cannot see, as {@linkcode hiddenCharacters} names it. */
export type HiddenCharacterClass =
  | "control characters"
  | "Unicode tag characters"
  | "bidi control characters";

/**
 * The classes of hidden characters a text holds (in that order: control
 * characters but tab and newline, Unicode tag characters, bidi controls), each
 * with the first one found written as `U+XXXX`. Empty when there are none.
 *
 * @example A description hiding tag characters and a bidi override
 * ```ts
 * import { assert } from "@std/assert";
 * import { hiddenCharacters } from "./escape_text.ts";
 * const found = hiddenCharacters("a\u{e0041}b\u202e");
 * assert(found.length === 2);
 * assert(found[0]!.kind === "Unicode tag characters" && found[0]!.first === "U+E0041");
 * assert(found[1]!.kind === "bidi control characters");
 * assert(hiddenCharacters("plain\ttext\n").length === 0);
 * ```
 *
 * @param text Any text.
 * @returns The classes found.
 */
export function hiddenCharacters(
  text: string,
): { kind: HiddenCharacterClass; first: string }[] {
  if (!HIDDEN_TEST.test(text)) return [];
  const firsts = new Map<HiddenCharacterClass, string>();
  for (const match of text.matchAll(HIDDEN)) {
    const code = match[0].codePointAt(0)!;
    const kind: HiddenCharacterClass = code >= 0xe0000
      ? "Unicode tag characters"
      : code >= 0x200 && code !== 0x7f
      ? "bidi control characters"
      : "control characters";
    if (!firsts.has(kind)) {
      firsts.set(
        kind,
        `U+${code.toString(16).toUpperCase().padStart(4, "0")}`,
      );
    }
  }
  const order: HiddenCharacterClass[] = [
    "control characters",
    "Unicode tag characters",
    "bidi control characters",
  ];
  return order.filter((k) => firsts.has(k)).map((kind) => ({
    kind,
    first: firsts.get(kind)!,
  }));
}
