// Tests of the conformance kit itself: for each check, a runtime that breaks
// exactly that behaviour (a good local runtime wrapped, or made with one
// wrong option) fails it, with a ConformanceError naming the check and the
// fault. Each broken runtime is a real runtime: real processes and files.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { LocalFileSystem, LocalSkillRuntime } from "../runtimes/local/mod.ts";
import type { LocalSkillRuntimeOptions } from "../runtimes/local/mod.ts";
import { SkillRuntimeConfig } from "../runtimes/config.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/mod.ts";
import {
  startTestServer,
  TEST_API_KEY,
  type TestServer,
} from "../tests/helpers/opensandbox.ts";
import { MemoryConversationStore } from "../runtimes/stores/conversation_store.ts";
import type {
  ExecuteResult,
  PreparedSkill,
  SkillRuntime,
  SkillRuntimeFileSystem,
} from "../runtimes/types.ts";
import {
  CONFORMANCE_CHECKS,
  ConformanceError,
  type ConformanceOptions,
  type MakeRuntime,
  runConformanceCheck,
  type RuntimeSetup,
  testRuntimeConformance,
} from "./mod.ts";

/** The local runtime, plain or in the setup's conversation. */
function local(
  setup: RuntimeSetup<unknown>,
  extra: Partial<LocalSkillRuntimeOptions> = {},
): Promise<LocalSkillRuntime> {
  return setup.conversationId === undefined
    ? Promise.resolve(new LocalSkillRuntime({ cwd: setup.dir, ...extra }))
    : LocalSkillRuntime.create({
      conversationsRoot: `${setup.dir}/conversations`,
      conversationId: setup.conversationId,
      ...extra,
    });
}

/** What a broken runtime replaces. */
interface Faults {
  prepare?: SkillRuntime["prepare"];
  execute?: SkillRuntime["execute"];
  close?: SkillRuntime["close"];
  fs?: Partial<SkillRuntimeFileSystem>;
}

