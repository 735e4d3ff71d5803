import { assert, assertEquals, assertFalse } from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { isInside, realLocation, trimSeparator } from "./_paths.ts";

Deno.test({
  name: "isInside() compares whole segments",
  ignore: Deno.build.os === "windows",
  fn() {
    assert(isInside("/a/b", "/a/b"));
    assert(isInside("/a/b/c", "/a/b"));
    assertFalse(isInside("/a/bc", "/a/b"));
    assertFalse(isInside("/a", "/a/b"));
    assert(isInside("/x", "/"));
    assertEquals(trimSeparator("/a/b//"), "/a/b");
    assertEquals(trimSeparator("/"), "/");
  },
});

Deno.test({
  name:
    "realLocation() resolves existing links and appends the missing rest, following dangling links",
  ignore: Deno.build.os === "windows",
  async fn() {
    const base = await Deno.realPath(await Deno.makeTempDir());
    try {
      await Deno.mkdir(`${base}/real/sub`, { recursive: true });
      await Deno.symlink(`${base}/real`, `${base}/link`);
      await Deno.symlink("real/new-dir", `${base}/dangling`);
      assertEquals(
        await realLocation(`${base}/link/sub/a/b.txt`),
        hostPath.join(base, "real/sub/a/b.txt"),
      );
      assertEquals(
        await realLocation(`${base}/dangling/x`),
        hostPath.join(base, "real/new-dir/x"),
      );
      assertEquals(await realLocation(`${base}/link`), `${base}/real`);
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  },
});
