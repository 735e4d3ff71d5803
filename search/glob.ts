/**
 * Globs with ripgrep's `-g` semantics (gitignore-style override globs compiled
 * by the `globset` crate), so that both search engines filter files alike:
 *
 * - `*` and `?` never match `/`; `[abc]`, `[a-z]`, `[!a]` (or `[^a]`) classes;
 *   `{a,b}` alternatives (not nested); `\` escapes the next character;
 * - `**` as a whole segment matches any number of folders (`**\/x`, `a/**`,
 *   `a/**\/b`); elsewhere it is `*`;
 * - a glob without a slash matches the file (or folder) name at any depth; a
 *   glob with a slash matches the path relative to the searched folder (a
 *   leading `/` anchors too); a trailing `/` matches folders only;
 * - a leading `!` excludes.
 *
 * @module
 */

/** A compiled glob. */
export interface CompiledGlob {
  /** The glob as given. */
  readonly glob: string;
  /** Whether it excludes (a leading `!`). */
  readonly negated: boolean;
  /** Whether it matches folders only (a trailing `/`). */
  readonly dirOnly: boolean;
  /** The regular expression over a relative `/`-separated path. */
  readonly regex: RegExp;
  /** Whether the glob (without its `!`) matches a path. */
  matches(relativePath: string, isDir: boolean): boolean;
}

/**
 * Compiles a glob with ripgrep's `-g` semantics.
 *
 * @param glob The glob.
 * @returns The compiled glob.
 * @throws {TypeError} `Invalid glob "<glob>": <reason>` for an unclosed class
 *   or alternative, a nested alternative, or an empty glob.
 *
 * Needs no permission.
 *
 * @example Matching paths
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileGlob } from "@skillrun/skillrun/search";
 * const ts = compileGlob("*.{ts,tsx}");
 * assert(ts.matches("src/app.tsx", false));
 * const anchored = compileGlob("src/*.ts");
 * assert(anchored.matches("src/a.ts", false));
 * assert(!anchored.matches("src/sub/a.ts", false));
 * ```
 */
export function compileGlob(glob: string): CompiledGlob {
  if (typeof glob !== "string" || glob.length === 0) {
    throw new TypeError(`Invalid glob "${glob}": the glob is empty`);
  }
  if (glob.startsWith("#")) {
    throw new TypeError(
      `Invalid glob "${glob}": a glob starting with "#" is a comment (escape it as "\\#")`,
    );
  }
  const negated = glob.startsWith("!");
  // A leading `\!` or `\#` is the character itself.
  let line = negated || /^\\[!#]/.test(glob) ? glob.slice(1) : glob;
  // Trailing spaces are dropped, unless escaped.
  while (line.endsWith(" ") && !line.endsWith("\\ ")) line = line.slice(0, -1);
  const anchored = line.startsWith("/");
  if (anchored) line = line.slice(1);
  const dirOnly = line.length > 1 && line.endsWith("/");
  if (dirOnly) line = line.slice(0, -1);
  if (line.length === 0) {
    throw new TypeError(`Invalid glob "${glob}": the glob is empty`);
  }
  if (!anchored && !line.includes("/") && !line.startsWith("**/")) {
    line = `**/${line}`;
  }
  if (line.endsWith("/**")) line = `${line}/*`;
  const regex = new RegExp(`^${globToRegExpSource(line, glob)}$`, "su");
  return {
    glob,
    negated,
    dirOnly,
    regex,
    matches: (relativePath, isDir) =>
      (isDir || !dirOnly) && regex.test(relativePath),
  };
}

/** Escapes a character (outside a class, `u` mode allows only these). */
function escapeChar(c: string, inClass = false): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) || (inClass && c === "-") ? `\\${c}` : c;
}

/** Translates a glob (after gitignore processing) into regex source. */
function globToRegExpSource(glob: string, original: string): string {
  const chars = Array.from(glob);
  const fail = (reason: string): never => {
    throw new TypeError(`Invalid glob "${original}": ${reason}`);
  };
  let out = "";
  let inAlternation = false;
  for (let i = 0; i < chars.length;) {
    const c = chars[i]!;
    if (c === "\\") {
      if (i + 1 === chars.length) fail("dangling escape at the end");
      out += escapeChar(chars[i + 1]!);
      i += 2;
    } else if (c === "*") {
      let j = i;
      while (chars[j] === "*") j++;
      const before = chars[i - 1];
      const after = chars[j];
      const atStart = i === 0 || before === "/" ||
        (inAlternation && (before === "{" || before === ","));
      const atEnd = j === chars.length || after === "/" ||
        (inAlternation && (after === "}" || after === ","));
      if (j - i < 2 || !atStart || !atEnd) out += "[^/]*";
      // `**/` (a `/` before it is out already): zero or more folders.
      else if (after === "/") out += "(?:.*/)?";
      else out += ".*";
      i = after === "/" && j - i >= 2 && atStart ? j + 1 : j;
    } else if (c === "?") {
      out += "[^/]";
      i++;
    } else if (c === "[") {
      let j = i + 1;
      const negate = chars[j] === "!" || chars[j] === "^";
      if (negate) j++;
      let body = "";
      for (let first = true; chars[j] !== "]" || first; j++, first = false) {
        const d = chars[j];
        if (d === undefined) fail("unclosed character class");
        const range = d === "-" && body !== "" && chars[j + 1] !== "]";
        body += range ? "-" : escapeChar(d!, true);
      }
      out += negate ? `[^/${body}]` : `[${body}]`;
      i = j + 1;
    } else {
      if (c === "{") {
        if (inAlternation) fail("nested alternate groups are not allowed");
        inAlternation = true;
        out += "(?:";
      } else if (c === "}" && inAlternation) {
        inAlternation = false;
        out += ")";
      } else if (c === "," && inAlternation) out += "|";
      else out += escapeChar(c);
      i++;
    }
  }
  if (inAlternation) fail("unclosed alternate group");
  return out;
}
