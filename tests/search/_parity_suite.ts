/**
 * The parity suite: the ripgrep engine, the fallback (over local paths and
 * over the file system interface) and the shell engine (run through a real
 * local bash, with rg and with rg hidden from its PATH) give identical
 * answers on the same queries over the real skills corpus. Fails loudly when
 * ripgrep is missing. Run in two test files (local engines, shell engines),
 * so that the two halves run in parallel. Test-only.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { FallbackSearch } from "../../search/fallback.ts";
import { detectRipgrep, RipgrepSearch } from "../../search/ripgrep.ts";
import { ShellSearch } from "../../search/shell.ts";
import { bashShell, pathWithout } from "./_shell_testing.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import type {
  GlobRequest,
  GrepRequest,
  LsRequest,
  SearchEngine,
} from "../../search/types.ts";
import {
  anthropicsCollection,
  type SharedData,
} from "../helpers/shared_data.ts";

/** The real skills the parity runs on (they skip without ../shared). */
export const CORPUS_DATA: SharedData = anthropicsCollection();
const CORPUS = CORPUS_DATA.path.replace(/\/$/, "");

const GREP_QUERIES: GrepRequest[] = [
  { pattern: "skill" },
  { pattern: "SKILL", caseInsensitive: true },
  { pattern: "^#+ ", outputMode: "content" },
  { pattern: "def \\w+\\(", type: "py", outputMode: "content", context: 2 },
  { pattern: "import", outputMode: "count" },
  {
    pattern: "license",
    glob: "*.md",
    outputMode: "count",
    caseInsensitive: true,
  },
  {
    pattern: "\\bPDF\\b",
    outputMode: "content",
    before: 1,
    after: 3,
    headLimit: 50,
  },
  { pattern: "name:\\s*\\S+", outputMode: "content", glob: "**/SKILL.md" },
  {
    pattern: "---\\n(?:[^\\n]*\\n)*?description:",
    multiline: true,
    outputMode: "count",
  },
  {
    pattern: "```python\\n.*?```",
    multiline: true,
    outputMode: "content",
    headLimit: 40,
  },
  { pattern: "the", outputMode: "content", headLimit: 20, offset: 10 },
  { pattern: "the", headLimit: 5, offset: 3 },
  { pattern: "the", outputMode: "count", headLimit: 7, offset: 2 },
  { pattern: "[A-Z]{3,}_[A-Z]+", outputMode: "content" },
  { pattern: "https?://[^\\s)]+", outputMode: "count" },
  { pattern: "TODO|FIXME|XXX", outputMode: "content" },
  {
    pattern: "function\\s+\\w+",
    type: "js",
    outputMode: "content",
    context: 1,
  },
  { pattern: "<div", type: "html", outputMode: "count" },
  { pattern: "^\\s*$", outputMode: "count", glob: "*.py" },
  { pattern: "é|ü|ö|—|“", outputMode: "content", headLimit: 30 },
  { pattern: "\\p{Lu}\\p{Ll}+ \\p{Lu}\\p{Ll}+", outputMode: "count" },
  { pattern: "(?i)anthropic" },
  {
    pattern: "skill",
    path: `${CORPUS}/skills/mcp-builder`,
    outputMode: "content",
    context: 3,
    headLimit: 60,
  },
  {
    pattern: "a",
    path: `${CORPUS}/skills/skill-creator/SKILL.md`,
    outputMode: "count",
  },
  { pattern: "e", outputMode: "content" },
  {
    pattern: "class \\w+",
    glob: "!**/scripts/**",
    outputMode: "files_with_matches",
  },
  { pattern: "Font|font", glob: "*.{txt,md}", outputMode: "count" },
  { pattern: "\\d{4}-\\d{2}-\\d{2}", outputMode: "content" },
  { pattern: "$\\n^#", multiline: true, outputMode: "content", headLimit: 20 },
  {
    pattern: "print\\(",
    type: "py",
    outputMode: "content",
    after: 2,
    headLimit: 25,
    offset: 5,
  },
  { pattern: "[[:upper:]][[:digit:]]", outputMode: "count" },
  { pattern: "x", type: "txt" },
  { pattern: "\\.(?:py|js|sh)\\b", outputMode: "count", caseInsensitive: true },
  { pattern: "scripts\\/\\w+\\.py", outputMode: "content", headLimit: 30 },
  {
    pattern: "if .*:\\s*$",
    type: "py",
    outputMode: "content",
    before: 2,
    maxOutputChars: 3000,
  },
];

