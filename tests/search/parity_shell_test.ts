import { sharedTest } from "../helpers/shared_data.ts";
import { CORPUS_DATA, parity } from "./_parity_suite.ts";

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "ripgrep and the shell engine (with and without rg in the sandbox) give identical answers on the skills corpus",
  ),
  fn: (t) => parity(t, "shell"),
});
