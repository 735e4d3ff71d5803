/**
 * Translation of ripgrep's regular expression syntax (the Rust `regex` crate,
 * as in ripgrep 13) into an equivalent JavaScript `RegExp` (`v` flag), so that
 * the ripgrep engine and the pure TypeScript fallback give the same answers.
 *
 * What is translated so that both engines agree:
 * - `.` matches any character but `\n` (any character in multiline mode);
 * - `^`, `$` are line anchors; `\A`, `\z` are line anchors in line mode and
 *   text anchors in multiline mode; `(?-m)` makes `^`/`$` text anchors in
 *   multiline mode;
 * - `\d`, `\w`, `\s`, `\b` are Unicode-aware, as in Rust;
 * - classes with nested classes, `&&`, `--`, `~~` and `[:alpha:]` ASCII classes;
 * - inline flags `i`, `m`, `s`, `U`, `x` (`(?i)`, `(?i:...)`, `(?-i)`);
 * - `(?P<name>...)` and `(?<name>...)` groups;
 * - in line mode (not multiline), no class matches `\n` and a literal `\n` is
 *   refused, as ripgrep does.
 *
 * Leniency on top of ripgrep (the pattern given to ripgrep is rewritten):
 * escaped punctuation that Rust refuses (`\/`, `\"`, `\'`, `\:`...) is a
 * literal character.
 *
 * Refused in both engines with a clear message: look-around, backreferences,
 * `(?-u)`, `\<`/`\>`, octal escapes, unknown `[:name:]` classes.
 *
 * Known differences: JavaScript's engine backtracks, so where the fallback
 * matches in child processes (local paths, when it may start one) a pattern
 * with nested repetition (`(a+)+$`, or `(.*\n)*` in multiline mode) can run to
 * the time limit (a `SearchTimeoutError`, the process killed) where ripgrep
 * answers at once; in Workers the fallback matches in linear time
 * (`_linear.ts`) and answers too;
 * invalid UTF-8 bytes are U+FFFD for the fallback (which `.` matches) but raw
 * bytes for ripgrep; a class made empty by set operations is an error in Rust
 * but matches nothing in JavaScript; in multiline mode ripgrep restarts its
 * search after each match, so there `\A` also matches where the previous match
 * ended (the fallback: only at the start of the file).
 *
 * Why one long file: one parser of ripgrep's syntax and its translation; the
 * parts read the same token stream.
 *
 * @module
 */

/** Options of {@linkcode translateRegex}. */
export interface TranslateRegexOptions {
  /** Match letters regardless of case (ripgrep `-i`). */
  readonly caseInsensitive?: boolean;
  /**
   * Multiline mode (ripgrep `-U --multiline-dotall`): a match may span lines
   * and `.` matches `\n`.
   */
  readonly multiline?: boolean;
}

/** A pattern translated for both engines. */
export interface TranslatedRegex {
  /** The pattern as the caller wrote it. */
  readonly pattern: string;
  /** The JavaScript source, for `new RegExp(source, flags)`. */
  readonly source: string;
  /** The JavaScript flags: `v`, plus `i` when case-insensitive. */
  readonly flags: string;
  /** The pattern to give ripgrep (lenient escapes rewritten). */
  readonly ripgrepPattern: string;
  /**
   * The literal text the pattern matches, when it is one case-sensitive
   * literal without line breaks (for a byte-level search), else `null`.
   */
  readonly literal: string | null;
}

const WORD_CLASS = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
const WORD = `[${WORD_CLASS}]`;
const NOT_WORD = `[^${WORD_CLASS}]`;
// Not `(?<![^\n])`: V8 tries positions inside surrogate pairs, where such
// negative look-arounds succeed.
const LINE_START = "(?:^|(?<=\\n))";
const LINE_END = "(?=\\n|$)";
const TEXT_START = "^";
const TEXT_END = "$";
const WORD_BOUNDARY = `(?:(?<=${WORD})(?!${WORD})|(?<!${WORD})(?=${WORD}))`;
const NOT_WORD_BOUNDARY = `(?:(?<=${WORD})(?=${WORD})|(?<!${WORD})(?!${WORD}))`;