/** A runtime that is `real` but for the faults. */
function wrap(real: SkillRuntime, faults: Faults): SkillRuntime {
  const fs: SkillRuntimeFileSystem = {
    resolve: (path) => real.fs.resolve(path),
    readText: (path, options) => real.fs.readText(path, options),
    readBytes: (path, options) => real.fs.readBytes(path, options),
    writeText: (path, content, options) =>
      real.fs.writeText(path, content, options),
    stat: (path, options) => real.fs.stat(path, options),
    list: (path, options) => real.fs.list(path, options),
    readStream: (path, options) => real.fs.readStream(path, options),
    download: (path, localPath, options) =>
      real.fs.download(path, localPath, options),
    ...faults.fs,
  };
  const close = faults.close ?? (() => real.close());
  return {
    name: "broken",
    cwd: real.cwd,
    fs,
    prepare: faults.prepare ?? ((request) => real.prepare(request)),
    execute: faults.execute ?? ((request) => real.execute(request)),
    environment: () => real.environment(),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A broken runtime for one check: its factory, options and the fault's words. */
interface BrokenCase {
  readonly make: MakeRuntime<unknown>;
  readonly options?: ConformanceOptions<unknown>;
  /** What the kit's message must say. */
  readonly says: string;
}

/** A fake prepared skill, as a runtime that caches a failure hands out. */
function fake(
  request: Parameters<SkillRuntime["prepare"]>[0],
): PreparedSkill[] {
  return request.skills.map(({ skill }) => ({
    name: skill.name,
    basePath: skill.basePath,
    skill,
  }));
}

/** Caches a failed preparation (a timed-out one when `timedOut`). */
function cachingFailures(timedOut: boolean): MakeRuntime<unknown> {
  return async (setup) => {
    const real = await local(setup);
    const failed = new Set<string>();
    return wrap(real, {
      prepare: async (request) => {
        const names = request.skills.map((s) => s.skill.name);
        if (names.every((name) => failed.has(name))) return fake(request);
        try {
          return await real.prepare(request);
        } catch (error) {
          if (
            Boolean((error as { timedOut?: boolean }).timedOut) === timedOut
          ) {
            names.forEach((name) => failed.add(name));
          }
          throw error;
        }
      },
    });
  };
}

const BROKEN: Readonly<Record<string, BrokenCase>> = {
  "prepare-count-order": {
    says: "returned [",
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        prepare: async (request) => (await real.prepare(request)).reverse(),
      });
    },
  },
  "prepare-idempotent": {
    says: "the bootstrap ran 7 times",
    // Runs the bootstrap commands again each time a skill is prepared again.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        prepare: async (request) => {
          const prepared = await real.prepare(request);
          for (const [index, { config }] of request.skills.entries()) {
            for (const { command } of config?.bootstrap ?? []) {
              await real.execute({
                command,
                cwd: prepared[index]!.basePath,
              });
            }
          }
          return prepared;
        },
      });
    },
  },
  "environment-injected": {
    says: "command 1 after prepare saw",
    // Commands get the configured variables blanked (only the bootstrap had them).
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        execute: (request) =>
          real.execute({
            ...request,
            env: {
              ...Object.fromEntries(
                Object.keys(real.environment()).map((name) => [name, ""]),
              ),
              ...request.env,
            },
          }),
      });
    },
  },
  "bootstrap-after-upload": {
    says: "but the bootstrap ran 0 times",
    // A new runtime object prepares a skill seen before without its bootstrap.
    make: async (setup) => {
      const real = await local(setup);
      const seen = setup.context as Set<string>;
      return wrap(real, {
        prepare: (request) =>
          real.prepare({
            ...request,
            skills: request.skills.map(({ skill, config }) => {
              const known = seen.has(skill.name);
              seen.add(skill.name);
              return known && config
                ? { skill, config: new SkillRuntimeConfig({ env: config.env }) }
                : config
                ? { skill, config }
                : { skill };
            }),
          }),
      });
    },
    options: { setUp: () => new Set<string>() },
  },
  "failed-bootstrap-not-cached": {
    says: "expected 2: nothing cached",
    make: cachingFailures(false),
  },
  "timed-out-bootstrap-not-cached": {
    says: "expected 2: nothing cached",
    make: cachingFailures(true),
  },
  "config-not-ignored": {
    says: "with a different configuration must be refused",
    // Keeps the first configuration of a skill and drops any later one.
    make: async (setup) => {
      const real = await local(setup);
      const first = new Map<string, SkillRuntimeConfig | undefined>();
      return wrap(real, {
        prepare: (request) =>
          real.prepare({
            ...request,
            skills: request.skills.map(({ skill, config }) => {
              if (!first.has(skill.name)) first.set(skill.name, config);
              const kept = first.get(skill.name);
              return kept ? { skill, config: kept } : { skill };
            }),
          }),
      });
    },
  },
  "paths-quoted": {
    says: "failed or ran elsewhere",
    // Builds `cd <folder> && <command>` without quoting the folder.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        execute: async ({ cwd: workingDirectory, ...request }) => {
          if (workingDirectory === undefined) return real.execute(request);
          const folder = await real.fs.resolve(workingDirectory);
          return real.execute({
            ...request,
            command: `cd ${folder} && ${request.command}`,
          });
        },
      });
    },
  },
  "timeout-stops-command": {
    says: "went on and wrote",
    // Reports the timeout on time but leaves the command running.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        execute: (request) => {
          const limit = request.timeoutMs ?? 120_000;
          if (limit >= 10_000) return real.execute(request);
          const running = real.execute({ ...request, timeoutMs: 60_000 });
          return new Promise<ExecuteResult>((resolve) =>
            setTimeout(() =>
              resolve({
                stdout: "",
                stderr: "",
                exitCode: -1,
                timedOut: true,
                aborted: false,
                stdoutBytes: 0,
                stderrBytes: 0,
                stdoutTruncated: false,
                stderrTruncated: false,
                durationMs: limit,
              }), limit)
          ).finally(() => {
            running.catch(() => {});
          });
        },
      });
    },
  },
  "output-mapped": {
    says: "exit 3 gave exitCode 1",
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        execute: async (request) => {
          const result = await real.execute(request);
          return result.exitCode > 0 ? { ...result, exitCode: 1 } : result;
        },
      });
    },
  },
  "text-read-capped": {
    says: "with maxBytes 1000 must be refused",
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        fs: {
          readText: (path, options) =>
            real.fs.readText(path, { ...options, maxBytes: 1 << 30 }),
        },
      });
    },
  },
  "binary-identical": {
    says: "readBytes() differs",
    // Reads bytes through a text decoder.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        fs: {
          readBytes: async (path, options) =>
            new TextEncoder().encode(
              new TextDecoder().decode(await real.fs.readBytes(path, options)),
            ),
        },
      });
    },
  },
  "failed-download-no-file": {
    says: "left out.bin",
    // Leaves an empty file behind when a download fails.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        fs: {
          download: async (path, localPath, options) => {
            try {
              return await real.fs.download(path, localPath, options);
            } catch (error) {
              await Deno.writeFile(localPath, new Uint8Array());
              throw error;
            }
          },
        },
      });
    },
  },
  "close-idempotent": {
    says: "close() twice on a runtime never used must resolve",
    make: async (setup) => {
      const real = await local(setup);
      let closed = false;
      return wrap(real, {
        close: () => {
          if (closed) {
            return Promise.reject(new Error("Cannot close: already closed"));
          }
          closed = true;
          return real.close();
        },
      });
    },
  },
  "secret-files-not-uploaded": {
    says: "(workspace mode): secret files were uploaded: .env, .env.local",
    // Copies everything: no exclusions.
    make: (setup) => local(setup, { copyPolicy: { excludes: [] } }),
  },
  "symlinks-not-followed": {
    says: "(workspace mode): the symlink linked.txt was followed",
    // Copies what a skill's symlinks point to into the prepared folder.
    make: async (setup) => {
      const real = await local(setup);
      return wrap(real, {
        prepare: async (request) => {
          const prepared = await real.prepare(request);
          for (const [index, { skill }] of request.skills.entries()) {
            const base = prepared[index]!.basePath;
            if (base === skill.basePath) continue;
            for await (const entry of Deno.readDir(skill.basePath)) {
              if (!entry.isSymlink) continue;
              const source = `${skill.basePath}/${entry.name}`;
              if (!(await Deno.stat(source)).isFile) continue;
              await real.fs.writeText(
                `${base}/${entry.name}`,
                await Deno.readTextFile(source),
              );
            }
          }
          return prepared;
        },
      });
    },
  },
  "workspace-layout": {
    says: 'the workspace of conversation "layout-1" is',
    // Names the workspace after a prefixed id.
    make: (setup) =>
      local({
        ...setup,
        ...(setup.conversationId !== undefined
          ? { conversationId: `conv-${setup.conversationId}` }
          : {}),
      }),
  },
  "workspace-fence": {
    says: 'resolve("../x") must be refused',
    // A file system without the workspace's fence.
    make: async (setup) => {
      const real = await local(setup);
      const open = new LocalFileSystem({ cwd: real.cwd });
      return wrap(real, {
        fs: {
          resolve: (path) => open.resolve(path),
          readText: (path, options) => open.readText(path, options),
          readBytes: (path, options) => open.readBytes(path, options),
          writeText: (path, content, options) =>
            open.writeText(path, content, options),
          stat: (path, options) => open.stat(path, options),
          list: (path, options) => open.list(path, options),
          readStream: (path, options) => open.readStream(path, options),
          download: (path, localPath, options) =>
            open.download(path, localPath, options),
        },
      });
    },
  },
  "workspace-ids": {
    says: 'the conversation id "../escape" was accepted',
    // Turns a bad id into a valid one instead of refusing it.
    make: (setup) =>
      local({
        ...setup,
        ...(setup.conversationId !== undefined
          ? {
            conversationId:
              setup.conversationId.replace(/[^A-Za-z0-9._-]/g, "_")
                .replace(/^[._-]+/, "").slice(0, 128) || "empty",
          }
          : {}),
      }),
  },
  "workspace-reuse": {
    says: "opened again",
    // Each runtime object gets a workspace of its own.
    make: (setup) => {
      const count = setup.context as { n: number };
      return local({
        ...setup,
        ...(setup.conversationId !== undefined
          ? { conversationId: `${setup.conversationId}-${++count.n}` }
          : {}),
      });
    },
    options: { setUp: () => ({ n: 0 }) },
  },
};

