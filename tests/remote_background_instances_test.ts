// Background commands across instances (issue 27 item 2): `bash` with
// `run_in_background` on one MCP instance, `bash_output` and `kill_bash` on
// others, each instance with its own runtime object attached to the
// conversation's sandbox (a shared KV file), on the test server of every
// remote kind (the servers' own facilities, and the kit's commands in the
// sandbox).
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { KvConversationStore } from "../runtimes/stores/conversation_store.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { type McpHttpServer, serveMcpHttp } from "../tools/mcp/http.ts";
import { startTestServer as startOpenSandboxTestServer } from "./helpers/opensandbox.ts";
import { startE2BTestServer } from "./helpers/e2b.ts";
import { startAioTestServer } from "./helpers/aio.ts";
import { startVercelTestServer } from "./helpers/vercel.ts";
import { startDaytonaTestServer } from "./helpers/daytona.ts";
import { startDenoSandboxTestServer } from "./helpers/deno_sandbox.ts";
import { processAlive, waitFor } from "./helpers/remote.ts";

const TOKEN = "bg-instances-t0ken-4242";

function text(result: Record<string, unknown>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join("\n");
}

const kinds = [
  { name: "opensandbox", start: () => startOpenSandboxTestServer() },
  { name: "e2b", start: () => startE2BTestServer() },
  { name: "aio", start: () => startAioTestServer() },
  { name: "vercel", start: () => startVercelTestServer() },
  { name: "daytona", start: () => startDaytonaTestServer() },
  { name: "deno-sandbox", start: () => startDenoSandboxTestServer() },
];

for (const kind of kinds) {
  Deno.test({
    name:
      `${kind.name}: a background command started on one MCP instance is read and killed through the others`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      await using sandbox = await kind.start();
      const root = await Deno.makeTempDir({ prefix: "skillrun-bg-inst-" });
      await Deno.mkdir(`${root}/skills/greet`, { recursive: true });
      await Deno.writeTextFile(
        `${root}/skills/greet/SKILL.md`,
        "---\nname: greet\ndescription: Greets.\n---\nRun `echo hello`.\n",
      );
      const kvFile = `${root}/store.kv`;
      const servers: McpHttpServer[] = [];
      const stores: KvConversationStore[] = [];
      const errors: Error[] = [];
      for (let i = 0; i < 3; i++) {
        const store = await KvConversationStore.open(kvFile);
        stores.push(store);
        servers.push(
          await serveMcpHttp({
            skills: `${root}/skills`,
            token: TOKEN,
            store,
            onError: (error) => errors.push(error),
            runtime: (sessionId) =>
              Promise.resolve(
                (sandbox.runtime as (
                  o: Record<string, unknown>,
                ) => SkillRuntime)(
                  {
                    conversationId: sessionId,
                    conversationsRoot: `${sandbox.dir}/conversations`,
                    store,
                  },
                ),
              ),
          }),
        );
      }
      const hits: number[] = [];
      let next = 0;
      const roundRobin: typeof fetch = (input, init) => {
        const url = new URL(
          input instanceof Request ? input.url : String(input),
        );
        const i = next++ % servers.length;
        hits.push(i);
        url.port = new URL(servers[i]!.url).port;
        return fetch(url, init);
      };
      try {
        const transport = new StreamableHTTPClientTransport(
          new URL(servers[0]!.url),
          {
            fetch: roundRobin,
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
          },
        );
        const mcp = new Client({ name: "bg-instances", version: "1.0.0" });
        await mcp.connect(transport);
        const call = async (name: string, args: Record<string, unknown>) => {
          const result = await mcp.callTool({ name, arguments: args });
          assertFalse(result.isError, text(result));
          return text(result);
        };
        const started = await call("bash", {
          command: "echo first; sleep 300 & echo $! > child.pid; wait",
          run_in_background: true,
        });
        const id = /id "([^"]+)"/.exec(started)![1]!;
        const startedOn = hits.at(-1)!;
        // Read through the other instances until the first line came.
        let out = "";
        assert(
          await waitFor(async () => {
            out += await call("bash_output", { id });
            return out.includes("first");
          }, 15_000),
          out,
        );
        const pid = Number(
          /^\d+$/m.exec(await call("bash", { command: "cat child.pid" }))![0],
        );
        assert(processAlive(pid), `${pid}`);
        let killed = await call("kill_bash", { id });
        // Until an instance other than the starter killed it.
        while (hits.at(-1) === startedOn) {
          killed = await call("kill_bash", { id });
        }
        assertStringIncludes(killed, id);
        assert(await waitFor(() => !processAlive(pid)));
        const after = await call("bash_output", { id });
        assertStringIncludes(after, "exit");
        // The calls landed on every instance.
        assertEquals(new Set(hits).size, 3);
        await transport.terminateSession();
        await mcp.close();
        assertEquals(errors.map((e) => e.message), []);
      } finally {
        for (const server of servers) await server.close();
        for (const store of stores) store.close();
        await Deno.remove(root, { recursive: true });
      }
    },
  });
}
