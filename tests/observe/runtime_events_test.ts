import { assert, assertEquals } from "../helpers/assert.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
  LocalSkillRuntime,
} from "../../runtimes/local/mod.ts";
import { OpenSandboxSkillRuntime } from "../../runtimes/opensandbox/mod.ts";
import { AioSkillRuntime } from "../../runtimes/aio/mod.ts";
import { startOpenSandboxServer } from "../../tests/servers/opensandbox.ts";
import { startAioServer } from "../../tests/servers/aio.ts";
import { loadSkills } from "../../skill/load.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { SkillEvent, SkillEventListener } from "../../observe/events.ts";
import { tempDir, writeSkill } from "../helpers/tools.ts";

const SECRET = "rt-evt-s3cr3t-0123";
const API_KEY = "os-api-key-abcdef123";
const TOKEN = "aio-bearer-token-xyz789";

/** Prepares a skill with a secret and a bootstrap, then runs a command. */
async function exercise(runtime: SkillRuntime, root: string) {
  await writeSkill(root, "beta", { files: { "a.txt": "a" } });
  const { skills } = await loadSkills(root);
  await runtime.prepare({
    skills: [{
      skill: skills[0]!,
      config: new SkillRuntimeConfig({
        env: { BETA_KEY: SECRET },
        bootstrap: ["echo boot"],
      }),
    }],
  });
  const result = await runtime.execute({
    command: `echo "k=$BETA_KEY"; echo err >&2`,
  });
  assertEquals(result.stdout, `k=${SECRET}\n`);
}

function checkCommon(events: SkillEvent[]) {
  const progress = events.filter((e) => e.type === "prepare_progress");
  assertEquals(progress.at(-1), {
    type: "prepare_progress",
    skillName: "beta",
    stage: "done",
  });
  assert(
    progress.some((e) =>
      e.type === "prepare_progress" && e.stage === "bootstrap" &&
      e.detail === "command 1 of 1" && e.step === 1 && e.steps === 1
    ),
  );
  // Copy or upload counts files (and bytes, for an upload).
  for (const e of progress) {
    if (e.type !== "prepare_progress") continue;
    if (e.stage === "upload") {
      assertEquals([e.files, e.bytes], [2, e.bytes]);
      assert(e.bytes! > 0);
    }
    if (e.stage === "copy" && e.files !== undefined) assert(e.files <= 2);
  }
  const output = events.filter((e) => e.type === "command_output");
  const text = (stream: string) =>
    output.map((e) =>
      e.type === "command_output" && e.stream === stream ? e.text : ""
    ).join("");
  // The bootstrap's own output is a command too.
  assert(text("stdout").endsWith("k=[redacted]\n"), text("stdout"));
  assert(text("stderr").endsWith("err\n"));
  // Preparation comes before the command's output.
  assert(
    events.indexOf(progress.at(-1)!) <
      events.findLastIndex((e) => e.type === "command_output"),
  );
  const json = JSON.stringify(events);
  for (const secret of [SECRET, API_KEY, TOKEN]) {
    assert(!json.includes(secret), `${secret} in ${json}`);
  }
}

