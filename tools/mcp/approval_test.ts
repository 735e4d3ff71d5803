/**
 * Approvals over MCP with the official SDK client: a call the policy asks
 * about is put to the client's user with `elicitation/create` (only
 * `accept` runs it), a client without the capability gets an error naming
 * the approval needed, denied and pre-approved calls ask nobody. Marker
 * files prove what ran. In memory and over Streamable HTTP.
 *
 * @module
 */
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { buildSkillTools } from "../builder.ts";
import type { ToolApprovalCall } from "../approval.ts";
import { pathExists, tempDir, writeSkill } from "../../tests/helpers/tools.ts";
import { loadSkills } from "../../skill/load.ts";
import {
  connectMcpServer,
  createMcpHttpHandler,
  loadMcpSkills,
} from "./mod.ts";

function policy(call: ToolApprovalCall) {
  if (call.tool === "bash" && String(call.input.command).startsWith("rm")) {
    return "deny" as const;
  }
  return ["bash", "write", "edit"].includes(call.tool) ? "ask" : "allow";
}

type Answer = ElicitResult["action"];

/** A client that answers each elicitation with the next answer given. */
function client(answers: Answer[] | undefined) {
  const asked: ElicitRequest["params"][] = [];
  const client = new Client(
    { name: "approval-test", version: "1.0.0" },
    answers ? { capabilities: { elicitation: {} } } : {},
  );
  if (answers) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params);
      return Promise.resolve({ action: answers.shift() ?? "cancel" });
    });
  }
  return { client, asked };
}

function text(result: Record<string, unknown>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join("");
}

async function conversation() {
  const dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "marker", {
    description: "Makes markers.\nallowed-tools: Bash(touch pre:*)",
  });
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${dir.path}/conversations`,
    conversationId: "mcp",
  });
  const set = await buildSkillTools({
    skills: `${dir.path}/skills`,
    runtime,
    approve: policy,
  });
  return {
    dir: dir.path,
    set,
    cwd: runtime.cwd,
    async [Symbol.asyncDispose]() {
      await set.close();
      await runtime.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

async function connected(
  tools: Awaited<ReturnType<typeof conversation>>["set"]["tools"],
  answers: Answer[] | undefined,
) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const connection = await connectMcpServer(tools, serverSide);
  const made = client(answers);
  await made.client.connect(clientSide);
  return {
    ...made,
    async [Symbol.asyncDispose]() {
      await made.client.close();
      await connection.close();
    },
  };
}

const touch = (name: string) => ({
  name: "bash",
  arguments: { command: `touch ${name}` },
});

Deno.test("MCP: elicitation accept runs the call; decline and cancel give an error and run nothing", async () => {
  await using k = await conversation();
  await using c = await connected(k.set.tools, ["accept", "decline", "cancel"]);
  const accepted = await c.client.callTool(touch("accepted"));
  assertFalse(accepted.isError, text(accepted));
  const declined = await c.client.callTool(touch("declined"));
  assert(declined.isError);
  assertStringIncludes(text(declined), "the user declined it");
  const cancelled = await c.client.callTool(touch("cancelled"));
  assert(cancelled.isError);
  assertStringIncludes(text(cancelled), "the user cancelled");
  assert(await pathExists(`${k.cwd}/accepted`));
  assertFalse(await pathExists(`${k.cwd}/declined`));
  assertFalse(await pathExists(`${k.cwd}/cancelled`));
  assertEquals(c.asked.length, 3);
  assertStringIncludes(c.asked[0]!.message, 'the bash call "touch accepted"');
  const write = await c.client.callTool({
    name: "write",
    arguments: { file_path: "w.txt", content: "x" },
  });
  assert(write.isError);
  assertStringIncludes(c.asked[3]!.message, 'the write call on "w.txt"');
  assertFalse(await pathExists(`${k.cwd}/w.txt`));
});

Deno.test("MCP: a client without the elicitation capability gets an error naming the approval; nothing runs", async () => {
  await using k = await conversation();
  await using c = await connected(k.set.tools, undefined);
  const result = await c.client.callTool(touch("marker"));
  assert(result.isError);
  assertStringIncludes(
    text(result),
    'Approval needed: the bash call "touch marker" needs the user\'s approval',
  );
  assertStringIncludes(text(result), "no elicitation capability");
  assertFalse(await pathExists(`${k.cwd}/marker`));
  const ls = await c.client.callTool({ name: "ls", arguments: {} });
  assertFalse(ls.isError);
});

Deno.test("MCP: a denied call and a pre-approved call ask nobody", async () => {
  await using k = await conversation();
  await using c = await connected(k.set.tools, ["decline"]);
  await Deno.writeTextFile(`${k.cwd}/kept`, "");
  const denied = await c.client.callTool({
    name: "bash",
    arguments: { command: "rm kept" },
  });
  assert(denied.isError);
  assertStringIncludes(text(denied), "Denied:");
  assert(await pathExists(`${k.cwd}/kept`));
  const skill = await c.client.callTool({
    name: "skill",
    arguments: { name: "marker" },
  });
  assertFalse(skill.isError);
  const pre = await c.client.callTool(touch("pre"));
  assertFalse(pre.isError, text(pre));
  assert(await pathExists(`${k.cwd}/pre`));
  assertEquals(c.asked, []);
});

Deno.test("MCP over Streamable HTTP: the elicitation reaches the client and accept runs the call", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "marker");
  const handler = await createMcpHttpHandler({
    skills: `${dir.path}/skills`,
    conversationsRoot: `${dir.path}/conversations`,
    approve: policy,
  });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  try {
    const made = client(["accept", "decline"]);
    const transport = new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${server.addr.port}/mcp`),
    );
    await made.client.connect(transport);
    const session = transport.sessionId!;
    const cwd = `${dir.path}/conversations/${session}`;
    const yes = await made.client.callTool(touch("http-yes"));
    assertFalse(yes.isError, text(yes));
    const no = await made.client.callTool(touch("http-no"));
    assert(no.isError);
    assert(await pathExists(`${cwd}/http-yes`));
    assertFalse(await pathExists(`${cwd}/http-no`));
    assertEquals(made.asked.length, 2);
    await made.client.close();
  } finally {
    await handler.close();
  }
});

