import { FallbackSearch } from "./fallback.ts";
import { LocalFileSystem } from "../../runtimes/local/fs.ts";
import { engineSuite } from "./_test_suite.ts";

engineSuite(
  "FallbackSearch (local paths)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ root: root }),
      local: true,
    }),
  { backtracks: true },
);

engineSuite(
  "FallbackSearch (file system interface)",
  (root) =>
    new FallbackSearch({
      fs: new LocalFileSystem({ root: root }),
      local: false,
    }),
  { backtracks: true },
);
