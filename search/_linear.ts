/**
 * A linear-time matcher for the JavaScript regular expressions that
 * `translateRegex` (see `regex.ts`) emits: a Thompson NFA run as a Pike VM,
 * with thread priorities so that it finds the match a backtracking engine
 * finds (leftmost-first, greedy and lazy quantifiers), in time proportional
 * to the text's length times the pattern's size.
 *
 * It stands in for `RegExp` where matching runs in an in-process `Worker`:
 * `Worker.terminate()` does not stop a Worker busy in V8's native regular
 * expression code, nor in a JavaScript loop (Deno 2.9.6, measured), so a
 * catastrophic pattern (`(a+)+$`) kept a terminated Worker's core busy. This
 * matcher never backtracks, and it checks a stop flag that the pool sets.
 *
 * What it accepts (Unicode mode: the `v` or `u` flag; `i`, `m`, `s`, `g`,
 * `d`): alternation, non-capturing, capturing and named groups (captures are
 * not reported), modifier groups (`(?i:...)`, `(?-i:...)`), quantifiers
 * (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, each lazy with `?`), `^`, `$`, `.`,
 * `\b`, `\B`, classes and escapes of any kind (a class is one code point; its
 * membership is asked of a one-character `RegExp`, so Unicode properties, set
 * operations and case folding are exactly JavaScript's, and memoised), and
 * look-arounds whose alternatives are each one character (class or escape),
 * `^` or `$` (what `translateRegex` emits for line anchors and word
 * boundaries). Refused with a `TypeError`: backreferences, longer
 * look-arounds, `\q{...}` and properties of strings, the `y` flag, and
 * patterns that compile past 100,000 instructions (a counted repetition is
 * expanded).
 *
 * Same answers as `RegExp`: an iteration of a quantifier past its minimum that
 * matches the empty string fails, as in JavaScript (the VM tracks, per thread,
 * the loops whose iteration began at the current position).
 *
 * The whole matcher is one self-contained function ({@linkcode compileLinear}),
 * so that the worker can be made from its source (`Function.prototype
 * .toString()`).
 *
 * Why one long file: it is shipped to Workers as the source of one
 * function, so it cannot import anything.
 *
 * @module
 */

/** A match of a {@linkcode LinearRegExp}: what `matchText` reads of one. */
export interface LinearMatch {
  /** Where the match starts, in UTF-16 code units. */
  readonly index: number;
  /** The matched text. */
  readonly 0: string;
}

/**
 * A compiled pattern with the part of a global `RegExp`'s interface that
 * `matchText` uses.
 */
export interface LinearRegExp {
  /** Where the next {@linkcode LinearRegExp.exec} starts; set after each. */
  lastIndex: number;
  /** The pattern's source. */
  readonly source: string;
  /** The pattern's flags. */
  readonly flags: string;
  /**
   * Finds the first match at or after `lastIndex`, like a global `RegExp`:
   * on a match `lastIndex` becomes its end, else 0.
   *
   * @param text The text to search.
   * @returns The match, or `null`.
   */
  exec(text: string): LinearMatch | null;
}

/** Options of {@linkcode compileLinear}. */
export interface CompileLinearOptions {
  /**
   * A stop flag (usually over a `SharedArrayBuffer`): once its first element
   * is not 0, `exec` throws `Error("Search stopped")` at its next check (every
   * 1,024 positions). A `Worker` busy in JavaScript is not stopped by
   * `terminate()` in Deno 2.9.6 (measured): this is how it stops.
   */
  readonly stop?: Int32Array;
}

/**
 * Compiles a JavaScript regular expression (as `translateRegex` emits them)
 * into a matcher that runs in linear time and gives the same matches as
 * `new RegExp(source, flags)`.
 *
 * Self-contained (it refers to nothing outside its body), so that its source
 * can be shipped to a worker.
 *
 * @param source The pattern, in JavaScript syntax.
 * @param flags The flags: `v` or `u`, and any of `i`, `m`, `s`, `g`, `d`.
 * @param options A stop flag.
 * @returns The matcher.
 * @throws {TypeError} `Invalid regex "<source>": <reason>` for a pattern
 *   `RegExp` refuses, or one this matcher does not support. Its `exec` throws
 *   `Error("Search stopped")` once the stop flag is set.
 *
 * Needs no permission.
 *
 * @example Same match as RegExp, in linear time
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileLinear } from "./_linear.ts";
 * const re = compileLinear("(?:(?:a)+)+$", "vg");
 * re.lastIndex = 0;
 * assert(re.exec(`${"a".repeat(100_000)}b`) === null);
 * const word = compileLinear("fo+", "vgi");
 * word.lastIndex = 0;
 * const m = word.exec("a FOO b");
 * assert(m !== null && m.index === 2 && m[0] === "FOO");
 * ```
 */