Deno.test("MCP over Streamable HTTP with plain JSON answers: an asked call is an error naming the approval (no elicitation can be carried); nothing runs", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "marker");
  const handler = await createMcpHttpHandler({
    skills: `${dir.path}/skills`,
    conversationsRoot: `${dir.path}/conversations`,
    approve: policy,
    jsonResponse: true,
  });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  try {
    const made = client(["accept"]);
    const transport = new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${server.addr.port}/mcp`),
    );
    await made.client.connect(transport);
    const cwd = `${dir.path}/conversations/${transport.sessionId}`;
    const result = await made.client.callTool(touch("json"));
    assert(result.isError);
    assertStringIncludes(text(result), "Approval needed");
    assertStringIncludes(text(result), "plain JSON");
    assertFalse(await pathExists(`${cwd}/json`));
    assertEquals(made.asked, []);
    await made.client.close();
  } finally {
    await handler.close();
  }
});

Deno.test("allowed-tools of a skill loaded from an MCP server count only with trustAllowedTools", async () => {
  await using dir = await tempDir();
  await writeSkill(`${dir.path}/served`, "gitlike", {
    description: "Runs touch.\nallowed-tools: Bash(touch:*)",
  });
  const { skills } = await loadSkills(`${dir.path}/served`);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const connection = await connectMcpServer([], serverSide, { skills });
  try {
    // The client keeps the list (its own opt-in); the tool set decides.
    await using remote = await loadMcpSkills(clientSide, {
      server: "elsewhere",
      cacheDir: `${dir.path}/cache`,
      allowedTools: true,
    });
    assertEquals(remote.skills[0]!.allowedTools, ["Bash(touch:*)"]);
    for (const trust of [false, true]) {
      await using runtime = await LocalSkillRuntime.create({
        conversationsRoot: `${dir.path}/conversations`,
        conversationId: `trust-${trust}`,
      });
      await using set = await buildSkillTools({
        skills: remote.skills,
        runtime,
        approve: policy,
        ...(trust ? { trustAllowedTools: true } : {}),
      });
      await set.tool("skill")!.execute({ name: "gitlike" });
      const result = await set.tool("bash")!.execute({ command: "touch m" });
      assertEquals(result.needsApproval, trust ? undefined : true);
      assertEquals(await pathExists(`${runtime.cwd}/m`), trust);
    }
  } finally {
    await connection.close();
  }
});