/** Characters that Rust lets (or makes) one escape. */
const RUST_META = new Set("\\.+*?()|[]{}^$#&-~");
/** Punctuation Rust refuses to see escaped, which we take as a literal. */
const LENIENT = new Set("!\"%',/:;=@_`");

const ASCII_CLASSES: Readonly<Record<string, string>> = {
  alnum: "0-9A-Za-z",
  alpha: "A-Za-z",
  ascii: "\\x00-\\x7F",
  blank: "\\x09\\x20",
  cntrl: "\\x00-\\x1F\\x7F",
  digit: "0-9",
  graph: "\\x21-\\x7E",
  lower: "a-z",
  print: "\\x20-\\x7E",
  punct: "\\x21-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7E",
  space: "\\x09-\\x0D\\x20",
  upper: "A-Z",
  word: "0-9A-Za-z\\x5F",
  xdigit: "0-9A-Fa-f",
};

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
  x: boolean;
}

/** One parsed item of a class: a single character or a class expression. */
type ClassItem =
  | { kind: "char"; cp: number }
  | { kind: "set"; js: string };

/**
 * Translates a ripgrep (Rust `regex`) pattern into a JavaScript regular
 * expression that matches the same text, and checks it.
 *
 * @param pattern The pattern, in ripgrep's syntax.
 * @param options Case-insensitivity and multiline mode.
 * @returns The JavaScript source and flags, the pattern for ripgrep and the
 *   literal when the pattern is one.
 * @throws {TypeError} `Invalid regex "<pattern>": <reason>` when the pattern is
 *   not valid (or uses what neither engine supports).
 *
 * Needs no permission.
 *
 * @example Translating a pattern
 * ```ts
 * import { assert } from "@std/assert";
 * import { translateRegex } from "@skillrun/skillrun/search";
 * const t = translateRegex("fn\\s+\\w+", { caseInsensitive: true });
 * const re = new RegExp(t.source, t.flags);
 * assert(re.test("FN  main"));
 * assert(translateRegex("hello").literal === "hello");
 * ```
 */
export function translateRegex(
  pattern: string,
  options: TranslateRegexOptions = {},
): TranslatedRegex {
  if (typeof pattern !== "string") {
    throw new TypeError("Invalid regex: the pattern must be a string");
  }
  const parser = new Parser(
    pattern,
    options.caseInsensitive ?? false,
    options.multiline ?? false,
  );
  const source = parser.parse();
  const flags = options.caseInsensitive ? "vi" : "v";
  try {
    new RegExp(source, flags);
  } catch (error) {
    throw new TypeError(
      `Invalid regex "${pattern}": ${
        (error as Error).message.replace(/^Invalid regular expression: /, "")
      }`,
    );
  }
  return {
    pattern,
    source,
    flags,
    ripgrepPattern: parser.ripgrepPattern(),
    literal: parser.literal(),
  };
}

class Parser {
  readonly #pattern: string;
  readonly #chars: string[];
  readonly #globalI: boolean;
  readonly #multiline: boolean;
  #pos = 0;
  #flags: Flags;
  /** Edits for the ripgrep pattern: [index in chars, count, replacement]. */
  readonly #edits: [number, number, string][] = [];
  /** Literal text so far, or null once anything but a literal was seen. */
  #literal: string[] | null = [];

