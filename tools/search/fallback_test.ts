import { FallbackSearch } from "./fallback.ts";
import { createTestFileSystem } from "./_test_fs.ts";
import { engineSuite } from "./_test_suite.ts";

engineSuite(
  "FallbackSearch (local paths)",
  (root) => new FallbackSearch({ fs: createTestFileSystem(root), local: true }),
  { backtracks: true },
);

engineSuite(
  "FallbackSearch (file system interface)",
  (root) =>
    new FallbackSearch({ fs: createTestFileSystem(root), local: false }),
  { backtracks: true },
);
