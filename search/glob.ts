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
  let line = glob;
  let negated = false;
  if (line.startsWith("!")) {
    negated = true;
    line = line.slice(1);
  } else if (line.startsWith("\\!") || line.startsWith("\\#")) {
    line = line.slice(1);
  } else if (line.startsWith("#")) {
    throw new TypeError(
      `Invalid glob "${glob}": a glob starting with "#" is a comment (escape it as "\\#")`,
    );
  }
  // Trailing spaces are dropped, unless escaped.
  while (line.endsWith(" ") && !line.endsWith("\\ ")) line = line.slice(0, -1);
  let anchored = false;
  if (line.startsWith("/")) {
    anchored = true;
    line = line.slice(1);
  }
  let dirOnly = false;
  if (line.length > 1 && line.endsWith("/")) {
    dirOnly = true;
    line = line.slice(0, -1);
  }
  if (line.length === 0) {
    throw new TypeError(`Invalid glob "${glob}": the glob is empty`);
  }
  if (!anchored && !line.includes("/") && !line.startsWith("**/")) {
    line = `**/${line}`;
  }
  if (line.endsWith("/**")) line = `${line}/*`;
  const source = `^${globToRegExpSource(line, glob)}$`;
  const regex = new RegExp(source, "su");
  return {
    glob,
    negated,
    dirOnly,
    regex,
    matches(relativePath: string, isDir: boolean): boolean {
      if (dirOnly && !isDir) return false;
      return regex.test(relativePath);
    },
  };
}

/** Escapes a character outside a class (`u` mode allows only these). */
function escapeChar(c: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c;
}

/** Escapes a character inside a class. */
function escapeClassChar(c: string): string {
  return /[\\^$.*+?()[\]{}|/-]/.test(c) ? `\\${c}` : c;
}

/** Translates a glob (after gitignore processing) into regex source. */
function globToRegExpSource(glob: string, original: string): string {
  const chars = Array.from(glob);
  const fail = (reason: string): never => {
    throw new TypeError(`Invalid glob "${original}": ${reason}`);
  };
  let out = "";
  let inAlternation = false;
  let i = 0;
  while (i < chars.length) {
    const c = chars[i]!;
    if (c === "\\") {
      const next = chars[i + 1];
      if (next === undefined) fail("dangling escape at the end");
      out += escapeChar(next!);
      i += 2;
      continue;
    }
    if (c === "*") {
      let j = i;
      while (chars[j] === "*") j++;
      const stars = j - i;
      const atStart = i === 0 || chars[i - 1] === "/" ||
        (inAlternation && (chars[i - 1] === "{" || chars[i - 1] === ","));
      const atEnd = j === chars.length || chars[j] === "/" ||
        (inAlternation && (chars[j] === "}" || chars[j] === ","));
      if (stars >= 2 && atStart && atEnd) {
        const followedBySlash = chars[j] === "/";
        const precededBySlash = i > 0 && chars[i - 1] === "/";
        if (followedBySlash && !precededBySlash) {
          // `**/` prefix: zero or more folders.
          out += "(?:.*/)?";
          i = j + 1;
        } else if (followedBySlash && precededBySlash) {
          // `/**/`: the `/` before is out already; zero or more folders.
          out += "(?:.*/)?";
          i = j + 1;
        } else if (precededBySlash) {
          // `/**` suffix.
          out += ".*";
          i = j;
        } else {
          out += ".*";
          i = j;
        }
      } else {
        out += "[^/]*";
        i = j;
      }
      continue;
    }
    if (c === "?") {
      out += "[^/]";
      i++;
      continue;
    }
    if (c === "[") {
      let j = i + 1;
      let negate = false;
      if (chars[j] === "!" || chars[j] === "^") {
        negate = true;
        j++;
      }
      let body = "";
      let first = true;
      for (;;) {
        const d = chars[j];
        if (d === undefined) fail("unclosed character class");
        if (d === "]" && !first) break;
        first = false;
        if (d === "-" && body !== "" && chars[j + 1] !== "]") {
          body += "-";
        } else {
          body += escapeClassChar(d!);
        }
        j++;
      }
      out += negate ? `[^/${body}]` : `[${body}]`;
      i = j + 1;
      continue;
    }
    if (c === "{") {
      if (inAlternation) fail("nested alternate groups are not allowed");
      inAlternation = true;
      out += "(?:";
      i++;
      continue;
    }
    if (c === "}" && inAlternation) {
      inAlternation = false;
      out += ")";
      i++;
      continue;
    }
    if (c === "," && inAlternation) {
      out += "|";
      i++;
      continue;
    }
    out += escapeChar(c);
    i++;
  }
  if (inAlternation) fail("unclosed alternate group");
  return out;
}