export function compileLinear(
  source: string,
  flags: string,
  options: CompileLinearOptions = {},
): LinearRegExp {
  const stop = options.stop ?? null;
  // Everything below stays inside this function: see the module doc.
  const fail = (reason: string): never => {
    throw new TypeError(`Invalid regex "${source}": ${reason}`);
  };
  try {
    new RegExp(source, flags);
  } catch (error) {
    fail(
      (error as Error).message.replace(/^Invalid regular expression: /, ""),
    );
  }
  if (!/[uv]/.test(flags)) fail("the matcher needs the u or v flag");
  if (flags.includes("y")) fail("the sticky flag is not supported");
  const unicodeFlag = flags.includes("v") ? "v" : "u";

  // ---- Predicates: one code point against a class, an escape or a char.
  const SMALL = 0x800;
  const predKeys = new Map<string, number>();
  /** The code point a predicate is (case-sensitive literal), else -1. */
  const predLit: number[] = [];
  const predRe: (RegExp | null)[] = [];
  const predBig: Map<number, boolean>[] = [];
  let small = new Uint8Array(0);

  const addPred = (src: string, lit: number, i: boolean, s: boolean) => {
    const key = lit >= 0 ? `#${lit}` : `${i ? "i" : ""}${s ? "s" : ""}:${src}`;
    const known = predKeys.get(key);
    if (known !== undefined) return known;
    const id = predLit.length;
    predKeys.set(key, id);
    predLit.push(lit);
    predRe.push(
      lit >= 0 ? null : new RegExp(
        `^(?:${src})$`,
        `${unicodeFlag}${i ? "i" : ""}${s ? "s" : ""}`,
      ),
    );
    predBig.push(new Map());
    return id;
  };

  const testPred = (id: number, cp: number): boolean => {
    const lit = predLit[id]!;
    if (lit >= 0) return cp === lit;
    if (cp < SMALL) {
      const at = id * SMALL + cp;
      const known = small[at]!;
      if (known !== 0) return known === 2;
      const result = predRe[id]!.test(String.fromCodePoint(cp));
      small[at] = result ? 2 : 1;
      return result;
    }
    const big = predBig[id]!;
    const known = big.get(cp);
    if (known !== undefined) return known;
    const result = predRe[id]!.test(String.fromCodePoint(cp));
    big.set(cp, result);
    return result;
  };

  // ---- Parser (the syntax `RegExp` accepted above).
  type Node =
    | { t: "empty" }
    | { t: "char"; pred: number }
    | { t: "assert"; id: number }
    | { t: "cat"; items: Node[] }
    | { t: "alt"; items: Node[] }
    | { t: "rep"; body: Node; min: number; max: number; lazy: boolean };
  /**
   * Assertions: 0 text start, 1 text end, 2 line start, 3 line end, 4 word
   * boundary, 5 not a word boundary, 6 look-around (one character).
   */
  interface Assertion {
    kind: number;
    behind: boolean;
    negate: boolean;
    preds: number[];
    /** A look-around alternative `^` (behind) or `$` (ahead) matched. */
    anchor: boolean;
    /** Whether that anchor is a line anchor (`m` flag). */
    lineAnchor: boolean;
  }
  const assertions: Assertion[] = [];
  const addAssertion = (kind: number, extra: Partial<Assertion> = {}) => {
    assertions.push({
      kind,
      behind: false,
      negate: false,
      preds: [],
      anchor: false,
      lineAnchor: false,
      ...extra,
    });
    return assertions.length - 1;
  };

  let pos = 0;
  const hexEnd = (from: number, count: number): number => {
    let end = from;
    while (end < from + count && /[0-9A-Fa-f]/.test(source[end] ?? "")) end++;
    return end;
  };
  /** The end of the escape starting at `start` (on the backslash). */
  const escapeEnd = (start: number): number => {
    const c = source[start + 1];
    if (c === undefined) return fail("incomplete escape");
    if ((c === "u" || c === "x") && source[start + 2] === "{") {
      const close = source.indexOf("}", start + 3);
      return close < 0 ? fail("unclosed escape") : close + 1;
    }
    if (c === "p" || c === "P" || c === "q") {
      if (c === "q") fail("class strings (\\q) are not supported");
      if (source[start + 2] !== "{") return start + 3;
      const close = source.indexOf("}", start + 3);
      if (close < 0) fail("unclosed escape");
      const name = source.slice(start + 3, close);
      if (/^(?:Basic_Emoji|Emoji_Keycap_Sequence|RGI_Emoji\w*)$/.test(name)) {
        fail(`the property of strings "${name}" is not supported`);
      }
      return close + 1;
    }
    if (c === "u") {
      const end = hexEnd(start + 2, 4);
      const unit = parseInt(source.slice(start + 2, end), 16);
      if (
        unit >= 0xd800 && unit <= 0xdbff && source[end] === "\\" &&
        source[end + 1] === "u"
      ) {
        const end2 = hexEnd(end + 2, 4);
        const trail = parseInt(source.slice(end + 2, end2), 16);
        if (trail >= 0xdc00 && trail <= 0xdfff) return end2;
      }
      return end;
    }
    if (c === "x") return hexEnd(start + 2, 2);
    if (c === "c") return start + 3;
    if (c === "0") return start + 2;
    if (c >= "1" && c <= "9") fail("backreferences are not supported");
    if (c === "k") fail("backreferences are not supported");
    const cp = source.codePointAt(start + 1)!;
    return start + 1 + (cp > 0xffff ? 2 : 1);
  };
  /** The end of the class starting at `start` (on its `[`). */
  const classEnd = (start: number): number => {
    let depth = 0;
    let at = start;
    while (at < source.length) {
      const c = source[at]!;
      if (c === "\\") {
        at = escapeEnd(at);
        continue;
      }
      if (c === "[") depth++;
      else if (c === "]") {
        depth--;
        if (depth === 0) return at + 1;
      }
      at++;
    }
    return fail("unclosed class");
  };

  const parseAlternation = (i: boolean, m: boolean, s: boolean): Node => {
    const items: Node[] = [parseConcatenation(i, m, s)];
    while (source[pos] === "|") {
      pos++;
      items.push(parseConcatenation(i, m, s));
    }
    return items.length === 1 ? items[0]! : { t: "alt", items };
  };

  const parseConcatenation = (i: boolean, m: boolean, s: boolean): Node => {
    const items: Node[] = [];
    while (pos < source.length && source[pos] !== "|" && source[pos] !== ")") {
      let atom = parseAtom(i, m, s);
      for (;;) {
        const q = source[pos];
        let min: number;
        let max: number;
        if (q === "*") [min, max, pos] = [0, Infinity, pos + 1];
        else if (q === "+") [min, max, pos] = [1, Infinity, pos + 1];
        else if (q === "?") [min, max, pos] = [0, 1, pos + 1];
        else if (q === "{") {
          const found = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(pos));
          if (!found) return fail(`bad quantifier at ${pos}`);
          min = Number(found[1]);
          max = found[2] === undefined
            ? min
            : found[3] === ""
            ? Infinity
            : Number(found[3]);
          pos += found[0].length;
        } else break;
        let lazy = false;
        if (source[pos] === "?") {
          lazy = true;
          pos++;
        }
        atom = { t: "rep", body: atom, min, max, lazy };
      }
      if (atom.t === "cat") items.push(...atom.items);
      else if (atom.t !== "empty") items.push(atom);
    }
    return items.length === 0
      ? { t: "empty" }
      : items.length === 1
      ? items[0]!
      : { t: "cat", items };
  };

  /** One character of a look-around: a predicate, or an anchor. */
  const lookAround = (
    body: Node,
    behind: boolean,
    negate: boolean,
  ): Node => {
    const preds: number[] = [];
    let anchor = false;
    let lineAnchor = false;
    for (const item of body.t === "alt" ? body.items : [body]) {
      if (item.t === "char") preds.push(item.pred);
      else if (
        item.t === "assert" &&
        assertions[item.id]!.kind === (behind ? 0 : 1)
      ) anchor = true;
      else if (
        item.t === "assert" &&
        assertions[item.id]!.kind === (behind ? 2 : 3)
      ) {
        anchor = true;
        lineAnchor = true;
      } else {
        fail("look-arounds longer than one character are not supported");
      }
    }
    return {
      t: "assert",
      id: addAssertion(6, { behind, negate, preds, anchor, lineAnchor }),
    };
  };

  const parseAtom = (i: boolean, m: boolean, s: boolean): Node => {
    const c = source[pos]!;
    if (c === "(") {
      pos++;
      let node: Node;
      if (source[pos] === "?") {
        const next = source[pos + 1];
        if (next === ":") {
          pos += 2;
          node = parseAlternation(i, m, s);
        } else if (
          next === "=" || next === "!" ||
          (next === "<" && (source[pos + 2] === "=" || source[pos + 2] === "!"))
        ) {
          const behind = next === "<";
          const negate = (behind ? source[pos + 2] : next) === "!";
          pos += behind ? 3 : 2;
          node = lookAround(parseAlternation(i, m, s), behind, negate);
        } else if (next === "<") {
          pos = source.indexOf(">", pos) + 1;
          node = parseAlternation(i, m, s);
        } else {
          // Modifiers: (?ims-ims:...)
          const found = /^\?([ims]*)(?:-([ims]*))?:/.exec(source.slice(pos));
          if (!found) return fail(`unsupported group at ${pos}`);
          pos += found[0].length;
          const on = found[1]!;
          const off = found[2] ?? "";
          node = parseAlternation(
            on.includes("i") ? true : off.includes("i") ? false : i,
            on.includes("m") ? true : off.includes("m") ? false : m,
            on.includes("s") ? true : off.includes("s") ? false : s,
          );
        }
      } else {
        node = parseAlternation(i, m, s);
      }
      if (source[pos] !== ")") fail(`unclosed group at ${pos}`);
      pos++;
      return node;
    }
    if (c === "[") {
      const end = classEnd(pos);
      const src = source.slice(pos, end);
      pos = end;
      return { t: "char", pred: addPred(src, -1, i, s) };
    }
    if (c === "^" || c === "$") {
      pos++;
      return {
        t: "assert",
        id: addAssertion((c === "$" ? 1 : 0) + (m ? 2 : 0)),
      };
    }
    if (c === ".") {
      pos++;
      return { t: "char", pred: addPred(".", -1, i, s) };
    }
    if (c === "\\") {
      const e = source[pos + 1];
      if (e === "b" || e === "B") {
        pos += 2;
        return {
          t: "assert",
          id: addAssertion(e === "b" ? 4 : 5, {
            preds: [addPred("\\w", -1, i, false)],
          }),
        };
      }
      const end = escapeEnd(pos);
      const src = source.slice(pos, end);
      pos = end;
      if (!i && /^\\u\{[0-9A-Fa-f]+\}$/.test(src)) {
        return {
          t: "char",
          pred: addPred(src, parseInt(src.slice(3, -1), 16), false, false),
        };
      }
      return { t: "char", pred: addPred(src, -1, i, s) };
    }
    const cp = source.codePointAt(pos)!;
    pos += cp > 0xffff ? 2 : 1;
    const src = `\\u{${cp.toString(16)}}`;
    return { t: "char", pred: addPred(src, i ? -1 : cp, i, s) };
  };

  const root = parseAlternation(
    flags.includes("i"),
    flags.includes("m"),
    flags.includes("s"),
  );
  if (pos !== source.length) fail(`unexpected ")" at ${pos}`);
  small = new Uint8Array(predLit.length * SMALL);

  // ---- Compiler: a program of instructions.
  const CHAR = 0;
  const MATCH = 1;
  const JMP = 2;
  const SPLIT = 3;
  const ASSERT = 4;
  const MARK = 5;
  const CHECK = 6;
  const MAX_PROGRAM = 100_000;
  const MAX_DEPTH = 30;
  const ops: number[] = [];
  const argA: number[] = [];
  const argB: number[] = [];
  const emit = (op: number, a = 0, b = 0): number => {
    if (ops.length >= MAX_PROGRAM) {
      fail(
        `the pattern is too large for the linear matcher (over ${MAX_PROGRAM} instructions; counted repetitions are expanded)`,
      );
    }
    ops.push(op);
    argA.push(a);
    argB.push(b);
    return ops.length - 1;
  };
  const nullable = (node: Node): boolean => {
    switch (node.t) {
      case "empty":
      case "assert":
        return true;
      case "char":
        return false;
      case "cat":
        return node.items.every(nullable);
      case "alt":
        return node.items.some(nullable);
      case "rep":
        return node.min === 0 || nullable(node.body);
    }
  };
  let hasChecks = false;
  let depth = 0;
  const compile = (node: Node): void => {
    switch (node.t) {
      case "empty":
        return;
      case "char":
        emit(CHAR, node.pred);
        return;
      case "assert":
        emit(ASSERT, node.id);
        return;
      case "cat":
        for (const item of node.items) compile(item);
        return;
      case "alt": {
        const jumps: number[] = [];
        for (let k = 0; k < node.items.length; k++) {
          if (k < node.items.length - 1) {
            const split = emit(SPLIT);
            argA[split] = split + 1;
            compile(node.items[k]!);
            jumps.push(emit(JMP));
            argB[split] = ops.length;
          } else {
            compile(node.items[k]!);
          }
        }
        for (const j of jumps) argA[j] = ops.length;
        return;
      }
      case "rep": {
        const { body, min, max, lazy } = node;
        for (let k = 0; k < min; k++) compile(body);
        if (max === min) return;
        // Past the minimum, an iteration that matches nothing fails.
        const check = nullable(body);
        const bit = depth;
        if (check) {
          if (depth >= MAX_DEPTH) fail("quantifiers nested too deeply");
          hasChecks = true;
          depth++;
        }
        const iteration = (): void => {
          if (check) emit(MARK, 1 << bit);
          compile(body);
          if (check) emit(CHECK, 1 << bit);
        };
        if (max === Infinity) {
          const split = emit(SPLIT);
          iteration();
          emit(JMP, split);
          const out = ops.length;
          argA[split] = lazy ? out : split + 1;
          argB[split] = lazy ? split + 1 : out;
        } else {
          const splits: number[] = [];
          for (let k = min; k < max; k++) {
            splits.push(emit(SPLIT));
            iteration();
          }
          const out = ops.length;
          for (const split of splits) {
            argA[split] = lazy ? out : split + 1;
            argB[split] = lazy ? split + 1 : out;
          }
        }
        if (check) depth--;
        return;
      }
    }
  };
  compile(root);
  emit(MATCH);
  const size = ops.length;
  const op = Int32Array.from(ops);
  const a = Int32Array.from(argA);
  const b = Int32Array.from(argB);

  // ---- Prefilters.
  // A match never holds "\n" when no predicate matches it: then a literal
  // the match must contain is on the match's line.
  let lineLocal = true;
  for (let id = 0; id < predLit.length; id++) {
    if (testPred(id, 10)) lineLocal = false;
  }
  /** The longest case-sensitive literal every match contains. */
  const required = (node: Node): string => {
    switch (node.t) {
      case "cat": {
        let best = "";
        let run = "";
        for (const item of node.items) {
          if (item.t === "char" && predLit[item.pred]! >= 0) {
            run += String.fromCodePoint(predLit[item.pred]!);
            if (run.length > best.length) best = run;
            continue;
          }
          run = "";
          const inner = required(item);
          if (inner.length > best.length) best = inner;
        }
        return best;
      }
      case "char":
        return predLit[node.pred]! >= 0
          ? String.fromCodePoint(predLit[node.pred]!)
          : "";
      case "rep":
        return node.min > 0 ? required(node.body) : "";
      default:
        return "";
    }
  };
  const literal = required(root);
  // The characters a match can start with (assertions taken as passing),
  // unless the pattern can match the empty string.
  const firstPreds: number[] = [];
  let firstFilter = true;
  {
    const seen = new Uint8Array(size);
    const stack = [0];
    while (stack.length > 0) {
      const pc = stack.pop()!;
      if (seen[pc]) continue;
      seen[pc] = 1;
      const o = op[pc]!;
      if (o === CHAR) firstPreds.push(a[pc]!);
      else if (o === MATCH) firstFilter = false;
      else if (o === JMP) stack.push(a[pc]!);
      else if (o === SPLIT) stack.push(b[pc]!, a[pc]!);
      else stack.push(pc + 1);
    }
  }
  const firstSmall = new Uint8Array(SMALL);
  const firstBig = new Map<number, boolean>();
  const testFirst = (cp: number): boolean => {
    if (cp < SMALL) {
      const known = firstSmall[cp]!;
      if (known !== 0) return known === 2;
    } else {
      const known = firstBig.get(cp);
      if (known !== undefined) return known;
    }
    let result = false;
    for (const id of firstPreds) {
      if (testPred(id, cp)) {
        result = true;
        break;
      }
    }
    if (cp < SMALL) firstSmall[cp] = result ? 2 : 1;
    else firstBig.set(cp, result);
    return result;
  };

  // ---- The VM.
  const isLineTerminator = (cp: number): boolean =>
    cp === 10 || cp === 13 || cp === 0x2028 || cp === 0x2029;
  const checkAssertion = (id: number, before: number, at: number): boolean => {
    const x = assertions[id]!;
    switch (x.kind) {
      case 0:
        return before < 0;
      case 1:
        return at < 0;
      case 2:
        return before < 0 || isLineTerminator(before);
      case 3:
        return at < 0 || isLineTerminator(at);
      case 4:
      case 5: {
        const word = x.preds[0]!;
        const w1 = before >= 0 && testPred(word, before);
        const w2 = at >= 0 && testPred(word, at);
        return (w1 !== w2) === (x.kind === 4);
      }
      default: {
        const cp = x.behind ? before : at;
        let found = false;
        if (cp < 0) found = x.anchor;
        else if (x.anchor && x.lineAnchor && isLineTerminator(cp)) found = true;
        else {
          for (const pred of x.preds) {
            if (testPred(pred, cp)) {
              found = true;
              break;
            }
          }
        }
        return found !== x.negate;
      }
    }
  };

  const MASK_UNIT = 1048576; // 2 ** 20: a stack entry is mask * 2 ** 20 + pc
  const visited = new Int32Array(size);
  let generation = 0;
  const maskSeen = new Set<number>();
  const stack: number[] = [];
  let listPc = new Int32Array(size);
  let listStart = new Int32Array(size);
  let nextPc = new Int32Array(size);
  let nextStart = new Int32Array(size);
  const closurePc = new Int32Array(size);
  const closureStart = new Int32Array(size);
  let closureCount = 0;

  /** Follows the empty transitions from `pc0` at a position, in priority order. */
  const closure = (pc0: number, start: number, before: number, at: number) => {
    stack.push(pc0);
    while (stack.length > 0) {
      const entry = stack.pop()!;
      let pc = entry;
      let mask = 0;
      if (entry >= MASK_UNIT) {
        mask = Math.floor(entry / MASK_UNIT);
        pc = entry - mask * MASK_UNIT;
      }
      const o = op[pc]!;
      if (mask === 0 || o === CHAR || o === MATCH) {
        if (visited[pc] === generation) continue;
        visited[pc] = generation;
      } else {
        if (maskSeen.has(entry)) continue;
        maskSeen.add(entry);
      }
      switch (o) {
        case CHAR:
        case MATCH:
          closurePc[closureCount] = pc;
          closureStart[closureCount++] = start;
          break;
        case JMP:
          stack.push(mask * MASK_UNIT + a[pc]!);
          break;
        case SPLIT:
          stack.push(mask * MASK_UNIT + b[pc]!, mask * MASK_UNIT + a[pc]!);
          break;
        case ASSERT:
          if (checkAssertion(a[pc]!, before, at)) {
            stack.push(mask * MASK_UNIT + pc + 1);
          }
          break;
        case MARK:
          stack.push((mask | a[pc]!) * MASK_UNIT + pc + 1);
          break;
        case CHECK:
          if ((mask & a[pc]!) === 0) stack.push(mask * MASK_UNIT + pc + 1);
          break;
      }
    }
  };

  const codePointAt = (text: string, p: number): number => {
    const c = text.charCodeAt(p);
    if (c >= 0xd800 && c <= 0xdbff && p + 1 < text.length) {
      const d = text.charCodeAt(p + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        return (c - 0xd800) * 0x400 + (d - 0xdc00) + 0x10000;
      }
    }
    return c;
  };
  const codePointBefore = (text: string, p: number): number => {
    if (p <= 0) return -1;
    const d = text.charCodeAt(p - 1);
    if (d >= 0xdc00 && d <= 0xdfff && p >= 2) {
      const c = text.charCodeAt(p - 2);
      if (c >= 0xd800 && c <= 0xdbff) {
        return (c - 0xd800) * 0x400 + (d - 0xdc00) + 0x10000;
      }
    }
    return d;
  };

  let literalAt = -1;
  /** The start of literalAt's line, or where the look back stopped. */
  let literalLine = -1;
  /**
   * The first position at or after `p` where a match may start, or -1 when
   * none can.
   */
  const skip = (text: string, p: number): number => {
    const length = text.length;
    if (literal !== "") {
      if (literalAt < p) {
        literalAt = text.indexOf(literal, p);
        if (literalAt < 0) return -1;
        if (lineLocal) {
          let lineStart = literalAt;
          while (lineStart > p && text.charCodeAt(lineStart - 1) !== 10) {
            lineStart--;
          }
          literalLine = lineStart;
        }
      }
      if (lineLocal && literalLine > p) p = literalLine;
    }
    if (!firstFilter) return p;
    let steps = 0;
    while (p < length) {
      if ((++steps & 0xffff) === 0 && stop !== null && Atomics.load(stop, 0)) {
        throw new Error("Search stopped");
      }
      const cp = codePointAt(text, p);
      if (testFirst(cp)) return p;
      p += cp > 0xffff ? 2 : 1;
    }
    return -1;
  };

  /** Runs the VM from `from`; returns [start, end] of the match, or null. */
  const run = (text: string, from: number): [number, number] | null => {
    const length = text.length;
    literalAt = -1;
    let listCount = 0;
    let matchStart = -1;
    let matchEnd = -1;
    let p = from;
    let before = codePointBefore(text, p);
    let steps = 0;
    for (;;) {
      if ((steps++ & 1023) === 0 && stop !== null && Atomics.load(stop, 0)) {
        throw new Error("Search stopped");
      }
      if (listCount === 0 && matchStart < 0) {
        const next = skip(text, p);
        if (next < 0) return null;
        if (next !== p) {
          p = next;
          before = codePointBefore(text, p);
        }
      }
      generation++;
      if (generation === 0x7fffffff) {
        visited.fill(0);
        generation = 1;
      }
      if (hasChecks) maskSeen.clear();
      const at = p < length ? codePointAt(text, p) : -1;
      closureCount = 0;
      for (let k = 0; k < listCount; k++) {
        closure(listPc[k]!, listStart[k]!, before, at);
      }
      if (matchStart < 0) closure(0, p, before, at);
      let nextCount = 0;
      for (let k = 0; k < closureCount; k++) {
        const pc = closurePc[k]!;
        if (op[pc] === MATCH) {
          matchStart = closureStart[k]!;
          matchEnd = p;
          break;
        }
        if (at >= 0 && testPred(a[pc]!, at)) {
          nextPc[nextCount] = pc + 1;
          nextStart[nextCount++] = closureStart[k]!;
        }
      }
      [listPc, nextPc] = [nextPc, listPc];
      [listStart, nextStart] = [nextStart, listStart];
      listCount = nextCount;
      if (p >= length || (listCount === 0 && matchStart >= 0)) break;
      before = at;
      p += at > 0xffff ? 2 : 1;
    }
    return matchStart < 0 ? null : [matchStart, matchEnd];
  };

  const matcher: LinearRegExp = {
    lastIndex: 0,
    source,
    flags,
    exec(text: string): LinearMatch | null {
      let from = Math.max(0, Math.floor(Number(matcher.lastIndex) || 0));
      if (from > text.length) {
        matcher.lastIndex = 0;
        return null;
      }
      if (from > 0 && from < text.length) {
        const c = text.charCodeAt(from);
        const l = text.charCodeAt(from - 1);
        if (c >= 0xdc00 && c <= 0xdfff && l >= 0xd800 && l <= 0xdbff) from--;
      }
      const found = run(text, from);
      if (found === null) {
        matcher.lastIndex = 0;
        return null;
      }
      matcher.lastIndex = found[1];
      return { index: found[0], 0: text.slice(found[0], found[1]) };
    },
  };
  return matcher;
}
