import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  LoggingMessageNotificationSchema,
  type Progress,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { assert, assertEquals } from "../../tests/helpers/assert.ts";
import { tempDir, writeSkill } from "../../tests/helpers/tools.ts";
import { serveMcpHttp } from "./http.ts";

const SECRET = "mcp-progress-s3cr3t-77";
const fixture =
  new URL("./testdata/progress_server.ts", import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function beating(file: string): Promise<boolean> {
  const before = await Deno.readTextFile(file).catch(() => "");
  await sleep(600);
  const after = await Deno.readTextFile(file).catch(() => "");
  return after !== "" && after !== before;
}

async function until(check: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(50);
  }
}

function text(result: Record<string, unknown>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join("");
}

/** Progress, then cancellation, through one connected client. */
async function progressAndCancel(client: Client, work: string) {
  const logs: { level: string; data: unknown }[] = [];
  client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (notification) => void logs.push(notification.params),
  );
  const preparing: Progress[] = [];
  const loaded = await client.callTool(
    { name: "skill", arguments: { name: "alpha" } },
    undefined,
    { onprogress: (p) => preparing.push(p) },
  );
  assert(!loaded.isError, text(loaded));
  const messages = preparing.map((p) => p.message ?? "");
  assert(
    messages.some((m) => m.includes('Preparing skill "alpha": bootstrap')),
    JSON.stringify(messages),
  );
  assert(messages.at(-1)!.includes("done"), JSON.stringify(messages));
  // Progress values only grow.
  for (let i = 1; i < preparing.length; i++) {
    assert(preparing[i]!.progress > preparing[i - 1]!.progress);
  }

  const output: Progress[] = [];
  const ran = await client.callTool(
    {
      name: "bash",
      arguments: {
        // The last output comes well before the answer: the MCP SDK client
        // drops a progress notification that it reads in the same chunk as
        // the answer (it handles notifications a microtask later).
        command: `echo first; sleep 0.3; echo "tok=$ALPHA_TOKEN"; sleep 0.3`,
        working_directory: work,
      },
    },
    undefined,
    { onprogress: (p) => output.push(p) },
  );
  assertEquals(text(ran), "first\ntok=[redacted]\n");
  assertEquals(
    output.map((p) => p.message).join(""),
    "first\ntok=[redacted]\n",
  );
  const failed = await client.callTool({
    name: "bash",
    arguments: { command: "exit 1", working_directory: work },
  });
  assert(failed.isError);
  await until(() => Promise.resolve(logs.some((l) => l.level === "warning")));
  assert(
    logs.some((l) =>
      l.level === "info" && l.data === 'Preparing skill "alpha": done'
    ),
    JSON.stringify(logs),
  );
  assert(
    logs.some((l) =>
      l.level === "warning" &&
      String(l.data).startsWith('Tool "bash" returned an error')
    ),
  );
  assert(!JSON.stringify([preparing, output, logs]).includes(SECRET));

  // Cancelling the request stops the command and what it started.
  const beat = `${work}/beat`;
  const controller = new AbortController();
  const running = client.callTool(
    {
      name: "bash",
      arguments: {
        command: `(while :; do date +%s%N > ${beat}; sleep 0.1; done) & wait`,
        working_directory: work,
      },
    },
    undefined,
    { signal: controller.signal },
  ).then(() => "answered", () => "cancelled");
  await until(() => beating(beat));
  controller.abort();
  assertEquals(await running, "cancelled");
  await until(async () => !(await beating(beat)));
}

Deno.test("MCP over stdio: progress for preparation and output, cancellation stops the process", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "alpha");
  await Deno.mkdir(`${dir.path}/work`);
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "-A",
      fixture,
      `${dir.path}/skills`,
      SECRET,
    ],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  try {
    await progressAndCancel(client, `${dir.path}/work`);
  } finally {
    await client.close();
  }
});

Deno.test("MCP over HTTP: progress for preparation and output, cancellation stops the process", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "alpha");
  await using server = await serveMcpHttp({
    skills: `${dir.path}/skills`,
    configs: {
      alpha: { env: { ALPHA_TOKEN: SECRET }, bootstrap: ["echo booting"] },
    },
    conversationsRoot: `${dir.path}/conversations`,
  });
  const transport = new StreamableHTTPClientTransport(new URL(server.url));
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const sessionId = transport.sessionId!;
    const work = `${dir.path}/conversations/${sessionId}`;
    await until(() => Deno.stat(work).then(() => true, () => false));
    await progressAndCancel(client, work);
  } finally {
    await client.close();
  }
});
