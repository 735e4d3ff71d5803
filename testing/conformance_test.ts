// The project's own runtimes pass the conformance kit: local (plain and
// workspace), isolated (bubblewrap; ignored, saying so, where it cannot
// run), OpenSandbox, AIO Sandbox, E2B and Vercel Sandbox (on their test servers, real bash on
// this host, so the sandbox's paths are host paths under the check's folder).
import { testRuntimeConformance } from "./mod.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
  LocalSkillRuntime,
} from "../runtimes/local/mod.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/mod.ts";
import { AioSkillRuntime } from "../runtimes/aio/mod.ts";
import { E2BSkillRuntime } from "../runtimes/e2b/mod.ts";
import { type E2BServer, startE2BServer } from "../tests/servers/e2b.ts";
import { VercelSandboxSkillRuntime } from "../runtimes/vercel/mod.ts";
import {
  startVercelServer,
  type VercelServer,
} from "../tests/servers/vercel.ts";
import { DaytonaSkillRuntime } from "../runtimes/daytona/mod.ts";
import {
  type DaytonaServer,
  startDaytonaServer,
} from "../tests/servers/daytona.ts";
import { DenoSandboxSkillRuntime } from "../runtimes/deno_sandbox/mod.ts";
import {
  type DenoSandboxServer,
  startDenoSandboxServer,
} from "../tests/servers/deno_sandbox.ts";
import { MemoryConversationStore } from "../runtimes/stores/conversation_store.ts";
import {
  startTestServer,
  TEST_API_KEY,
  type TestServer,
} from "../tests/helpers/opensandbox.ts";
import {
  type AioTestServer,
  startAioTestServer,
  TEST_TOKEN,
} from "../tests/helpers/aio.ts";

testRuntimeConformance(
  "local",
  (setup) =>
    setup.conversationId === undefined
      ? new LocalSkillRuntime({ cwd: setup.dir })
      : LocalSkillRuntime.create({
        conversationsRoot: `${setup.dir}/conversations`,
        conversationId: setup.conversationId,
      }),
);

// Said loudly when bubblewrap cannot run: the isolated runtime is then not checked.
const launcher = await BubblewrapLauncher.create().catch((error) => {
  if (error instanceof IsolationUnavailableError) return error;
  throw error;
});

testRuntimeConformance(
  "isolated",
  (setup) => {
    if (launcher instanceof Error) throw launcher;
    return setup.conversationId === undefined
      ? new LocalSkillRuntime({ cwd: setup.dir, launcher })
      : LocalSkillRuntime.create({
        conversationsRoot: `${setup.dir}/conversations`,
        conversationId: setup.conversationId,
        launcher,
      });
  },
  {
    ignore: launcher instanceof Error &&
      `bubblewrap cannot run here, the isolated runtime is NOT checked: ${launcher.message}`,
  },
);

testRuntimeConformance<{ server: TestServer; store: MemoryConversationStore }>(
  "opensandbox",
  ({ dir, conversationId, context }) =>
    new OpenSandboxSkillRuntime({
      baseUrl: context.server.url,
      apiKey: TEST_API_KEY,
      ...(conversationId === undefined
        ? { cwd: dir, skillsRoot: `${dir}/.skills` }
        : {
          conversationId,
          conversationsRoot: `${dir}/conversations`,
          store: context.store,
        }),
    }),
  {
    setUp: async () => ({
      server: await startTestServer(),
      store: new MemoryConversationStore(),
    }),
    tearDown: ({ server }) => server[Symbol.asyncDispose](),
  },
);

testRuntimeConformance<
  { server: AioTestServer; store: MemoryConversationStore }
>(
  "aio",
  ({ dir, conversationId, context }) =>
    new AioSkillRuntime({
      baseUrl: context.server.server.baseUrl,
      apiKey: TEST_TOKEN,
      ...(conversationId === undefined
        ? { cwd: dir, skillsRoot: `${dir}/.skills` }
        : {
          conversationId,
          conversationsRoot: `${dir}/conversations`,
          store: context.store,
        }),
    }),
  {
    setUp: async () => ({
      server: await startAioTestServer(),
      store: new MemoryConversationStore(),
    }),
    tearDown: ({ server }) => server[Symbol.asyncDispose](),
  },
);

testRuntimeConformance<{ server: E2BServer; store: MemoryConversationStore }>(
  "e2b",
  ({ dir, conversationId, context }) =>
    new E2BSkillRuntime({
      apiKey: "conformance-key",
      baseUrl: context.server.url,
      sandboxUrl: context.server.url,
      ...(conversationId === undefined
        ? { cwd: dir, skillsRoot: `${dir}/.skills` }
        : {
          conversationId,
          conversationsRoot: `${dir}/conversations`,
          store: context.store,
        }),
    }),
  {
    setUp: () =>
      Promise.resolve({
        server: startE2BServer({ apiKey: "conformance-key" }),
        store: new MemoryConversationStore(),
      }),
    tearDown: ({ server }) => server.close(),
  },
);

testRuntimeConformance<
  { server: VercelServer; store: MemoryConversationStore }
>(
  "vercel",
  ({ dir, conversationId, context }) =>
    new VercelSandboxSkillRuntime({
      apiKey: "conformance-token",
      teamId: "team_c",
      projectId: "prj_c",
      baseUrl: context.server.url,
      ...(conversationId === undefined
        ? { cwd: dir, skillsRoot: `${dir}/.skills` }
        : {
          conversationId,
          conversationsRoot: `${dir}/conversations`,
          store: context.store,
        }),
    }),
  {
    setUp: () =>
      Promise.resolve({
        server: startVercelServer({ token: "conformance-token" }),
        store: new MemoryConversationStore(),
      }),
    tearDown: ({ server }) => server.close(),
  },
);

// Daytona: each runtime gets a sandbox of its own (its own /home/daytona).
testRuntimeConformance<
  { server: DaytonaServer; store: MemoryConversationStore }
>(
  "daytona",
  ({ conversationId, context }) =>
    new DaytonaSkillRuntime({
      apiKey: "conformance-key",
      baseUrl: context.server.url,
      ...(conversationId === undefined ? {} : {
        conversationId,
        store: context.store,
      }),
    }),
  {
    setUp: () =>
      Promise.resolve({
        server: startDaytonaServer({ apiKey: "conformance-key" }),
        store: new MemoryConversationStore(),
      }),
    tearDown: ({ server }) => server.close(),
  },
);

// Deno Sandbox: each runtime gets a sandbox of its own (its own /home/app).
testRuntimeConformance<
  { server: DenoSandboxServer; store: MemoryConversationStore }
>(
  "deno-sandbox",
  ({ conversationId, context }) =>
    new DenoSandboxSkillRuntime({
      token: "ddo_conformance",
      baseUrl: context.server.url,
      consoleUrl: context.server.url,
      ...(conversationId === undefined ? {} : {
        conversationId,
        store: context.store,
      }),
    }),
  {
    setUp: () =>
      Promise.resolve({
        server: startDenoSandboxServer({ token: "ddo_conformance" }),
        store: new MemoryConversationStore(),
      }),
    tearDown: ({ server }) => server.close(),
  },
);
