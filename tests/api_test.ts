/**
 * The public API's shape, checked on what `deno doc` sees of each entry point
 * of `deno.json`: `.` stays narrow (what an agent author uses), no entry
 * exports an internal helper, and each remote kind's entry exports only its
 * own names (what the kinds share comes from `.` and `./runtime`, once).
 *
 * @module
 */
import { assert, assertEquals } from "./helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import denoJson from "../deno.json" with { type: "json" };

const ROOT = hostPath.fromFileUrl(new URL("../", import.meta.url));

/** The most names `.` may export. */
const MAX_MAIN_NAMES = 60;

/**
 * Internal helpers no entry point may export (shell quoting and session
 * wrappers, multipart bodies, server-error parsing, process-group plumbing,
 * the sandbox's fixed paths, single-value checks, store keys and digests).
 */
const INTERNAL = [
  "shellQuote",
  "shellJoin",
  "shellAssignments",
  "sessionBashArgs",
  "multipartBody",
  "MultipartBody",
  "MultipartBodyOptions",
  "collectUploadEntries",
  "CollectUploadEntriesOptions",
  "UploadEntry",
  "parseServerError",
  "runtimeOptionsOf",
  "SYSTEM_PATHS",
  "MASKED_PATHS",
  "SANDBOX_HOME",
  "SANDBOX_LANG",
  "SANDBOX_PATH",
  "runProcessGroup",
  "signalProcessGroup",
  "ProcessGroupRequest",
  "SignalProcessGroupOptions",
  "defaultShell",
  "streamsOf",
  "DEFAULT_GRACE_MS",
  "checkEnv",
  "ENV_NAME",
  "checkPathText",
  "checkMaxOutputBytes",
  "checkTimeoutMs",
  "normalizeConversationKey",
  "skillDigest",
  "validateConversationsRoot",
  "guessContentType",
];

/** Names every remote kind shares: exported once, by `.` or `./runtime`. */
const SHARED = [
  "RemoteHttpError",
  "MemoryConversationStore",
  "KvConversationStore",
  "ConversationStore",
  "SkillRuntimeConfig",
  "SkillRuntime",
  "RemoteSkillRuntime",
  "SandboxServiceRuntime",
  "HttpClient",
];

const KINDS = [
  "./opensandbox",
  "./aio",
  "./e2b",
  "./vercel",
  "./daytona",
  "./deno-sandbox",
];

/** The names each entry point exports, as `deno doc --json` lists them. */
async function exportedNames(): Promise<Map<string, Set<string>>> {
  const exports = denoJson.exports as Record<string, string>;
  const files = Object.values(exports);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...files],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(output.success, new TextDecoder().decode(output.stderr));
  const doc = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    nodes: Record<string, { symbols: { name: string }[] }>;
  };
  const byEntry = new Map<string, Set<string>>();
  for (const [entry, file] of Object.entries(exports)) {
    const url = hostPath.toFileUrl(hostPath.join(ROOT, file)).href;
    const node = doc.nodes[url];
    assert(node, `deno doc lists no module for ${entry} (${file})`);
    byEntry.set(entry, new Set(node.symbols.map((symbol) => symbol.name)));
  }
  return byEntry;
}

const names = await exportedNames();

Deno.test(`api: "." exports at most ${MAX_MAIN_NAMES} names`, () => {
  const main = names.get(".")!;
  assert(
    main.size <= MAX_MAIN_NAMES,
    `"." exports ${main.size} names (at most ${MAX_MAIN_NAMES}): move what an ` +
      `agent author does not use to a more specific entry point\n` +
      [...main].sort().join(" "),
  );
});

Deno.test("api: no entry point exports an internal helper", () => {
  const found: string[] = [];
  for (const [entry, exported] of names) {
    for (const name of INTERNAL) {
      if (exported.has(name)) found.push(`${entry}: ${name}`);
    }
  }
  assertEquals(found, []);
});

Deno.test("api: './runtime' holds the runtime author's contract and kit", () => {
  const runtime = names.get("./runtime")!;
  for (
    const name of [
      "SkillRuntime",
      "SkillRuntimeFileSystem",
      "ExecuteRequest",
      "ExecuteResult",
      "PreparationEngine",
      "SkillPreparationError",
      "ProcessLauncher",
      "SandboxService",
      "SandboxServiceRuntime",
      "RemoteFileSystem",
      "RemoteHttpError",
    ]
  ) {
    assert(runtime.has(name), `./runtime does not export ${name}`);
  }
});

Deno.test("api: a remote kind's entry exports only its own names", () => {
  const found: string[] = [];
  for (const kind of KINDS) {
    const exported = names.get(kind);
    assert(exported, `deno.json has no ${kind} export`);
    for (const name of SHARED) {
      if (exported.has(name)) found.push(`${kind}: ${name}`);
    }
  }
  assertEquals(found, []);
});
