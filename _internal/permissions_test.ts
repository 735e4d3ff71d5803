import {
  assertEquals,
  assertInstanceOf,
  assertStrictEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { RuntimePermissionError, toPermissionError } from "./permissions.ts";
import { runDenoScript } from "../tests/helpers/testing.ts";

const MODULE = new URL("./permissions.ts", import.meta.url).href;

/** Runs a snippet under narrowed flags; returns what it printed as JSON. */
async function runNarrowed(
  flags: string[],
  body: string,
): Promise<Record<string, unknown>> {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-perm-" });
  try {
    const script = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      script,
      `import { toPermissionError } from ${JSON.stringify(MODULE)};
try { ${body}; console.log(JSON.stringify({ ok: true })); }
catch (e) {
  const m = toPermissionError(e, { operation: "write", path: ${
        JSON.stringify(`${dir}/outside.txt`)
      } }) as Error & Record<string, unknown>;
  console.log(JSON.stringify({ name: m.name, message: m.message, permission: m.permission, path: m.path, source: m.source }));
}`,
    );
    const { code, stdout, stderr } = await runDenoScript(script, flags);
    assertEquals(code, 0, stderr);
    const text = stdout.trim();
    return JSON.parse(text) as Record<string, unknown>;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("toPermissionError() maps a real --allow-write denial to a message naming the flag and path", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-perm-outer-" });
  try {
    const allowed = `${dir}/allowed`;
    await Deno.mkdir(allowed);
    const target = `${dir}/outside.txt`;
    const report = await runNarrowed(
      [`--allow-write=${allowed}`, `--allow-read=${allowed}`],
      `await Deno.writeTextFile(${JSON.stringify(target)}, "x")`,
    );
    assertEquals(report.name, "RuntimePermissionError");
    assertEquals(report.permission, "write");
    assertEquals(report.source, "deno");
    assertEquals(report.path, target);
    assertStringIncludes(String(report.message), "Deno denies write access");
    assertStringIncludes(
      String(report.message),
      `--allow-write=${target} (or a parent)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("toPermissionError() names the read permission from Deno's message, not the operation", () => {
  const error = toPermissionError(
    new Deno.errors.NotCapable(
      'Requires read access to "/etc/shadow", run again with the --allow-read flag',
    ),
    { operation: "download", path: "/etc/shadow" },
  );
  assertInstanceOf(error, RuntimePermissionError);
  assertEquals(error.permission, "read");
  assertEquals(error.source, "deno");
  assertEquals(
    error.message,
    'Cannot download "/etc/shadow": Deno denies read access; run with --allow-read=/etc/shadow (or a parent)',
  );
});

Deno.test("toPermissionError() shows the absolute path Deno refused when the caller gave a relative one", () => {
  const error = toPermissionError(
    new Deno.errors.NotCapable(
      'Requires write access to "/ws/out/a.txt", run again with the --allow-write flag',
    ),
    { operation: "write", path: "out/a.txt" },
  );
  assertInstanceOf(error, RuntimePermissionError);
  assertEquals(
    error.message,
    'Cannot write "out/a.txt": Deno denies write access to "/ws/out/a.txt"; run with --allow-write=/ws/out/a.txt (or a parent)',
  );
  assertEquals(error.path, "/ws/out/a.txt");
});

Deno.test("toPermissionError() maps a run denial to --allow-run with the command", () => {
  const error = toPermissionError(
    new Deno.errors.NotCapable(
      'Requires run access to "bash", run again with the --allow-run flag',
    ),
    { operation: "run", path: "bash" },
  );
  assertInstanceOf(error, RuntimePermissionError);
  assertEquals(error.permission, "run");
  assertStringIncludes(error.message, "run with --allow-run=bash");
  assertEquals(error.message.includes("(or a parent)"), false);
});

Deno.test("toPermissionError() maps the operating system's EACCES to source os", () => {
  const cause = new Deno.errors.PermissionDenied(
    "Permission denied (os error 13): open '/root/x'",
  );
  const error = toPermissionError(cause, {
    operation: "write",
    path: "/root/x",
  });
  assertInstanceOf(error, RuntimePermissionError);
  assertEquals(error.source, "os");
  assertEquals(error.permission, "write");
  assertEquals(error.path, "/root/x");
  assertStrictEquals(error.cause, cause);
  assertStringIncludes(
    error.message,
    'Cannot write "/root/x": the operating system denies write access',
  );
});

Deno.test("toPermissionError() returns other errors unchanged", () => {
  const notFound = new Deno.errors.NotFound("gone");
  assertStrictEquals(
    toPermissionError(notFound, { operation: "read" }),
    notFound,
  );
  assertStrictEquals(toPermissionError("text", { operation: "read" }), "text");
  const already = new RuntimePermissionError("x", {
    permission: "read",
    source: "os",
  });
  assertStrictEquals(
    toPermissionError(already, { operation: "read" }),
    already,
  );
});
