import { assertEquals, assertGreater } from "../_internal/assert.ts";
import { runDenoScript } from "../_internal/testing.ts";

const ROOT = new URL("../", import.meta.url);

/** Imports an entry point in a `deno run` with no permission flag at all. */
async function importWithoutPermissions(entry: string): Promise<number> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/import.ts`;
    await Deno.writeTextFile(
      script,
      `const m = await import(${
        JSON.stringify(new URL(entry, ROOT).href)
      });\n` +
        "console.log(Object.keys(m).length);\n",
    );
    const { code, stdout, stderr } = await runDenoScript(script, []);
    assertEquals(code, 0, `importing ${entry} failed:\n${stderr}`);
    return Number(stdout.trim());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("importing the main entry point needs no permission", async () => {
  assertGreater(await importWithoutPermissions("mod.ts"), 25);
});

Deno.test("importing every other entry point of deno.json needs no permission", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { exports: Record<string, string> };
  const entries = Object.entries(config.exports).filter(([name]) =>
    name !== "." && name !== "./cli"
  );
  assertGreater(entries.length, 2);
  for (const [, path] of entries) {
    assertGreater(await importWithoutPermissions(path), 0);
  }
});

Deno.test("the main entry point exports what an agent author needs, not internals", async () => {
  const main = await import(new URL("mod.ts", ROOT).href);
  for (
    const name of [
      "loadSkills",
      "validateSkill",
      "formatCatalog",
      "SkillRuntimeConfig",
      "LocalSkillRuntime",
      "buildSkillTools",
      "SkillToolsBuilder",
      "dispatchToolCall",
      "toOpenAIChatTools",
      "toAnthropicTools",
      "toAISDKTools",
      "SkillPreparationError",
      "WorkspaceEscapeError",
      "RuntimePermissionError",
      "HEAVY_FOLDERS",
    ]
  ) {
    assertEquals(name in main, true, `${name} is missing from mod.ts`);
  }
  for (
    const name of [
      "translateRegex",
      "comparePaths",
      "runProcessGroup",
      "signalProcessGroup",
      "walkSkillFiles",
      "formatGrepResult",
      "DEFAULT_IGNORED_FOLDERS",
      "PreparationEngine",
    ]
  ) {
    assertEquals(name in main, false, `${name} is internal to mod.ts`);
  }
  const runtime = await import(new URL("runtimes/mod.ts", ROOT).href);
  for (
    const name of ["PreparationEngine", "DenoCommandLauncher", "PathFence"]
  ) {
    assertEquals(name in runtime, true, `${name} is missing from ./runtime`);
  }
  for (const name of ["runProcessGroup", "shellQuote", "multipartBody"]) {
    assertEquals(name in runtime, false, `${name} is internal to ./runtime`);
  }
});

Deno.test("a permission check in this harness does fail without flags", async () => {
  // Guards the harness itself: the same run must refuse what needs a permission.
  const error = await importWithoutPermissions("tests/testdata/needs_read.ts")
    .catch((e) => e);
  assertEquals(error instanceof Error, true);
});

Deno.test("every @ts-types comment stands right before the import it types, in code and in doc examples", async () => {
  const misplaced: string[] = [];
  let seen = 0;
  const walk = async (dir: URL): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts")) {
        const lines = (await Deno.readTextFile(url)).split("\n")
          .map((line) => line.replace(/^\s*\*\s?/, "").trim());
        lines.forEach((line, i) => {
          if (!line.startsWith("// @ts-types=")) return;
          seen++;
          if (!lines[i + 1]?.startsWith("import ")) {
            misplaced.push(
              `${url.pathname.slice(ROOT.pathname.length)}:${i + 1}`,
            );
          }
        });
      }
    }
  };
  await walk(ROOT);
  assertGreater(seen, 5);
  assertEquals(misplaced, []);
});
