import {
  assert,
  assertEquals,
  assertNotEquals,
  assertRejects,
  assertThrows,
} from "@std/assert";
import { runProcessGroup } from "../runtimes/local/launcher.ts";
import { MemoryConversationStore } from "../runtimes/stores/conversation_store.ts";
import { RemoteSkillRuntime, runOn } from "../runtimes/remote/runtime.ts";
import {
  defaultConversationStore,
  remoteConversation,
  type SandboxService,
  SandboxServiceBackend,
  type ServiceSandbox,
} from "../runtimes/remote/sandbox_service.ts";

/**
 * A sandbox service whose sandboxes are folders of this machine and whose
 * commands are real `bash` processes: what a kind's author writes, in small.
 */
class FolderService
  implements SandboxService<ServiceSandbox & { dir: string }> {
  readonly serverUrl = "http://folders.invalid/v1";
  readonly sandboxes = new Map<
    string,
    ServiceSandbox & { dir: string; gone?: string }
  >();
  readonly calls: string[] = [];
  readonly renewals: Date[] = [];
  /** How many readiness probes answer "not yet" for each sandbox. */
  notReadyProbes = 0;
  /** Delay of `create`, to make two creations overlap. */
  createDelayMs = 0;
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  async create(options: { metadata: Readonly<Record<string, string>> }) {
    this.calls.push(`create ${JSON.stringify(options.metadata)}`);
    await new Promise((resolve) => setTimeout(resolve, this.createDelayMs));
    const id = crypto.randomUUID();
    const dir = `${this.#root}/${id}`;
    await Deno.mkdir(dir);
    const sandbox = { id, dir, expiresAt: new Date(Date.now() + 60_000) };
    this.sandboxes.set(id, sandbox);
    return sandbox;
  }

  get(id: string) {
    this.calls.push(`get ${id}`);
    return Promise.resolve(this.sandboxes.get(id) ?? null);
  }

  gone(sandbox: ServiceSandbox & { gone?: string }) {
    return sandbox.gone;
  }

  async delete(id: string) {
    this.calls.push(`delete ${id}`);
    const sandbox = this.sandboxes.get(id);
    this.sandboxes.delete(id);
    if (sandbox) await Deno.remove(sandbox.dir, { recursive: true });
  }

  renew(id: string, expiresAt: Date) {
    this.calls.push(`renew ${id}`);
    this.renewals.push(expiresAt);
    return Promise.resolve(expiresAt);
  }

  open(sandbox: ServiceSandbox & { dir: string }) {
    let probes = 0;
    return Promise.resolve({
      files: {} as never,
      isReady: () => Promise.resolve(++probes > this.notReadyProbes),
      execute: (command: { command: string; cwd: string; timeoutMs: number }) =>
        runProcessGroup({
          program: "bash",
          args: ["-c", command.command],
          // "/" of the sandbox is its folder.
          cwd: sandbox.dir,
          env: { SANDBOX: sandbox.dir },
          timeoutMs: command.timeoutMs,
          maxOutputBytes: 4096,
        }),
    });
  }
}

async function tempRoot(): Promise<string & AsyncDisposable> {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-kit-" }),
  );
  return Object.assign(dir, {
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  }) as unknown as string & AsyncDisposable;
}

Deno.test("two backends racing for one conversation end on one sandbox: the loser deletes its own", async () => {
  await using root = await tempRoot();
  const service = new FolderService(`${root}`);
  service.createDelayMs = 30;
  const store = new MemoryConversationStore();
  const conversation = remoteConversation({
    serverUrl: service.serverUrl,
    conversationId: "thread-1",
    // Commands of these "sandboxes" see the host's paths: a root inside ours.
    conversationsRoot: `${root}/conversations`,
    store,
  });
  const backends = [0, 1].map(() =>
    new SandboxServiceBackend({ service, conversation, timeoutSeconds: null })
  );
  await Promise.all(backends.map((backend) => backend.connect()));
  assertEquals(service.calls.filter((c) => c.startsWith("create")).length, 2);
  assertEquals(service.sandboxes.size, 1);
  const [winner] = service.sandboxes.keys();
  assertEquals(backends.map((b) => b.sandboxId), [winner, winner]);
  assertEquals((await store.get(conversation.key))?.sandboxId, winner);
  assert(
    service.calls[0]!.includes('"skillrun.conversation":"thread-1"'),
    service.calls[0],
  );
  // The workspace was made by the default `mkdir -p`, a real command.
  assert(
    (await Deno.stat(`${root}/conversations/thread-1/skills`)).isDirectory,
  );
  // close() never deletes a conversation's sandbox; destroy() does, record first.
  for (const backend of backends) await backend.close();
  assertEquals(service.sandboxes.size, 1);
  await backends[0]!.destroy();
  assertEquals(service.sandboxes.size, 0);
  assertEquals(await store.get(conversation.key), null);
});

