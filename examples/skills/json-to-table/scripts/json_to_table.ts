/**
 * Converts a JSON array of objects into a Markdown table.
 *
 * Usage: deno run --allow-read --allow-write json_to_table.ts <input.json>
 *   <output.md> [--columns a,b,c] [--sort column]
 *
 * @module
 */

type Row = Record<string, unknown>;

/** The options of one conversion. */
export interface TableOptions {
  /** The columns to show, in order; default: every key in order of first appearance. */
  columns?: string[];
  /** The column to sort rows by. */
  sort?: string;
}

function cell(value: unknown): string {
  if (value === undefined || value === null) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.replaceAll("\\", "\\\\").replaceAll("|", "\\|").replace(
    /\r?\n/g,
    "<br>",
  );
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (a === undefined || a === null) {
    return b === undefined || b === null ? 0 : 1;
  }
  if (b === undefined || b === null) return -1;
  return String(a).localeCompare(String(b));
}

/**
 * Formats rows as a Markdown table.
 *
 * @param rows The records.
 * @param options Columns and sorting.
 * @returns The table, ending with a newline.
 * @throws {TypeError} `rows` is not an array of objects.
 *
 * @example A two-row table
 * ```ts
 * import { toMarkdownTable } from "./json_to_table.ts";
 * const table = toMarkdownTable([{ a: 2 }, { a: 1, b: "x" }], { sort: "a" });
 * if (table !== "| a | b |\n| --- | --- |\n| 1 | x |\n| 2 |  |\n") {
 *   throw new Error(`Unexpected table: ${table}`);
 * }
 * ```
 */
export function toMarkdownTable(
  rows: unknown,
  options: TableOptions = {},
): string {
  if (
    !Array.isArray(rows) ||
    !rows.every((r) => r !== null && typeof r === "object" && !Array.isArray(r))
  ) {
    throw new TypeError("the input must be a JSON array of objects");
  }
  const records = rows as Row[];
  const columns = options.columns ?? [
    ...new Set(records.flatMap((row) => Object.keys(row))),
  ];
  if (columns.length === 0) throw new TypeError("the input has no columns");
  const sorted = options.sort === undefined
    ? records
    : [...records].sort((a, b) => compare(a[options.sort!], b[options.sort!]));
  const lines = [
    `| ${columns.map(cell).join(" | ")} |`,
    `| ${columns.map(() => "---").join(" | ")} |`,
    ...sorted.map((row) =>
      `| ${columns.map((c) => cell(row[c])).join(" | ")} |`
    ),
  ];
  return lines.join("\n") + "\n";
}

async function main(args: string[]): Promise<number> {
  const positional: string[] = [];
  const options: TableOptions = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--columns") {
      options.columns = (args[++i] ?? "").split(",").map((c) => c.trim())
        .filter(Boolean);
    } else if (arg === "--sort") {
      const sort = args[++i];
      if (sort !== undefined) options.sort = sort;
    } else positional.push(arg);
  }
  const [input, output] = positional;
  if (!input || !output || positional.length > 2) {
    console.error(
      "usage: json_to_table.ts <input.json> <output.md> [--columns a,b,c] [--sort column]",
    );
    return 2;
  }
  let data: unknown;
  try {
    data = JSON.parse(await Deno.readTextFile(input));
  } catch (error) {
    console.error(
      `json-to-table: cannot read "${input}": ${(error as Error).message}`,
    );
    return 2;
  }
  let table: string;
  try {
    table = toMarkdownTable(data, options);
  } catch (error) {
    console.error(`json-to-table: ${(error as Error).message}`);
    return 2;
  }
  const slash = Math.max(output.lastIndexOf("/"), output.lastIndexOf("\\"));
  if (slash > 0) await Deno.mkdir(output.slice(0, slash), { recursive: true });
  await Deno.writeTextFile(output, table);
  console.log(
    `json-to-table: wrote ${output} (${(data as unknown[]).length} rows)`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
