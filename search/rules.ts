/**
 * The rules both search engines share: which folders are skipped, which files
 * are binary, the file types of `grep`'s `type` filter and the order of paths.
 *
 * @module
 */
import { HEAVY_FOLDER_NAMES } from "../_internal/heavy_folders.ts";

/**
 * Folders skipped below the search root (a root inside one is searched):
 * version control data, dependencies, virtual environments, caches and build
 * output.
 */
export const HEAVY_FOLDERS: ReadonlySet<string> = new Set(HEAVY_FOLDER_NAMES);

/** A file is binary when a NUL byte is in its first 8 KiB. */
export const BINARY_SNIFF_BYTES = 8192;

/** The file types of `grep`'s `type` filter, as file name extensions. */
export const FILE_TYPES: Readonly<Record<string, readonly string[]>> = {
  c: ["c", "h"],
  cpp: ["cpp", "cc", "cxx", "hpp", "hh", "hxx", "h"],
  csharp: ["cs"],
  css: ["css", "scss", "sass", "less"],
  csv: ["csv", "tsv"],
  go: ["go"],
  html: ["html", "htm", "xhtml"],
  java: ["java"],
  js: ["js", "jsx", "mjs", "cjs"],
  json: ["json", "jsonc", "jsonl"],
  kotlin: ["kt", "kts"],
  md: ["md", "markdown", "mdown", "mkdn", "mdx"],
  php: ["php"],
  py: ["py", "pyi"],
  ruby: ["rb"],
  rust: ["rs"],
  sh: ["sh", "bash", "zsh", "ksh"],
  sql: ["sql"],
  swift: ["swift"],
  toml: ["toml"],
  ts: ["ts", "tsx", "mts", "cts"],
  txt: ["txt"],
  xml: ["xml", "xsd", "xsl", "xslt", "svg"],
  yaml: ["yaml", "yml"],
};

const TYPE_ALIASES: Readonly<Record<string, string>> = {
  javascript: "js",
  typescript: "ts",
  python: "py",
  markdown: "md",
  yml: "yaml",
  rs: "rust",
  bash: "sh",
  shell: "sh",
  text: "txt",
  golang: "go",
  rb: "ruby",
  "c++": "cpp",
  cs: "csharp",
};

/**
 * The extensions of a file type of `grep`'s `type` filter.
 *
 * @param type A type name (`ts`, `py`...) or alias (`typescript`, `python`).
 * @returns Its extensions, without dots.
 * @throws {TypeError} When the type is unknown, naming the known ones.
 *
 * Needs no permission.
 *
 * @example Extensions of a type
 * ```ts
 * import { assert } from "@std/assert";
 * import { extensionsOfType } from "@skillrun/skillrun/search";
 * assert(extensionsOfType("typescript").includes("tsx"));
 * ```
 */
export function extensionsOfType(type: string): readonly string[] {
  const name = TYPE_ALIASES[type.toLowerCase()] ?? type.toLowerCase();
  const extensions = Object.hasOwn(FILE_TYPES, name)
    ? FILE_TYPES[name]
    : undefined;
  if (!extensions) {
    throw new TypeError(
      `Unknown file type "${type}": expected one of ${
        Object.keys(FILE_TYPES).join(", ")
      }`,
    );
  }
  return extensions;
}

/**
 * Whether a file's first bytes say it is binary (a NUL byte in the first
 * {@linkcode BINARY_SNIFF_BYTES}).
 *
 * @param bytes The file's first bytes (or all of them).
 * @returns Whether it is binary.
 *
 * Needs no permission.
 *
 * @example Sniffing
 * ```ts
 * import { assert } from "@std/assert";
 * import { isBinary } from "@skillrun/skillrun/search";
 * assert(isBinary(new Uint8Array([104, 0, 105])));
 * assert(!isBinary(new TextEncoder().encode("hello")));
 * ```
 */
export function isBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).indexOf(0) !== -1;
}

export { comparePaths } from "../_internal/compare.ts";

/** Joins a folder and a relative `/`-separated path. */
export function joinPath(folder: string, relative: string): string {
  if (relative === "") return folder;
  return folder.endsWith("/") ? folder + relative : `${folder}/${relative}`;
}
