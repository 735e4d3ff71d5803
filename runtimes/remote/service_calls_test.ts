import {
  assert,
  assertEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { HttpClient } from "./http.ts";
import { RemoteHttpError } from "./errors.ts";
import {
  boundFileOps,
  connectUnary,
  CREATE_TAG,
  createTagged,
  jsonOrNull,
  retryOnceAfter,
  sendCall,
  wrapSessionCalls,
} from "./service_calls.ts";
import { eachConcurrently, inChunks, shellSetModes } from "./shell_files.ts";
import type { RemoteFileOps } from "./fs.ts";
import type { ExecuteResult } from "../types.ts";

/** A client whose `fetch` answers each call with `answer(request)`. */
function clientAnswering(
  answer: (request: Request) => Response,
): { http: HttpClient; seen: string[] } {
  const seen: string[] = [];
  const http = new HttpClient({
    baseUrl: "http://service.invalid",
    retries: 0,
    fetch: (input, init) => {
      const request = new Request(input, init);
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      return Promise.resolve(answer(request));
    },
  });
  return { http, seen };
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });

Deno.test("service calls: 404 is absent, other errors are thrown", async () => {
  const { http } = clientAnswering((request) =>
    new URL(request.url).pathname === "/gone"
      ? json(404, { code: "NOT_FOUND", message: "no" })
      : new URL(request.url).pathname === "/broken"
      ? json(500, { code: "E", message: "broken" })
      : json(200, { id: "s1" })
  );
  assertEquals(await jsonOrNull(http, { method: "GET", path: "/gone" }), null);
  assertEquals(await jsonOrNull(http, { method: "GET", path: "/s1" }), {
    id: "s1",
  });
  assertEquals(
    await sendCall(http, { method: "DELETE", path: "/gone" }, [404]),
    false,
  );
  assertEquals(await sendCall(http, { method: "DELETE", path: "/s1" }), true);
  await assertRejects(
    () => sendCall(http, { method: "DELETE", path: "/broken" }, [404]),
    RemoteHttpError,
    "broken",
  );
});

Deno.test("service calls: a Connect error becomes the kind's error", async () => {
  const { http, seen } = clientAnswering(() =>
    json(404, { code: "not_found", message: "no such file" })
  );
  const error = await assertRejects(() =>
    connectUnary(http, "filesystem.Filesystem/Stat", { path: "/x" }, {
      idempotent: true,
      error: (code, message) => new Error(`${code}|${message}`),
    })
  );
  assertEquals((error as Error).message, "not_found|no such file");
  assertEquals(seen, ["POST /filesystem.Filesystem/Stat"]);
});

Deno.test("service calls: a call stale by its status is retried once after the recovery", async () => {
  let calls = 0;
  let recoveries = 0;
  const retry = retryOnceAfter([410], () => Promise.resolve(++recoveries));
  const stale = new RemoteHttpError("gone", {
    method: "POST",
    url: "http://s/cmd",
    status: 410,
  });
  assertEquals(
    await retry(() =>
      ++calls === 1 ? Promise.reject(stale) : Promise.resolve(calls)
    ),
    2,
  );
  assertEquals(recoveries, 1);
  // Twice stale: the second failure is thrown, no third call.
  calls = 0;
  await assertRejects(() => retry(() => (calls++, Promise.reject(stale))));
  assertEquals([calls, recoveries], [2, 2]);
  // Another status is not retried.
  const other = new RemoteHttpError("no", {
    method: "POST",
    url: "http://s/cmd",
    status: 500,
  });
  calls = 0;
  await assertRejects(() => retry(() => (calls++, Promise.reject(other))));
  assertEquals([calls, recoveries], [1, 2]);
});

