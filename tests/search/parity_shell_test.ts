import { parity } from "./_parity_suite.ts";

Deno.test(
  "ripgrep and the shell engine (with and without rg in the sandbox) give identical answers on the skills corpus",
  (t) => parity(t, "shell"),
);
