import { parity } from "./_parity_suite.ts";

Deno.test(
  "ripgrep and the fallback give identical answers on the skills corpus",
  (t) => parity(t, "local"),
);