Deno.test("every conformance check has a broken runtime that fails it", () => {
  assertEquals(
    Object.keys(BROKEN).sort(),
    CONFORMANCE_CHECKS.map((check) => check.id).sort(),
  );
  assertEquals(new Set(CONFORMANCE_CHECKS.map((c) => c.id)).size, 20);
});

for (const check of CONFORMANCE_CHECKS) {
  const broken = BROKEN[check.id]!;
  Deno.test(`conformance: a runtime that breaks "${check.id}" fails it`, async () => {
    const error = await assertRejects(
      () => runConformanceCheck(check.id, broken.make, broken.options),
      ConformanceError,
    );
    assertEquals(error.check, check.id, error.message);
    assertStringIncludes(error.message, broken.says);
  });
}

Deno.test("runConformanceCheck() passes a good runtime and names unknown checks", async () => {
  await runConformanceCheck("output-mapped", (setup) => local(setup));
  await assertRejects(
    () => runConformanceCheck("no-such-check", (setup) => local(setup)),
    RangeError,
    'Cannot run conformance check "no-such-check": no such check',
  );
});

Deno.test("a workspace check does not apply to a runtime without a workspace mode", async () => {
  let made = 0;
  await runConformanceCheck("workspace-fence", (setup) => {
    made++;
    return local(setup);
  }, { workspace: false });
  assertEquals(made, 0);
});

