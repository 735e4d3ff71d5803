/**
 * A fast path for the plain front matter most skills have: `key: value` lines
 * and one level of nested `key: value` maps, plain scalars only. It gives
 * exactly what `parseYaml(text, { schema: "failsafe" })` gives for that subset
 * and `undefined` for anything else, so the caller falls back to the full
 * parser. Loading a thousand skills spends most of its time in YAML otherwise.
 *
 * @module
 */

const KEY_LINE = /^([A-Za-z0-9_][A-Za-z0-9_.-]*):(?: +(.*))?$/;
const NESTED_LINE = /^( +)([A-Za-z0-9_][A-Za-z0-9_.-]*): +(.*)$/;
/** A first character that makes a scalar more than plain text. */
const INDICATOR = /^[-?:,[\]{}#&*!|>'"%@`]/;

/** A plain scalar as YAML reads it, or `undefined` when it is not one. */
function plainScalar(raw: string): string | undefined {
  const value = raw.trim();
  if (
    value === "" || INDICATOR.test(value) || value.includes(": ") ||
    value.endsWith(":") || value.includes(" #") || value.includes("\t")
  ) return undefined;
  return value;
}

/**
 * Parses simple YAML, or returns `undefined` when the text is not simple
 * enough to be sure of the answer.
 */
export function parseSimpleYaml(
  text: string,
): Record<string, unknown> | undefined {
  if (text.includes("\t")) return undefined;
  const lines = text.split("\n");
  const result: Record<string, unknown> = {};
  let any = false;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    i++;
    if (line.trim() === "" || line.startsWith("#")) continue;
    const match = KEY_LINE.exec(line);
    if (!match) return undefined;
    const key = match[1]!;
    if (Object.hasOwn(result, key) || key === "__proto__") return undefined;
    const rawValue = match[2] ?? "";
    any = true;
    if (rawValue.trim() !== "") {
      const value = plainScalar(rawValue);
      if (value === undefined) return undefined;
      // A following indented line would continue the scalar: not simple.
      const next = lines[i];
      if (next !== undefined && /^ +\S/.test(next)) return undefined;
      result[key] = value;
      continue;
    }
    // An empty value: null, or a nested map of plain scalars.
    const nested: Record<string, string> = {};
    let indent = -1;
    while (i < lines.length) {
      const inner = lines[i]!;
      if (inner.trim() === "") {
        i++;
        continue;
      }
      if (!inner.startsWith(" ")) break;
      const innerMatch = NESTED_LINE.exec(inner);
      if (!innerMatch) return undefined;
      const [, spaces, innerKey, innerRaw] = innerMatch as unknown as [
        string,
        string,
        string,
        string,
      ];
      if (indent === -1) indent = spaces.length;
      if (spaces.length !== indent) return undefined;
      if (Object.hasOwn(nested, innerKey) || innerKey === "__proto__") {
        return undefined;
      }
      const value = plainScalar(innerRaw);
      if (value === undefined) return undefined;
      nested[innerKey] = value;
      i++;
    }
    result[key] = indent === -1 ? null : nested;
  }
  return any ? result : undefined;
}
