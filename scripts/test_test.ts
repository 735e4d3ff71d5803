import { assertEquals } from "../tests/helpers/assert.ts";
import { closingLine, testJobs } from "./test.ts";

Deno.test("deno task test runs DENO_JOBS modules at once when it is a count, else twice the CPUs and at least 4", () => {
  assertEquals(testJobs("3", 2), "3");
  assertEquals(testJobs(undefined, 2), "4");
  assertEquals(testJobs(undefined, 1), "4");
  assertEquals(testJobs(undefined, 8), "16");
  assertEquals(testJobs("0", 2), "4");
  assertEquals(testJobs("many", 3), "6");
});

Deno.test("deno task test's closing line counts the skipped tests by what they need", () => {
  assertEquals(closingLine([]), "");
  const line = closingLine([
    { name: "a", needs: ["corpora/anthropics-skills/skills/pdf"] },
    { name: "b", needs: ["specs/e2b/openapi.yml"] },
    { name: "c", needs: ["specs/e2b/envd/envd.yaml"] },
  ]);
  assertEquals(
    line.startsWith(
      "skipped 3 tests: ../shared (third-party data beside the clone) is absent (1 need ../shared/corpora/anthropics-skills, 2 need ../shared/specs/e2b)",
    ),
    true,
    line,
  );
});
