// The custom runtime of the example passes the conformance kit: this is how
// a runtime author runs it (one line per runtime, in a test file).
import { testRuntimeConformance } from "@skillrun/skillrun/testing";
import { FolderSkillRuntime } from "./custom_runtime.ts";

testRuntimeConformance(
  "FolderSkillRuntime (examples/custom_runtime.ts)",
  (setup) => new FolderSkillRuntime({ root: setup.dir }),
  { workspace: false },
);