Deno.test("testRuntimeConformance() refuses options that allow no mode", () => {
  const error = assertThrows(
    () =>
      testRuntimeConformance("none", (setup) => local(setup), {
        plain: false,
        workspace: false,
      }),
    TypeError,
    "neither a plain nor a workspace mode",
  );
  assertInstanceOf(error, TypeError);
});

Deno.test("an unexpected error of the runtime is reported as the check's failure", async () => {
  const error = await assertRejects(
    () =>
      runConformanceCheck("output-mapped", async (setup) => {
        const real = await local(setup);
        return wrap(real, {
          execute: () => Promise.reject(new Error("Cannot run: no sandbox")),
        });
      }),
    ConformanceError,
  );
  assert(error.message.includes("no sandbox"), error.message);
  assertEquals(error.check, "output-mapped");
});

Deno.test('conformance: a conversation runtime that bootstraps again without an upload fails "bootstrap-after-upload"', async () => {
  // OpenSandbox in a conversation: a new runtime object finds the skill in
  // the store and uploads nothing; this one runs the bootstrap anyway.
  interface Context {
    server: TestServer;
    store: MemoryConversationStore;
    seen: Set<string>;
  }
  const error = await assertRejects(
    () =>
      runConformanceCheck<Context>(
        "bootstrap-after-upload",
        ({ dir, conversationId, context }) => {
          const real = new OpenSandboxSkillRuntime({
            baseUrl: context.server.url,
            apiKey: TEST_API_KEY,
            conversationId: conversationId!,
            conversationsRoot: `${dir}/conversations`,
            store: context.store,
          });
          return wrap(real, {
            prepare: async (request) => {
              const prepared = await real.prepare(request);
              for (
                const [index, { skill, config }] of request.skills.entries()
              ) {
                if (context.seen.has(skill.name)) {
                  for (const { command } of config?.bootstrap ?? []) {
                    await real.execute({
                      command,
                      cwd: prepared[index]!.basePath,
                    });
                  }
                }
                context.seen.add(skill.name);
              }
              return prepared;
            },
          });
        },
        {
          plain: false,
          setUp: async () => ({
            server: await startTestServer(),
            store: new MemoryConversationStore(),
            seen: new Set<string>(),
          }),
          tearDown: ({ server }) => server[Symbol.asyncDispose](),
        },
      ),
    ConformanceError,
  );
  assertStringIncludes(
    error.message,
    "a new runtime on the same state: nothing was uploaded but the bootstrap ran 1 times",
  );
});

Deno.test("testRuntimeConformance() refuses an unknown check in only", () => {
  assertThrows(
    () =>
      testRuntimeConformance("some", (setup) => local(setup), {
        only: ["output-mapped", "no-such-check"],
      }),
    RangeError,
    'Cannot run conformance check "no-such-check"',
  );
});