Deno.test("a recorded sandbox that is gone is replaced; a live one is attached and renewed", async () => {
  await using root = await tempRoot();
  const service = new FolderService(`${root}`);
  const store = new MemoryConversationStore();
  const conversation = remoteConversation({
    serverUrl: service.serverUrl,
    conversationId: "c",
    conversationsRoot: `${root}/w`,
    store,
  });
  const first = new SandboxServiceBackend({ service, conversation });
  await first.connect();
  const id = first.sandboxId!;
  // Attaching: the expiry (60 s away) is moved to now + 600 s.
  const second = new SandboxServiceBackend({ service, conversation });
  await second.connect();
  assertEquals(second.sandboxId, id);
  assertEquals(service.renewals.length, 1);
  assert(service.renewals[0]!.getTime() > Date.now() + 590_000);
  assertEquals(
    (await store.get(conversation.key))?.expiresAt,
    service.renewals[0]!.getTime(),
  );
  service.sandboxes.get(id)!.gone = "Terminated";
  const third = new SandboxServiceBackend({ service, conversation });
  await third.connect();
  assertNotEquals(third.sandboxId, id);
  assertEquals((await store.get(conversation.key))?.sandboxId, third.sandboxId);
});

Deno.test("readiness is polled; a plain sandbox that never answers is deleted, with the kind's name in the error", async () => {
  await using root = await tempRoot();
  const service = new FolderService(`${root}`);
  service.notReadyProbes = 3;
  const ready = new SandboxServiceBackend({ service });
  const session = await ready.connect();
  assert(ready.owned);
  assertEquals(
    (await runOn(session, {
      command: "echo ok",
      cwd: "/",
      env: {},
      timeoutMs: 5000,
      maxOutputBytes: 100,
    })).stdout,
    "ok\n",
  );
  await ready.close();
  assertEquals(service.sandboxes.size, 0);

  service.notReadyProbes = Infinity;
  const never = new SandboxServiceBackend({
    service,
    readyTimeoutMs: 200,
    readinessName: "the daemon",
  });
  await assertRejects(
    () => never.connect(),
    Error,
    "the daemon did not answer within 200 ms",
  );
  assertEquals([service.sandboxes.size, never.owned], [0, false]);
});

Deno.test("attaching to an unknown or gone sandbox is refused by name; it is never deleted", async () => {
  await using root = await tempRoot();
  const service = new FolderService(`${root}`);
  await assertRejects(
    () => new SandboxServiceBackend({ service, sandboxId: "nope" }).connect(),
    Error,
    'Cannot attach to sandbox "nope": the server does not know it',
  );
  const sandbox = await service.create({ metadata: {} });
  const attached = new SandboxServiceBackend({
    service,
    sandboxId: sandbox.id,
  });
  await attached.connect();
  await attached.close();
  assert(service.sandboxes.has(sandbox.id));
  service.sandboxes.get(sandbox.id)!.gone = "Failed (out of memory)";
  await assertRejects(
    () =>
      new SandboxServiceBackend({ service, sandboxId: sandbox.id }).connect(),
    Error,
    `Cannot attach to sandbox "${sandbox.id}": it is Failed (out of memory)`,
  );
});

Deno.test("the expiry is renewed while used, once per interval", async () => {
  await using root = await tempRoot();
  const service = new FolderService(`${root}`);
  const backend = new SandboxServiceBackend({
    service,
    timeoutSeconds: 3600,
    // Long enough for two commands on a loaded machine (50 ms was not).
    renewIntervalMs: 1000,
  });
  const runtime = new RemoteSkillRuntime({
    name: "folders",
    backend,
    cwd: "/",
  });
  const created = Date.now();
  await runtime.execute({ command: "true" });
  await runtime.execute({ command: "true" });
  if (Date.now() - created < 1000) {
    assertEquals(service.renewals.length, 0); // just created
  }
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await runtime.execute({ command: "true" });
  await runtime.execute({ command: "true" });
  await runtime.close(); // waits for the renewal under way
  assertEquals(service.renewals.length, 1);
  assertEquals(service.sandboxes.size, 0);
});

Deno.test("remoteConversation() checks the id and root and shares one default store", () => {
  const a = remoteConversation({
    serverUrl: "http://x.invalid",
    conversationId: "a",
    conversationsRoot: "/srv/conv/",
  });
  assertEquals([a.workspace, a.conversationsRoot], [
    "/srv/conv/a",
    "/srv/conv",
  ]);
  assert(a.store === defaultConversationStore());
  assertThrows(
    () =>
      remoteConversation({
        serverUrl: "http://x.invalid",
        conversationId: "a",
        conversationsRoot: "/x/..",
      }),
    TypeError,
    "an absolute POSIX path other than /",
  );
  assertThrows(
    () =>
      remoteConversation({
        serverUrl: "http://x.invalid",
        conversationId: "../a",
        conversationsRoot: "/srv",
      }),
    TypeError,
  );
  assertThrows(
    () =>
      new SandboxServiceBackend({
        service: new FolderService("/nowhere"),
        sandboxId: "s",
        conversation: a,
      }),
    TypeError,
    "the store names the conversation's sandbox",
  );
});
