/**
 * Issue 27: a `bash` `true` call landing on an instance that has never seen
 * the session (rebuilt from the shared store) against one that has it in
 * memory, with a KV file and with PostgreSQL (a private cluster, through
 * pgbouncer in transaction mode when installed). Each iteration starts a new
 * session on instance A (untimed), then times its first call on B (ours) or
 * on A (the baseline). Store calls per call are counted and printed.
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { serveMcpHttp } from "../tools/mcp/mod.ts";
import {
  type ConversationStore,
  KvConversationStore,
} from "../runtimes/stores/conversation_store.ts";
import { PostgresConversationStore } from "../runtimes/stores/postgres.ts";
import {
  findPostgresBin,
  startTestPostgres,
  type TestPostgres,
} from "../tests/helpers/postgres.ts";

type Kind = "kv" | "postgres";
interface Pair {
  a: Awaited<ReturnType<typeof serveMcpHttp>>;
  b: Awaited<ReturnType<typeof serveMcpHttp>>;
  counts: Map<string, number>;
  cleanup: () => Promise<void>;
}
const pairs = new Map<Kind, Promise<Pair>>();
let cluster: TestPostgres | undefined;
let sessionId = "";
let nextId = 1;

/** Counts every store call by method. */
function counted(
  store: ConversationStore,
  counts: Map<string, number>,
): ConversationStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        counts.set(String(name), (counts.get(String(name)) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
}

function pair(kind: Kind): Promise<Pair> {
  let made = pairs.get(kind);
  if (!made) {
    made = (async () => {
      const root = await Deno.makeTempDir({ prefix: "skillrun-bench-store-" });
      const counts = new Map<string, number>();
      const open = async (): Promise<ConversationStore> => {
        if (kind === "kv") {
          return await KvConversationStore.open(`${root}/store.kv`);
        }
        cluster ??= await startTestPostgres();
        if (!cluster) throw new Error("PostgreSQL is not installed");
        return new PostgresConversationStore(
          cluster.poolerUrl ?? cluster.url,
        );
      };
      const serve = async () =>
        await serveMcpHttp({
          tools: ["bash"],
          maxSessionsPerClient: 1000,
          conversationsRoot: `${root}/conversations`,
          store: counted(await open(), counts),
        });
      const a = await serve();
      const b = await serve();
      return {
        a,
        b,
        counts,
        cleanup: async () => {
          await a.close();
          await b.close();
          await Deno.remove(root, { recursive: true });
        },
      };
    })();
    pairs.set(kind, made);
  }
  return made;
}

const HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
};

async function post(url: string, body: unknown, session?: string) {
  const answer = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...(session ? { "mcp-session-id": session } : {}) },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status >= 300) throw new Error(`${answer.status}: ${text}`);
  return { text, session: answer.headers.get("mcp-session-id") };
}

/** A new session on A, the previous one ended (untimed). */
async function newSession(kind: Kind): Promise<void> {
  const { a } = await pair(kind);
  if (sessionId) {
    const ended = await fetch(a.url, {
      method: "DELETE",
      headers: { "mcp-session-id": sessionId },
    });
    await ended.body?.cancel();
  }
  const started = await post(a.url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench", version: "1" },
    },
  });
  sessionId = started.session!;
  await post(
    a.url,
    { jsonrpc: "2.0", method: "notifications/initialized" },
    sessionId,
  );
}

/** The session's first `bash` `true` call, on A or B. */
async function call(kind: Kind, on: "a" | "b"): Promise<void> {
  const instances = await pair(kind);
  const { text } = await post(instances[on].url, {
    jsonrpc: "2.0",
    id: nextId++,
    method: "tools/call",
    params: { name: "bash", arguments: { command: "true" } },
  }, sessionId);
  if (!text.includes('"isError":false')) throw new Error(text);
}

/** Store calls of one resumed and one in-memory call (printed on stderr). */
export async function countStoreCalls(kind: Kind): Promise<void> {
  const { counts } = await pair(kind);
  for (const on of ["b", "a"] as const) {
    await newSession(kind);
    counts.clear();
    await call(kind, on);
    console.error(
      `store calls, ${kind}, ${on === "b" ? "resumed" : "in memory"}: ${
        JSON.stringify(Object.fromEntries(counts))
      }`,
    );
  }
}

function storeCase(kind: Kind, maxRatio: number): BenchCase {
  return {
    id: `mcp-store-resume-${kind}`,
    title:
      `MCP with a ${kind} store: a session's first \`bash true\` on an instance that never saw it vs on the one that has it`,
    module: import.meta.url,
    iterations: 20,
    rounds: 2,
    // Both sides in one process, alternating (the `before` of each runs
    // only there): the machine's load hits them alike.
    interleaved: true,
    maxRatio,
    ours: {
      label: "resumed from the store",
      before: () => newSession(kind),
      fn: () => call(kind, "b"),
    },
    baseline: {
      label: "in memory",
      before: () => newSession(kind),
      fn: () => call(kind, "a"),
    },
  };
}

/** The cases of this file. */
export const cases: BenchCase[] = [
  storeCase("kv", 1.3),
  storeCase("postgres", 1.5),
];

if (import.meta.main) {
  if (Deno.args[0] === "--count") {
    for (const kind of ["kv", "postgres"] as const) {
      if (kind === "postgres" && !(await findPostgresBin())) continue;
      await countStoreCalls(kind);
    }
  } else {
    await runChild(cases);
  }
  for (const made of pairs.values()) await (await made).cleanup();
  await cluster?.stop();
}