const GLOB_QUERIES: GlobRequest[] = [
  { pattern: "**/*.py" },
  { pattern: "*.md", limit: 500 },
  { pattern: "skills/*/SKILL.md", limit: 500 },
  { pattern: "**/scripts/*.py", limit: 500 },
  { pattern: "*.[tj]s" },
  { pattern: "*.{ttf,pdf}", limit: 10 },
  { pattern: "**/canvas-fonts/[A-C]*" },
  { pattern: "skills/**", limit: 500 },
  { pattern: "?????.md" },
];

const LS_QUERIES: LsRequest[] = [
  { path: CORPUS, depth: 2 },
  { path: `${CORPUS}/skills`, depth: 3, limit: 50 },
];

/**
 * The engine with a 10-minute time limit where a query gives none: the shell
 * engine without rg reads the corpus through bash for every regex, which a
 * loaded machine can stretch past the default 30 s; the answers are compared,
 * not the speed.
 */
function patient(engine: SearchEngine): SearchEngine {
  const timeoutMs = 600_000;
  return {
    grep: (request) => engine.grep({ timeoutMs, ...request }),
    glob: (request) => engine.glob({ timeoutMs, ...request }),
    ls: (request) => engine.ls(request),
  };
}

function withoutEngine(value: object): object {
  return { ...value, engine: undefined };
}

/**
 * Compares the chosen engines with ripgrep on every query, one step each.
 *
 * @param t The test context.
 * @param which `local` (the fallback both ways, ripgrep's parallel content
 *   path) or `shell` (the shell engine with and without rg).
 */
export async function parity(
  t: Deno.TestContext,
  which: "local" | "shell",
): Promise<void> {
  const rg = await detectRipgrep();
  if (!rg) {
    throw new Error(
      "ripgrep (rg) is not installed: the parity test needs it; install ripgrep (e.g. apt-get install ripgrep) and run again",
    );
  }
  const fs = new LocalFileSystem({ cwd: CORPUS });
  const noRgPath = await pathWithout(["rg"]);
  const withRg = bashShell();
  const withoutRg = bashShell({ path: noRgPath });
  const engines: [string, SearchEngine][] = which === "local"
    ? [
      ["fallback (local)", new FallbackSearch({ fs, local: true })],
      ["fallback (fs)", new FallbackSearch({ fs, local: false })],
      [
        "shell on the host (find, no rg)",
        patient(
          new ShellSearch({
            shell: withoutRg,
            fs,
            useRipgrep: false,
            readFilesDirectly: true,
          }),
        ),
      ],
    ]
    : [
      [
        "shell (rg)",
        patient(new ShellSearch({ shell: withRg, fs, useRipgrep: true })),
      ],
      [
        "shell (find, no rg)",
        patient(new ShellSearch({ shell: withoutRg, fs })),
      ],
    ];
  const ripgrep = new RipgrepSearch({ fs });
  let compared = 0;
  let nonEmpty = 0;
  for (const [index, request] of GREP_QUERIES.entries()) {
    await t.step(`grep #${index + 1} ${JSON.stringify(request)}`, async () => {
      const expected = await ripgrep.grep(request);
      assertEquals(expected.engine, "ripgrep");
      if ((expected.totalEntries ?? 1) > 0) nonEmpty++;
      for (const [label, engine] of engines) {
        const actual = await engine.grep(request);
        assertEquals(withoutEngine(actual), withoutEngine(expected), label);
      }
      compared++;
    });
  }
  for (const [index, request] of GLOB_QUERIES.entries()) {
    await t.step(`glob #${index + 1} ${JSON.stringify(request)}`, async () => {
      const expected = await ripgrep.glob(request);
      if (expected.totalFiles > 0) nonEmpty++;
      for (const [label, engine] of engines) {
        const actual = await engine.glob(request);
        assertEquals(withoutEngine(actual), withoutEngine(expected), label);
      }
      compared++;
    });
  }
  for (const [index, request] of LS_QUERIES.entries()) {
    await t.step(`ls #${index + 1} ${JSON.stringify(request)}`, async () => {
      const expected = await ripgrep.ls(request);
      for (const [label, engine] of engines) {
        assertEquals(await engine.ls(request), expected, label);
      }
      compared++;
    });
  }
  await Deno.remove(noRgPath, { recursive: true });
  console.error(
    `parity: stdout bytes from the sandbox shell: ${withRg.stdoutBytes} with rg, ${withoutRg.stdoutBytes} without`,
  );
  assertEquals(
    compared,
    GREP_QUERIES.length + GLOB_QUERIES.length + LS_QUERIES.length,
  );
  // The queries must actually find things, or the comparison proves little.
  assert(nonEmpty >= 38, `only ${nonEmpty} queries found something`);
}
