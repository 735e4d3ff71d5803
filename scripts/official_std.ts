/**
 * Writes `deno.official.json`: the project's `deno.json` with every `@std/...`
 * import mapped to the official `jsr:@std/...` package, as JSR users get it.
 *
 * Development resolves `@std/...` through `npm:deno-std` (the JSR registry is
 * not reachable from our build machines). This configuration is what `deno
 * publish` uses, and with `--links <folder>` it resolves the official packages
 * offline from their source (e.g. `../shared/std`), so that CI type-checks and
 * tests what users will get.
 *
 * ```sh
 * npx -y deno@2.9.6 run --allow-read --allow-write scripts/official_std.ts --links ../shared/std
 * npx -y deno@2.9.6 test --config deno.official.json -A --doc --parallel
 * ```
 *
 * @module
 */

/** The official packages, by the bare specifier the code imports. */
const OFFICIAL: Readonly<Record<string, { jsr: string; folder: string }>> = {
  "@std/assert": { jsr: "jsr:@std/assert@^1.0.19", folder: "assert" },
  "@std/async/abortable": {
    jsr: "jsr:@std/async@^1.5.0/abortable",
    folder: "async",
  },
  "@std/async/delay": { jsr: "jsr:@std/async@^1.5.0/delay", folder: "async" },
  "@std/bytes": { jsr: "jsr:@std/bytes@^1.0.6", folder: "bytes" },
  "@std/fs": { jsr: "jsr:@std/fs@^1.0.24", folder: "fs" },
  "@std/media-types": {
    jsr: "jsr:@std/media-types@^1.1.0",
    folder: "media_types",
  },
  "@std/path": { jsr: "jsr:@std/path@^1.1.6", folder: "path" },
  "@std/path/posix": { jsr: "jsr:@std/path@^1.1.6/posix", folder: "path" },
  "@std/path/posix/is-absolute": {
    jsr: "jsr:@std/path@^1.1.6/posix/is-absolute",
    folder: "path",
  },
  "@std/path/posix/join": {
    jsr: "jsr:@std/path@^1.1.6/posix/join",
    folder: "path",
  },
  "@std/path/windows": { jsr: "jsr:@std/path@^1.1.6/windows", folder: "path" },
  "@std/streams": { jsr: "jsr:@std/streams@^1.1.2", folder: "streams" },
  "@std/streams/text-line-stream": {
    jsr: "jsr:@std/streams@^1.1.2/text-line-stream",
    folder: "streams",
  },
  "@std/yaml": { jsr: "jsr:@std/yaml@^1.2.0", folder: "yaml" },
};

/** What each official package imports in turn (its links are needed too). */
const NEEDS: Readonly<Record<string, readonly string[]>> = {
  assert: ["internal"],
  fs: ["path"],
  streams: ["bytes"],
};

const args = Deno.args;
const linksAt = args.indexOf("--links");
const stdFolder = linksAt >= 0 ? args[linksAt + 1] : undefined;
if (linksAt >= 0 && !stdFolder) {
  console.error(
    "Invalid arguments: --links needs the folder of the std source",
  );
  Deno.exit(2);
}
const outAt = args.indexOf("--out");
const out = outAt >= 0 ? args[outAt + 1] ?? "" : "deno.official.json";

const config = JSON.parse(await Deno.readTextFile("deno.json")) as {
  imports?: Record<string, string>;
  [key: string]: unknown;
};
const imports: Record<string, string> = {};
const folders = new Set<string>();
for (const [name, target] of Object.entries(config.imports ?? {})) {
  const official = OFFICIAL[name];
  if (!official) {
    imports[name] = target;
    continue;
  }
  imports[name] = official.jsr;
  folders.add(official.folder);
}
for (const folder of [...folders]) {
  for (const needed of NEEDS[folder] ?? []) folders.add(needed);
}
const unknown = Object.keys(config.imports ?? {}).filter((name) =>
  name.startsWith("@std/") && !OFFICIAL[name]
);
if (unknown.length > 0) {
  console.error(
    `Cannot map ${
      unknown.map((n) => `"${n}"`).join(", ")
    }: add the package to scripts/official_std.ts`,
  );
  Deno.exit(1);
}

const official: Record<string, unknown> = { ...config, imports, lock: false };
if (stdFolder) {
  const missing: string[] = [];
  for (const folder of folders) {
    try {
      await Deno.stat(`${stdFolder}/${folder}/deno.json`);
    } catch {
      missing.push(`${stdFolder}/${folder}`);
    }
  }
  if (missing.length > 0) {
    console.error(
      `Cannot link the official std: missing ${missing.join(", ")}`,
    );
    Deno.exit(1);
  }
  official.links = [...folders].sort().map((folder) =>
    `${stdFolder}/${folder}`
  );
}
await Deno.writeTextFile(out, JSON.stringify(official, null, 2) + "\n");
console.error(
  `Wrote ${out}: ${[...folders].sort().join(", ")} from jsr:@std${
    stdFolder ? ` (linked from ${stdFolder})` : ""
  }`,
);
