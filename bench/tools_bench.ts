/**
 * Benchmarks of the model-facing tools: `read` near the end of a 1 GiB text
 * file, against `tail -n 2000`; `write` through a temporary file and a rename
 * (a hard link never writes outside), against the old in-place write.
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { createToolContext } from "../tools/context.ts";
import { createReadTool } from "../tools/read.ts";
import { createWriteTool } from "../tools/write.ts";
import { LocalSkillRuntime } from "../runtimes/local/mod.ts";
import { LocalFileSystem } from "../runtimes/local/fs.ts";

const DATA = new URL("./.data/", import.meta.url).pathname;
const BIG = `${DATA}read_1gib.txt`;
const BLOCK_BYTES = 1024 * 1024;
const BLOCKS = 1024;
const LINE_BYTES = 64;
const LINES = (BLOCK_BYTES / LINE_BYTES) * BLOCKS;
const WINDOW = 2000;

/** Writes the 1 GiB file once: a 1 MiB block of 64-byte lines, 1024 times. */
async function makeBigFile(): Promise<void> {
  const size = BLOCK_BYTES * BLOCKS;
  const info = await Deno.stat(BIG).catch(() => null);
  if (info?.size === size) return;
  await Deno.mkdir(DATA, { recursive: true });
  const line = (n: number) =>
    `line ${String(n).padStart(8, "0")} `.padEnd(LINE_BYTES - 1, "x") + "\n";
  let block = "";
  for (let i = 0; i < BLOCK_BYTES / LINE_BYTES; i++) block += line(i);
  const bytes = new TextEncoder().encode(block);
  const temp = `${BIG}.tmp`;
  const file = await Deno.open(temp, {
    write: true,
    create: true,
    truncate: true,
  });
  try {
    for (let i = 0; i < BLOCKS; i++) {
      let written = 0;
      while (written < bytes.length) {
        written += await file.write(bytes.subarray(written));
      }
    }
  } finally {
    file.close();
  }
  await Deno.rename(temp, BIG);
}

const read = createReadTool(createToolContext(new LocalSkillRuntime()));

const WRITES = 200;
const WRITE_DIR = `${DATA}write/`;
const WRITE_TEXT = "x".repeat(4095) + "\n";

async function makeWriteDir(): Promise<void> {
  await Deno.mkdir(WRITE_DIR, { recursive: true });
}

const writeFs = new LocalFileSystem({ cwd: WRITE_DIR });
const writeTool = createWriteTool(
  createToolContext(new LocalSkillRuntime({ cwd: WRITE_DIR })),
);

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "tools-write-rename",
  title:
    `write: ${WRITES} overwrites of a 4 KiB file (temporary file + rename vs in place)`,
  module: import.meta.url,
  setup: makeWriteDir,
  iterations: 5,
  rounds: 3,
  ours: {
    label: "fs.writeText (temporary file + rename)",
    fn: async () => {
      for (let i = 0; i < WRITES; i++) {
        await writeFs.writeText(`f${i % 10}.txt`, WRITE_TEXT);
      }
    },
  },
  baseline: {
    label: "old fs.writeText (resolve, mkdir, in-place write)",
    fn: async () => {
      for (let i = 0; i < WRITES; i++) {
        const path = await writeFs.resolve(`g${i % 10}.txt`);
        await Deno.mkdir(WRITE_DIR, { recursive: true });
        await Deno.writeTextFile(path, WRITE_TEXT);
      }
    },
  },
  extra: [{
    label: "write tool (whole call)",
    fn: async () => {
      for (let i = 0; i < WRITES; i++) {
        const result = await writeTool.execute({
          file_path: `h${i % 10}.txt`,
          content: WRITE_TEXT,
        });
        if (result.isError) throw new Error(result.text);
      }
    },
  }],
}, {
  id: "tools-read-1gib-tail",
  title: "read: last 2000 lines of a 1 GiB text file",
  module: import.meta.url,
  setup: makeBigFile,
  iterations: 3,
  rounds: 2,
  maxRssMiB: 100,
  ours: {
    label: "read tool (offset near the end)",
    fn: async () => {
      const result = await read.execute({
        file_path: BIG,
        offset: LINES - WINDOW + 1,
        limit: WINDOW,
      });
      if (result.isError || !result.text.includes(`of ${LINES})`)) {
        throw new Error(`read failed: ${result.text.slice(0, 200)}`);
      }
    },
  },
  baseline: {
    label: "tail -n 2000",
    fn: async () => {
      const output = await new Deno.Command("tail", {
        args: ["-n", String(WINDOW), BIG],
        stdout: "piped",
        stderr: "piped",
        stdin: "null",
      }).output();
      if (!output.success) throw new Error("tail failed");
    },
  },
}];

if (import.meta.main) await runChild(cases);