Deno.test("local runtime onEvent: preparation progress (copy) and output, no secret", async () => {
  await using dir = await tempDir();
  const events: SkillEvent[] = [];
  await using runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${dir.path}/conv`,
    conversationId: "c1",
    onEvent: (event) => events.push(event),
  });
  await exercise(runtime, `${dir.path}/skills`);
  checkCommon(events);
  assertEquals(
    events.find((e) => e.type === "prepare_progress")?.type ===
        "prepare_progress" &&
      (events[0] as { stage: string }).stage,
    "copy",
  );
});

const isolation = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);
if (isolation) console.error(`Ignoring the isolated events test: ${isolation}`);

Deno.test({
  name: "isolated runtime onEvent: preparation progress and output, no secret",
  ignore: isolation !== null,
  fn: async () => {
    await using dir = await tempDir();
    const events: SkillEvent[] = [];
    await using runtime = await LocalSkillRuntime.create({
      conversationsRoot: `${dir.path}/conv`,
      conversationId: "c1",
      isolate: true,
      onEvent: (event) => events.push(event),
    });
    await exercise(runtime, `${dir.path}/skills`);
    checkCommon(events);
  },
});

Deno.test("OpenSandbox runtime onEvent: HTTP requests and lifecycle in order, no secret", async () => {
  await using dir = await tempDir();
  await using server = await startOpenSandboxServer({ apiKey: API_KEY });
  const events: SkillEvent[] = [];
  const runtime = new OpenSandboxSkillRuntime({
    baseUrl: server.url,
    apiKey: API_KEY,
    cwd: dir.path,
    skillsRoot: `${dir.path}/uploaded`,
    onEvent: (event) => events.push(event),
  });
  await exercise(runtime, `${dir.path}/skills`);
  await runtime.close();
  checkCommon(events);
  const lifecycle = events.filter((e) => e.type === "runtime_lifecycle");
  assertEquals(
    lifecycle.map((e) => e.type === "runtime_lifecycle" && e.action),
    [
      "created",
      "deleted",
    ],
  );
  const created = lifecycle[0]!;
  assert(created.type === "runtime_lifecycle");
  assertEquals(created.runtime, "opensandbox");
  assert(typeof created.sandboxId === "string" && created.sandboxId !== "");
  // The creation is the first HTTP call's outcome, the deletion the last.
  const http = events.filter((e) => e.type === "http_request");
  assert(http.length >= 4, String(http.length));
  const first = http[0]!;
  assert(first.type === "http_request");
  assertEquals([first.method, first.status, first.retries], ["POST", 202, 0]);
  assert(first.url.startsWith(server.url), first.url);
  assert(events.indexOf(first) < events.indexOf(created));
  const last = http.at(-1)!;
  assert(last.type === "http_request" && last.method === "DELETE");
  assert(events.indexOf(last) < events.indexOf(lifecycle[1]!));
  for (const e of http) {
    assert(e.type === "http_request" && e.durationMs >= 0);
  }
  assertEquals(
    http.filter((e) => e.type === "http_request" && e.status === undefined),
    [],
  );
});

Deno.test("AIO runtime onEvent: HTTP requests with status, output, no secret", async () => {
  await using dir = await tempDir();
  const server = startAioServer({ token: TOKEN, home: dir.path });
  const events: SkillEvent[] = [];
  try {
    await using runtime = new AioSkillRuntime({
      baseUrl: server.baseUrl,
      apiKey: TOKEN,
      cwd: dir.path,
      skillsRoot: `${dir.path}/uploaded`,
      onEvent: (event) => events.push(event),
    });
    await exercise(runtime, `${dir.path}/skills`);
  } finally {
    await server.close();
  }
  checkCommon(events);
  const http = events.filter((e) => e.type === "http_request");
  assert(http.length >= 3);
  assert(
    http.every((e) =>
      e.type === "http_request" && e.url.startsWith(server.baseUrl) &&
      e.status === 200
    ),
    JSON.stringify(http),
  );
});

Deno.test("a runtime's throwing listener breaks neither preparation nor commands", async () => {
  await using dir = await tempDir();
  await using server = await startOpenSandboxServer({ apiKey: API_KEY });
  let calls = 0;
  const thrower: SkillEventListener = () => {
    calls++;
    throw new Error("listener bug");
  };
  for (
    const runtime of [
      new LocalSkillRuntime({ cwd: dir.path, onEvent: thrower }),
      new OpenSandboxSkillRuntime({
        baseUrl: server.url,
        apiKey: API_KEY,
        cwd: dir.path,
        skillsRoot: `${dir.path}/uploaded`,
        onEvent: thrower,
      }),
    ]
  ) {
    await using _ = runtime;
    await exercise(runtime, `${dir.path}/skills-${runtime.name}`);
  }
  assert(calls > 10, String(calls));
});

Deno.test("an HTTP call that fails emits its event with the error and retries, no secret", async () => {
  const { HttpClient } = await import("../../runtimes/remote/http.ts");
  let hits = 0;
  await using server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => {
      hits++;
      return new Response("busy", { status: 503 });
    },
  );
  const events: SkillEvent[] = [];
  const client = new HttpClient({
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    headers: { authorization: `Bearer ${TOKEN}` },
    retries: 2,
    retryDelayMs: 1,
    onEvent: (event) => events.push(event),
  });
  await client.request({
    method: "GET",
    path: "/x",
    query: { api_key: API_KEY, page: "2" },
  }).then(() => assert(false), () => {});
  assertEquals(hits, 3);
  assertEquals(events.length, 1);
  const event = events[0]!;
  assert(event.type === "http_request");
  assertEquals([event.method, event.status, event.retries], ["GET", 503, 2]);
  assertEquals(
    event.url,
    `http://127.0.0.1:${server.addr.port}/x?api_key=[redacted]&page=2`,
  );
  assert(event.error?.includes("503"), event.error);
  assert(!JSON.stringify(events).includes(API_KEY));
  assert(!JSON.stringify(events).includes(TOKEN));
});

Deno.test("a failing bootstrap command's progress carries its output tail, redacted", async () => {
  await using dir = await tempDir();
  const events: SkillEvent[] = [];
  await using runtime = new LocalSkillRuntime({
    cwd: dir.path,
    onEvent: (event) => events.push(event),
  });
  await writeSkill(`${dir.path}/skills`, "gamma");
  const { skills } = await loadSkills(`${dir.path}/skills`);
  await runtime.prepare({
    skills: [{
      skill: skills[0]!,
      config: new SkillRuntimeConfig({
        env: { GAMMA_KEY: SECRET },
        bootstrap: ["true", 'echo "key=$GAMMA_KEY"; echo broke >&2; exit 4'],
      }),
    }],
  }).then(() => assert(false, "prepared"), () => {});
  const failed = events.filter((e) =>
    e.type === "prepare_progress" && e.outputTail !== undefined
  );
  assertEquals(failed.length, 1);
  const event = failed[0]!;
  assert(event.type === "prepare_progress");
  assertEquals([event.step, event.steps], [2, 2]);
  assertEquals(event.outputTail, "key=[redacted]\nbroke\n");
  assert(!JSON.stringify(events).includes(SECRET));
});
