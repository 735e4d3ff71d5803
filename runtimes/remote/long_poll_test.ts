import {
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { LongPolledBackground } from "./polled_background.ts";
import { longPollKind, StreamOffsets } from "./long_poll.ts";
import { runRemoteCommand } from "./command.ts";
import { RemoteHttpError } from "./errors.ts";

Deno.test("LongPolledBackground: a failed read is thrown once by poll(); too many in a row end it with the error, and done() says it was not seen to end", async () => {
  let reads = 0;
  let done: boolean | undefined;
  const failed = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  const command = new LongPolledBackground(
    "c1",
    {
      read: async () => {
        if (++reads > 1) await gate.promise;
        else setTimeout(failed.resolve, 0);
        throw new Error("connection refused");
      },
      kill: () => Promise.resolve(),
      done: (ended) => done = ended,
    },
    { running: true },
    {
      retryMs: 1,
      maxFailures: 3,
      serverName: "the box",
    },
  );
  await failed.promise;
  await assertRejects(() => command.poll(), Error, "connection refused");
  assertEquals(await command.poll(), { running: true });
  gate.resolve();
  await command.stopped;
  const state = await command.poll();
  assertEquals([state.running, state.exitCode, reads, done], [
    false,
    -1,
    3,
    false,
  ]);
  assertStringIncludes(state.error!, "the box stopped answering");
});

Deno.test("LongPolledBackground: kill() waits for the reads to see the end; when they do not in time, it reads as ended with -1", async () => {
  let ended = false;
  const seen = new LongPolledBackground("c1", {
    read: async (wait) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return ended || !wait
        ? { running: false, exitCode: 137 }
        : { running: true };
    },
    kill: () => Promise.resolve(void (ended = true)),
  });
  await seen.kill();
  assertEquals(await seen.poll(), { running: false, exitCode: 137 });
  const never = new LongPolledBackground(
    "c2",
    {
      read: (_wait, signal) =>
        new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason))
        ),
      kill: () => Promise.resolve(),
    },
    { running: true },
    { killWaitMs: 20 },
  );
  await never.kill();
  assertEquals(await never.poll(), { running: false, exitCode: -1 });
});

Deno.test("longPollKind: a read that broke off is sent again; the session goes back to the pool; a kill that finds nothing drops it", async () => {
  let reads = 0;
  let kills = 0;
  const made: string[] = [];
  const kind = longPollKind({
    backstopMs: 5_000,
    pollSeconds: 1,
    createSession: (id) => Promise.resolve(void made.push(id)),
    closeSession: () => Promise.resolve(),
    kill: () => {
      kills++;
      return Promise.resolve(false);
    },
    command: (_session, request) => {
      const offsets = new StreamOffsets();
      return {
        send: () =>
          Promise.resolve({
            output: offsets.take({ stdout: "a" }, { stdout: 1 }),
            state: { running: true },
          }),
        read: async () => {
          if (request.command === "hang") {
            // A long poll, cut short by the stop.
            return await new Promise((_, reject) =>
              request.stop.addEventListener(
                "abort",
                () => reject(request.stop.reason),
              )
            );
          }
          if (++reads === 1) {
            throw new RemoteHttpError("POST /out: broke off", {
              method: "POST",
              url: "/out",
              status: 0,
            });
          }
          return {
            output: offsets.take({ stdout: "b" }, { stdout: 2 }),
            state: { running: false, exitCode: 3 },
          };
        },
        last: () => Promise.resolve([]),
      };
    },
    background: {
      start: () => Promise.reject(new Error("unused")),
      read: () => Promise.reject(new Error("unused")),
      sessions: () => Promise.resolve([]),
      lookup: () => Promise.resolve(undefined),
    },
  });
  const request = {
    command: "work",
    cwd: "/",
    env: {},
    timeoutMs: 5_000,
    maxOutputBytes: 1024,
  };
  const result = await runRemoteCommand(kind.session.commands, request);
  assertEquals([result.stdout, result.exitCode, reads], ["ab", 3, 2]);
  // The same session again: it went back to the pool.
  await runRemoteCommand(kind.session.commands, request);
  assertEquals(made.length, 1);
  const stopped = await runRemoteCommand(kind.session.commands, {
    ...request,
    command: "hang",
    timeoutMs: 50,
  });
  assertEquals([stopped.timedOut, stopped.stdout], [true, "a"]);
  // The kill found nothing (4 tries): the session is not reused.
  assertEquals(kills, 4);
  await runRemoteCommand(kind.session.commands, request);
  assertEquals(made.length, 2);
  assertEquals(
    await kind.session.attachBackground("no such id!", {}),
    undefined,
  );
  await kind.close();
  assertEquals(kind.sessions.size, 0);
});