  constructor(pattern: string, caseInsensitive: boolean, multiline: boolean) {
    this.#pattern = pattern;
    this.#chars = Array.from(pattern);
    this.#globalI = caseInsensitive;
    this.#multiline = multiline;
    this.#flags = {
      i: caseInsensitive,
      m: true,
      s: multiline,
      U: false,
      x: false,
    };
    if (caseInsensitive) this.#literal = null;
  }

  parse(): string {
    const source = this.#alternation(0);
    if (this.#pos < this.#chars.length) {
      // Only an unmatched `)` stops the top-level alternation early.
      this.#fail("unopened group");
    }
    return source;
  }

  ripgrepPattern(): string {
    const chars = [...this.#chars];
    for (const [index, count, replacement] of [...this.#edits].reverse()) {
      chars.splice(index, count, replacement);
    }
    return chars.join("");
  }

  literal(): string | null {
    if (!this.#literal || this.#literal.length === 0) return null;
    return this.#literal.join("");
  }

  #fail(reason: string): never {
    throw new TypeError(
      `Invalid regex "${this.#pattern}": ${reason} at position ${this.#pos}`,
    );
  }

  #peek(offset = 0): string | undefined {
    return this.#chars[this.#pos + offset];
  }

  #notLiteral(): void {
    this.#literal = null;
  }

  /** Skips whitespace and comments in `x` mode. */
  #skipExtended(): void {
    if (!this.#flags.x) return;
    for (;;) {
      const c = this.#peek();
      if (c === undefined) return;
      if (/\s/u.test(c)) {
        this.#pos++;
      } else if (c === "#") {
        while (this.#peek() !== undefined && this.#peek() !== "\n") {
          this.#pos++;
        }
      } else {
        return;
      }
    }
  }

  /** Parses alternatives until `)` or the end; restores flags after. */
  #alternation(depth: number): string {
    const saved = { ...this.#flags };
    const branches: string[] = [this.#concatenation(depth)];
    while (this.#peek() === "|") {
      this.#notLiteral();
      this.#pos++;
      branches.push(this.#concatenation(depth));
    }
    this.#flags = saved;
    return branches.join("|");
  }

  #concatenation(depth: number): string {
    const parts: string[] = [];
    for (;;) {
      this.#skipExtended();
      const c = this.#peek();
      if (c === undefined || c === "|") break;
      if (c === ")") {
        if (depth === 0) this.#fail("unopened group");
        break;
      }
      if (c === "*" || c === "+" || c === "?" || c === "{") {
        if (parts.length === 0) {
          this.#fail("repetition operator missing expression");
        }
        parts.push(this.#repetition(parts.pop()!));
        continue;
      }
      const atom = this.#atom(depth);
      if (atom !== null) parts.push(atom);
    }
    return parts.join("");
  }

  #repetition(atom: string): string {
    this.#notLiteral();
    const c = this.#chars[this.#pos++]!;
    let quantifier: string;
    if (c === "{") {
      const start = this.#pos;
      let body = "";
      while (this.#peek() !== undefined && this.#peek() !== "}") {
        body += this.#chars[this.#pos++];
      }
      if (this.#peek() !== "}") {
        this.#pos = start;
        this.#fail("unclosed counted repetition");
      }
      this.#pos++;
      const match = /^\s*(\d+)\s*(?:(,)\s*(\d+)?\s*)?$/.exec(body);
      if (!match) {
        this.#pos = start;
        this.#fail("repetition quantifier expects a valid decimal");
      }
      const min = Number(match[1]);
      const max = match[3] === undefined ? undefined : Number(match[3]);
      if (max !== undefined && min > max) {
        this.#fail(
          "invalid repetition count range, the start must be <= the end",
        );
      }
      quantifier = match[2] === undefined
        ? `{${min}}`
        : max === undefined
        ? `{${min},}`
        : `{${min},${max}}`;
    } else {
      quantifier = c;
    }
    let lazy = false;
    if (this.#peek() === "?") {
      lazy = true;
      this.#pos++;
    }
    if (this.#flags.U) lazy = !lazy;
    return `(?:${atom})${quantifier}${lazy ? "?" : ""}`;
  }

  /** Wraps a case-sensitive-or-not atom when its flag differs from the global one. */
  #cased(js: string): string {
    if (this.#flags.i === this.#globalI) return js;
    return this.#flags.i ? `(?i:${js})` : `(?-i:${js})`;
  }

  #atom(depth: number): string | null {
    const c = this.#chars[this.#pos]!;
    switch (c) {
      case "(":
        return this.#group(depth);
      case "[":
        this.#notLiteral();
        return this.#cased(this.#finishClass(this.#class()));
      case ".":
        this.#notLiteral();
        this.#pos++;
        return this.#flags.s && this.#multiline ? "[\\s\\S]" : "[^\\n]";
      case "^":
        this.#notLiteral();
        this.#pos++;
        return this.#multiline && !this.#flags.m ? TEXT_START : LINE_START;
      case "$":
        this.#notLiteral();
        this.#pos++;
        return this.#multiline && !this.#flags.m ? TEXT_END : LINE_END;
      case "\\":
        return this.#escape();
      default: {
        this.#pos++;
        return this.#literalChar(c.codePointAt(0)!);
      }
    }
  }

  #literalChar(cp: number): string {
    if (cp === 0x0a && !this.#multiline) {
      this.#fail(
        'the literal "\\n" is not allowed in a regex (use multiline mode to match across lines)',
      );
    }
    if (this.#literal) {
      if (this.#flags.i || cp === 0x0a) this.#notLiteral();
      else this.#literal.push(String.fromCodePoint(cp));
    }
    return this.#cased(charJs(cp));
  }

  #group(depth: number): string | null {
    const open = this.#pos;
    this.#pos++;
    this.#notLiteral();
    if (this.#peek() === "?") {
      this.#pos++;
      const next = this.#peek();
      if (next === "=" || next === "!") {
        this.#fail(
          "look-around, including look-ahead and look-behind, is not supported",
        );
      }
      if (next === "<" && (this.#peek(1) === "=" || this.#peek(1) === "!")) {
        this.#fail(
          "look-around, including look-ahead and look-behind, is not supported",
        );
      }
      if (next === "P" && this.#peek(1) === "<") {
        this.#pos += 2;
        this.#groupName();
      } else if (next === "<") {
        // `(?<name>` is `(?P<name>` for ripgrep 13.
        this.#edits.push([open + 2, 0, "P"]);
        this.#pos++;
        this.#groupName();
      } else {
        // Flags: `(?flags)` or `(?flags:...)`.
        const flags = { ...this.#flags };
        let negate = false;
        let any = false;
        for (;;) {
          const f = this.#peek();
          if (f === undefined) this.#fail("unclosed group");
          if (f === ")" || f === ":") break;
          if (f === "-") {
            if (negate) this.#fail("repeated negation in flags");
            negate = true;
          } else if (
            f === "i" || f === "m" || f === "s" || f === "U" || f === "x"
          ) {
            flags[f] = !negate;
            any = true;
          } else if (f === "u") {
            if (negate) this.#fail('flag "-u" (no Unicode) is not supported');
            any = true;
          } else {
            this.#fail(`unrecognized flag "${f}"`);
          }
          this.#pos++;
        }
        if (this.#peek() === ")") {
          if (!any) this.#fail("expected a flag");
          this.#pos++;
          this.#flags = flags;
          return null;
        }
        this.#pos++; // ":"
        const saved = this.#flags;
        this.#flags = flags;
        const inner = this.#alternation(depth + 1);
        this.#flags = saved;
        this.#closeGroup(open);
        return `(?:${inner})`;
      }
    }
    const inner = this.#alternation(depth + 1);
    this.#closeGroup(open);
    return `(?:${inner})`;
  }

  #groupName(): void {
    let name = "";
    while (this.#peek() !== undefined && this.#peek() !== ">") {
      name += this.#chars[this.#pos++];
    }
    if (this.#peek() !== ">") this.#fail("unclosed capture group name");
    if (!/^[_A-Za-z][_A-Za-z0-9.[\]]*$/.test(name)) {
      this.#fail(`invalid capture group name "${name}"`);
    }
    this.#pos++;
  }

  #closeGroup(open: number): void {
    if (this.#peek() !== ")") {
      this.#pos = open;
      this.#fail("unclosed group");
    }
    this.#pos++;
  }

  /** Parses `\...` outside a class. */
  #escape(): string {
    const start = this.#pos;
    this.#pos++;
    const c = this.#peek();
    if (c === undefined) this.#fail("incomplete escape sequence");
    switch (c) {
      case "d":
      case "D":
      case "s":
      case "S":
      case "w":
      case "W":
      case "p":
      case "P":
        this.#notLiteral();
        return this.#cased(this.#finishClass(this.#classEscape()!));
      case "b":
        this.#pos++;
        this.#notLiteral();
        return WORD_BOUNDARY;
      case "B":
        this.#pos++;
        this.#notLiteral();
        return NOT_WORD_BOUNDARY;
      case "A":
        this.#pos++;
        this.#notLiteral();
        return this.#multiline ? TEXT_START : LINE_START;
      case "z":
        this.#pos++;
        this.#notLiteral();
        return this.#multiline ? TEXT_END : LINE_END;
      case "<":
      case ">":
        this.#fail(
          `unrecognized escape sequence "\\${c}" (use \\b for a word boundary)`,
        );
    }
    if (LENIENT.has(c)) {
      // Rust refuses this escape: give ripgrep the bare character.
      this.#edits.push([start, 1, ""]);
      this.#pos++;
      return this.#literalChar(c.codePointAt(0)!);
    }
    if (c === " ") {
      // Rust allows `\ ` only in `x` mode.
      if (!this.#flags.x) this.#edits.push([start, 1, ""]);
      this.#pos++;
      return this.#literalChar(0x20);
    }
    const cp = this.#charEscape();
    return this.#literalChar(cp);
  }

  /**
   * Parses a character escape after the backslash (the position is on the
   * character after `\`). Returns the code point.
   */
  #charEscape(): number {
    const c = this.#chars[this.#pos]!;
    if (RUST_META.has(c)) {
      this.#pos++;
      return c.codePointAt(0)!;
    }
    const simple: Record<string, number> = {
      n: 0x0a,
      r: 0x0d,
      t: 0x09,
      f: 0x0c,
      v: 0x0b,
      a: 0x07,
    };
    if (c in simple) {
      this.#pos++;
      return simple[c]!;
    }
    if (c === "x" || c === "u" || c === "U") {
      this.#pos++;
      const digits = c === "x" ? 2 : c === "u" ? 4 : 8;
      let hex = "";
      if (this.#peek() === "{") {
        this.#pos++;
        while (this.#peek() !== undefined && this.#peek() !== "}") {
          hex += this.#chars[this.#pos++];
        }
        if (this.#peek() !== "}") this.#fail("unclosed hexadecimal escape");
        this.#pos++;
        if (!/^[0-9A-Fa-f]{1,8}$/.test(hex)) {
          this.#fail("invalid hexadecimal escape");
        }
      } else {
        for (let i = 0; i < digits; i++) {
          const d = this.#peek();
          if (d === undefined || !/[0-9A-Fa-f]/.test(d)) {
            this.#fail("invalid hexadecimal escape");
          }
          hex += d;
          this.#pos++;
        }
      }
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        this.#fail("hexadecimal escape is not a Unicode scalar value");
      }
      return cp;
    }
    if (LENIENT.has(c) || (c === " ")) {
      this.#pos++;
      return c.codePointAt(0)!;
    }
    if (/[0-9]/.test(c)) {
      this.#fail("backreferences and octal escapes are not supported");
    }
    this.#fail(`unrecognized escape sequence "\\${c}"`);
  }

  /**
   * Parses `\d`, `\w`, `\s`, `\p{..}` and their negations (the position is on
   * the letter). Returns a class expression, or `null` if it is not one.
   */
  #classEscape(): string | null {
    const c = this.#peek();
    switch (c) {
      case "d":
        this.#pos++;
        return "[\\p{Nd}]";
      case "D":
        this.#pos++;
        return "[^\\p{Nd}]";
      case "s":
        this.#pos++;
        return "[\\p{White_Space}]";
      case "S":
        this.#pos++;
        return "[^\\p{White_Space}]";
      case "w":
        this.#pos++;
        return WORD;
      case "W":
        this.#pos++;
        return NOT_WORD;
      case "p":
      case "P": {
        this.#pos++;
        let name: string;
        if (this.#peek() === "{") {
          this.#pos++;
          name = "";
          while (this.#peek() !== undefined && this.#peek() !== "}") {
            name += this.#chars[this.#pos++];
          }
          if (this.#peek() !== "}") this.#fail("unclosed Unicode class");
          this.#pos++;
        } else {
          const n = this.#peek();
          if (n === undefined) this.#fail("incomplete Unicode class");
          name = n;
          this.#pos++;
        }
        let negated = c === "P";
        if (name.startsWith("^")) {
          negated = !negated;
          name = name.slice(1);
        }
        const property = unicodeProperty(name);
        if (!property) this.#fail(`unknown Unicode class "${name}"`);
        return negated ? `[^${property}]` : `[${property}]`;
      }
    }
    return null;
  }

  /** In line mode, no class matches `\n`. */
  #finishClass(js: string): string {
    return this.#multiline ? js : `[${js}--\\n]`;
  }

  /** Parses a bracketed class (the position is on `[`); returns `[...]`. */
  #class(): string {
    const open = this.#pos;
    this.#pos++;
    let negated = false;
    if (this.#peek() === "^") {
      negated = true;
      this.#pos++;
    }
    let expression: string | null = null;
    let operator: string | null = null;
    let union: ClassItem[] = [];
    let first = true;
    const finishOperand = (): void => {
      if (union.length === 0) {
        this.#fail("empty character classes are not allowed");
      }
      const operand = `[${union.map(itemJs).join("")}]`;
      expression = expression === null
        ? operand
        : combine(expression, operator!, operand);
      union = [];
    };
    for (;;) {
      this.#skipExtendedInClass();
      const c = this.#peek();
      if (c === undefined) {
        this.#pos = open;
        this.#fail("unclosed character class");
      }
      if (c === "]" && !first) {
        this.#pos++;
        break;
      }
      first = false;
      const two = c + (this.#peek(1) ?? "");
      if (two === "&&" || two === "--" || two === "~~") {
        if (two === "--" && union.length === 0 && expression === null) {
          // A leading `-` is a literal.
          union.push({ kind: "char", cp: 0x2d });
          this.#pos++;
          continue;
        }
        finishOperand();
        operator = two;
        this.#pos += 2;
        continue;
      }
      const item = this.#classItem();
      if (
        item.kind === "set" && this.#peek() === "-" &&
        this.#peek(1) !== undefined && this.#peek(1) !== "]" &&
        this.#peek(1) !== "-"
      ) {
        this.#fail("invalid range boundary, must be a literal");
      }
      // A range `a-z`?
      if (
        item.kind === "char" && this.#peek() === "-" &&
        this.#peek(1) !== undefined && this.#peek(1) !== "]" &&
        this.#peek(1) !== "-"
      ) {
        this.#pos++;
        this.#skipExtendedInClass();
        const end = this.#classItem();
        if (end.kind !== "char") this.#fail("invalid range boundary");
        if (end.cp < item.cp) {
          this.#fail("invalid range, the start must be <= the end");
        }
        union.push({
          kind: "set",
          js: `${charJs(item.cp)}-${charJs(end.cp)}`,
        });
        continue;
      }
      union.push(item);
    }
    finishOperand();
    const body = expression!;
    if (
      !negated && !this.#multiline && operator === null && union.length === 0 &&
      body === `[${charJs(0x0a)}]`
    ) {
      this.#fail(
        'the literal "\\n" is not allowed in a regex (use multiline mode to match across lines)',
      );
    }
    return negated ? `[^${body}]` : body;
  }

  #skipExtendedInClass(): void {
    if (!this.#flags.x) return;
    while (this.#peek() !== undefined && /\s/u.test(this.#peek()!)) {
      this.#pos++;
    }
  }

  #classItem(): ClassItem {
    const c = this.#chars[this.#pos]!;
    if (c === "[") {
      if (this.#peek(1) === ":") {
        const rest = this.#chars.slice(this.#pos + 2).join("");
        const match = /^(\^?)([a-z]+):\]/.exec(rest);
        if (match) {
          const set = ASCII_CLASSES[match[2]!];
          if (!set) this.#fail(`unknown ASCII class "${match[2]}"`);
          this.#pos += 2 + match[0].length;
          return { kind: "set", js: match[1] ? `[^${set}]` : `[${set}]` };
        }
      }
      return { kind: "set", js: this.#class() };
    }
    if (c === "\\") {
      this.#pos++;
      if (this.#peek() === undefined) this.#fail("incomplete escape sequence");
      const set = this.#classEscape();
      if (set !== null) return { kind: "set", js: set };
      const e = this.#peek()!;
      if (e === "b") {
        this.#pos++;
        return { kind: "char", cp: 0x08 };
      }
      if (LENIENT.has(e) || (e === " " && !this.#flags.x)) {
        this.#edits.push([this.#pos - 1, 1, ""]);
      }
      return { kind: "char", cp: this.#charEscape() };
    }
    this.#pos++;
    return { kind: "char", cp: c.codePointAt(0)! };
  }
}

function combine(left: string, operator: string, right: string): string {
  if (operator === "~~") {
    return `[[${left}--${right}][${right}--${left}]]`;
  }
  return `[${left}${operator}${right}]`;
}

function itemJs(item: ClassItem): string {
  return item.kind === "char" ? charJs(item.cp) : item.js;
}

/** A character as a `v`-mode escape (valid inside and outside classes). */
function charJs(cp: number): string {
  if (
    (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) ||
    (cp >= 0x61 && cp <= 0x7a)
  ) {
    return String.fromCodePoint(cp);
  }
  return `\\u{${cp.toString(16)}}`;
}

const propertyCache = new Map<string, string | null>();

/** The JavaScript `\p{...}` for a Rust Unicode class name, or `null`. */
function unicodeProperty(name: string): string | null {
  if (propertyCache.has(name)) return propertyCache.get(name)!;
  const candidates: string[] = [];
  const trimmed = name.trim();
  const eq = /^([^=:!]+)\s*(?:=|:|!=)\s*(.+)$/.exec(trimmed);
  if (eq) {
    const key = loose(eq[1]!);
    const value = canonicalValue(eq[2]!);
    const keys: Record<string, string> = {
      gc: "General_Category",
      generalcategory: "General_Category",
      sc: "Script",
      script: "Script",
      scx: "Script_Extensions",
      scriptextensions: "Script_Extensions",
    };
    const canonicalKey = keys[key];
    if (canonicalKey) candidates.push(`${canonicalKey}=${value}`);
  } else {
    const value = canonicalValue(trimmed);
    candidates.push(trimmed, value, `Script=${value}`, `Script=${trimmed}`);
  }
  let found: string | null = null;
  for (const candidate of candidates) {
    if (!/^[A-Za-z0-9_=]+$/.test(candidate)) continue;
    try {
      new RegExp(`\\p{${candidate}}`, "v");
      found = `\\p{${candidate}}`;
      break;
    } catch {
      // Not a property JavaScript knows by that name.
    }
  }
  propertyCache.set(name, found);
  return found;
}

function loose(name: string): string {
  return name.replace(/[\s_-]/g, "").toLowerCase();
}

/** Rust compares names loosely; JavaScript needs `Title_Case` names. */
function canonicalValue(name: string): string {
  const words = name.trim().split(/[\s_-]+/).filter((w) => w.length > 0);
  if (words.length === 1 && /^[A-Za-z]{1,2}$/.test(words[0]!)) {
    // General category abbreviations: `L`, `Lu`.
    const w = words[0]!;
    return w[0]!.toUpperCase() + w.slice(1).toLowerCase();
  }
  return words.map((w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase())
    .join("_");
}
