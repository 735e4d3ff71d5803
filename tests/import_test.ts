import { assert, assertEquals, assertGreater } from "./helpers/assert.ts";
import { runDenoScript } from "./helpers/testing.ts";

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

/**
 * What importing an entry point loads: the modules its static imports reach
 * (`deno info --json`, code dependencies only, dynamic imports left out).
 */
async function loadedAtImport(entry: string): Promise<Set<string>> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, ROOT).href],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(code, 0, new TextDecoder().decode(stderr));
  const info = JSON.parse(new TextDecoder().decode(stdout)) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
    }[];
  };
  const edges = new Map(
    info.modules.map((m) => [
      m.specifier,
      (m.dependencies ?? []).filter((d) => d.code && !d.isDynamic)
        .map((d) => d.code!.specifier),
    ]),
  );
  const seen = new Set<string>(info.roots);
  const queue = [...info.roots];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const dependency of edges.get(next) ?? []) {
      if (!seen.has(dependency)) {
        seen.add(dependency);
        queue.push(dependency);
      }
    }
  }
  return new Set(
    [...seen].map((s) =>
      s.startsWith(ROOT.href) ? s.slice(ROOT.href.length) : s
    ),
  );
}

Deno.test("cold start: importing an entry point loads none of what it needs only later", async () => {
  const matching = (loaded: Set<string>, pattern: RegExp) =>
    [...loaded].filter((s) => pattern.test(s));
  // ".": no CommonJS dependency (the OpenTelemetry API, shell-quote, x509).
  const main = await loadedAtImport("mod.ts");
  assertGreater(main.size, 50);
  assertEquals(
    matching(main, /opentelemetry|shell-quote|x509|reflect-metadata|fflate/),
    [],
  );
  // "./mcp": the SDK's server, web-standard transport and types; not its
  // stdio transport or client, nor the tool kit and the local runtime.
  const mcp = await loadedAtImport("tools/mcp/mod.ts");
  assertGreater(matching(mcp, /modelcontextprotocol.*\/server$/).length, 0);
  assertEquals(
    matching(
      mcp,
      /server\/stdio|sdk@[^/]*\/client|express|^node:|runtimes\/local\/|tools\/builder\.ts/,
    ),
    [],
  );
  // Nor the HTTP handler, the skills client, the skill catalog, the
  // conversation stores, the tool kit's shared helpers or std's YAML: each
  // loads on first use.
  assertEquals(
    matching(
      mcp,
      /mcp\/_http_handler|mcp\/_skills_client|mcp\/_skills\.ts|conversation_store|tools\/_shared\.ts|_internal\/std\.ts|yaml/,
    ),
    [],
  );
  // Nor zod of its own (the SDK's is its own business) nor all of std's
  // POSIX paths for the two functions the default conversations root needs.
  assertEquals(
    matching(mcp, /npm:zod|path\/posix\/mod\.js|_internal\/std_path\.ts/),
    [],
  );
  // The in-sandbox preparation of a package: the check in a stream, not the
  // extractor of this host (its zlib, pako).
  const prepare = await loadedAtImport("package/remote.ts");
  assert(prepare.has("package/_stream_check.ts"));
  assertEquals(matching(prepare, /_extract\.ts|pako|node:zlib/), []);
});
