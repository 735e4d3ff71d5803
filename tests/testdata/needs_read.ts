/** Reads a file at import time: importing it needs `--allow-read`. */
export const text: string = await Deno.readTextFile(
  new URL("./needs_read.ts", import.meta.url),
);