Deno.test("service calls: a session's file calls and command start go through the wrapper; bound class methods keep their object", async () => {
  class Ops {
    readonly root = "/r";
    stat(path: string) {
      return Promise.resolve({
        path: `${this.root}${path}`,
        name: "x",
        type: "file" as const,
        size: 1,
        modifiedAt: null,
      });
    }
    list() {
      return Promise.resolve([]);
    }
    open() {
      return Promise.resolve(new Response("x"));
    }
    upload() {
      return Promise.resolve();
    }
  }
  const wrapped: string[] = [];
  const { files, commands } = wrapSessionCalls(
    boundFileOps(new Ops() as RemoteFileOps),
    {
      backstopMs: 1,
      start: () => Promise.reject(new Error("not here")),
      kill: () => Promise.resolve(),
      broken: () => new Error("broken"),
    },
    (call) => {
      wrapped.push("call");
      return call();
    },
  );
  assertEquals((await files.stat("/a"))?.path, "/r/a");
  await files.upload([]);
  await assertRejects(() =>
    commands.start({} as Parameters<typeof commands.start>[0])
  );
  assertEquals(wrapped, ["call", "call", "call"]);
  assertEquals(files.statMany, undefined);
});

Deno.test("createTagged: a lost answer's sandbox is found by its tag and deleted; a refusal deletes nothing", async () => {
  const deleted: string[] = [];
  let listedTag: Readonly<Record<string, string>> | undefined;
  const lost = new RemoteHttpError("timed out", {
    method: "POST",
    url: "http://s/sandboxes",
    status: 0,
  });
  await assertRejects(
    () =>
      createTagged(
        () => Promise.reject(lost),
        (tag) => {
          listedTag = tag;
          return Promise.resolve([{ id: "made-anyway" }]);
        },
        (id) => Promise.resolve(deleted.push(id)),
      ),
    RemoteHttpError,
    "timed out",
  );
  assertEquals(deleted, ["made-anyway"]);
  assert(/^[0-9a-f-]{36}$/.test(listedTag?.[CREATE_TAG] ?? ""));
  const refused = new RemoteHttpError("quota", {
    method: "POST",
    url: "http://s/sandboxes",
    status: 403,
  });
  let listed = false;
  await assertRejects(() =>
    createTagged(
      () => Promise.reject(refused),
      () => (listed = true, Promise.resolve([])),
      () => Promise.resolve(),
    )
  );
  assertEquals(listed, false);
  assertEquals(
    await createTagged(
      (tag) => Promise.resolve({ id: "s1", tag }),
      () => Promise.resolve([]),
      () => Promise.resolve(),
    ).then((s) => Object.keys(s.tag)),
    [CREATE_TAG],
  );
});

Deno.test("eachConcurrently: at most n at once, the first failure stops the rest", async () => {
  let running = 0;
  let most = 0;
  const done: number[] = [];
  await eachConcurrently([1, 2, 3, 4, 5, 6], 2, async (n) => {
    most = Math.max(most, ++running);
    await new Promise((resolve) => setTimeout(resolve, 2));
    running--;
    done.push(n);
  });
  assertEquals([most, done.length], [2, 6]);
  const started: number[] = [];
  await assertRejects(
    () =>
      eachConcurrently([1, 2, 3, 4], 1, (n) => {
        started.push(n);
        return n === 2 ? Promise.reject(new Error("two")) : Promise.resolve();
      }),
    Error,
    "two",
  );
  assertEquals(started, [1, 2]);
  assertEquals(inChunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
});

Deno.test("shellSetModes: one quoted chmod per mode, the server's default skipped", async () => {
  const commands: string[] = [];
  const ok: ExecuteResult = {
    stdout: "",
    stderr: "",
    exitCode: 0,
    timedOut: false,
    aborted: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 0,
  };
  await shellSetModes((command) => {
    commands.push(command);
    return Promise.resolve(ok);
  }, [
    { remotePath: "/w/run.sh", mode: 0o755 },
    { remotePath: "/w/it's.sh", mode: 0o100755 },
    { remotePath: "/w/a.txt", mode: 0o644 },
    { remotePath: "/w/b.txt" },
  ], { skip: 0o644 });
  assertEquals(commands, ["chmod 0755 -- /w/run.sh '/w/it'\\''s.sh'"]);
  await assertRejects(
    () =>
      shellSetModes(
        () => Promise.resolve({ ...ok, exitCode: 1, stderr: "denied" }),
        [{ remotePath: "/w/x", mode: 0o600 }],
      ),
    Error,
    'set the mode of "/w/x": denied',
  );
});
