/**
 * The OpenSandbox test server answers as the real execd binary does where it
 * differs from its spec and its source's first reading (facts measured on the
 * binary, `../shared/specs/README.md`, "Measured on the real execd binary"):
 * the 1000-part upload limit, Go's `os.Expand` on every path, file names
 * with line breaks, `/proc` files, an interrupt that waits for zombies, and
 * the sandbox's creation `env` in every command.
 *
 * @module
 */
import { assert, assertEquals, assertLess } from "@std/assert";
import { checkedBody, loadSharedContract } from "./servers/_contract.ts";
import {
  type OpenSandboxServer,
  type OpenSandboxServerOptions,
  startOpenSandboxServer,
} from "./servers/opensandbox.ts";
import {
  multipartBody,
  type MultipartPart,
} from "../runtimes/remote/upload.ts";

// The official execd description cross-checks every answer when present.
const execdSpec = await loadSharedContract(
  "opensandbox/execd-api.yaml",
  "the official OpenSandbox execd OpenAPI description",
);

interface Started extends AsyncDisposable {
  server: OpenSandboxServer;
  id: string;
  execd: string;
  dir: string;
}

async function start(
  options: OpenSandboxServerOptions = {},
  create?: Record<string, unknown>,
): Promise<Started> {
  const server = await startOpenSandboxServer({
    streamLingerMs: 20,
    ...options,
  });
  const sandbox = server.createSandbox(create);
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-osreal-" }),
  );
  return {
    server,
    id: sandbox.id,
    execd: server.execdUrl(sandbox.id),
    dir,
    async [Symbol.asyncDispose]() {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Calls execd and checks the answer against the spec. */
async function execd(
  base: string,
  method: string,
  route: string,
  init: RequestInit = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${base}${route}`, { method, ...init });
  const path = route.split("?")[0]!;
  const checked = await checkedBody(execdSpec, response, { method, path });
  return { status: response.status, body: checked, headers: response.headers };
}

// deno-lint-ignore no-explicit-any
type Event = Record<string, any>;

/** Runs a command to its end and returns its events. */
async function run(
  base: string,
  body: Record<string, unknown>,
): Promise<{ status: number; events: Event[]; body: unknown }> {
  const response = await fetch(`${base}/command`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) {
    return {
      status: response.status,
      events: [],
      body: await checkedBody(execdSpec, response, {
        method: "POST",
        path: "/command",
      }),
    };
  }
  const text = await response.text();
  const events = text.split("\n\n").filter((f) => f !== "").map((f) =>
    JSON.parse(f)
  );
  return { status: 200, events, body: undefined };
}

function stdout(events: Event[]): string[] {
  return events.filter((e) => e.type === "stdout").map((e) => e.text);
}

/** `metadata`/`file` pairs for `POST /files/upload`. */
function uploadParts(
  files: readonly { path: string; content: string; mode?: number }[],
): MultipartPart[] {
  return files.flatMap((file) => [
    {
      name: "metadata",
      filename: "metadata",
      contentType: "application/json",
      content: JSON.stringify({
        path: file.path,
        ...(file.mode === undefined ? {} : { mode: file.mode }),
      }),
    },
    { name: "file", filename: "f", content: file.content },
  ]);
}

async function upload(
  base: string,
  files: readonly { path: string; content: string; mode?: number }[],
): Promise<{ status: number; body: unknown }> {
  const { body, contentType, length } = multipartBody(uploadParts(files));
  return await execd(base, "POST", "/files/upload", {
    headers: { "content-type": contentType, "content-length": String(length) },
    body,
  });
}

Deno.test("upload: at most 1000 multipart parts: 500 pairs are written, 501 pairs are 400 INVALID_FILE 'multipart form is empty'", async () => {
  await using started = await start();
  const files = (n: number, folder: string) =>
    Array.from({ length: n }, (_, i) => ({
      path: `${started.dir}/${folder}/f${i}.txt`,
      content: `file ${i}`,
    }));
  const ok = await upload(started.execd, files(500, "ok"));
  assertEquals(ok.status, 200);
  assertEquals(
    await Deno.readTextFile(`${started.dir}/ok/f499.txt`),
    "file 499",
  );
  const refused = await upload(started.execd, files(501, "refused"));
  assertEquals(refused.status, 400);
  assertEquals(refused.body, {
    code: "INVALID_FILE",
    message: "multipart form is empty",
  });
  let written = true;
  try {
    await Deno.stat(`${started.dir}/refused`);
  } catch {
    written = false;
  }
  assertEquals(written, false, "nothing of a refused form is written");
});

Deno.test("paths: the server's environment holds only shell names: a `?` that `deno task` exports (`a && b`) does not reach `os.Expand`", async () => {
  const before = Deno.env.get("?");
  Deno.env.set("?", "0");
  try {
    await using started = await start();
    const uploaded = await upload(started.execd, [{
      path: `${started.dir}/q$?.txt`,
      content: "q",
    }]);
    assertEquals(uploaded.status, 200);
    assertEquals(await Deno.readTextFile(`${started.dir}/q.txt`), "q");
    assertEquals(exists(`${started.dir}/q0.txt`), false);
  } finally {
    if (before === undefined) Deno.env.delete("?");
    else Deno.env.set("?", before);
  }
});

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test('paths: Go\'s os.Expand on every path: defined names expanded (the creation env too), special names become "", undefined names 500 on file calls and 400 as cwd', async () => {
  await using started = await start({}, {
    image: { uri: "ubuntu" },
    entrypoint: ["bash"],
    env: { MYDIR: "mine" },
  });
  const { dir, execd: base } = started;
  const cases: [string, string][] = [
    ["$MYDIR.txt", "mine.txt"],
    ["${MYDIR}2.txt", "mine2.txt"],
    ["f$1.txt", "f.txt"],
    ["cost $5.txt", "cost .txt"],
    ["$$.txt", ".txt"],
    ["p$$$$.txt", "p.txt"],
    ["${1}y.txt", "y.txt"],
    ["a$#b.txt", "ab.txt"],
    ["q$?.txt", "q.txt"],
    ["keep$.txt", "keep$.txt"],
    ["sub$(x).txt", "sub$(x).txt"],
  ];
  for (const [sent, written] of cases) {
    const uploaded = await upload(base, [{
      path: `${dir}/${sent}`,
      content: sent,
    }]);
    assertEquals(uploaded.status, 200, sent);
    assertEquals(await Deno.readTextFile(`${dir}/${written}`), sent, sent);
    // download and info expand the same way
    const down = await fetch(
      `${base}/files/download?path=${encodeURIComponent(`${dir}/${sent}`)}`,
    );
    assertEquals([down.status, await down.text()], [200, sent]);
    const info = await execd(
      base,
      "GET",
      `/files/info?path=${encodeURIComponent(`${dir}/${sent}`)}`,
    );
    assertEquals(
      (info.body as Record<string, Event>)[`${dir}/${sent}`]!.path,
      `${dir}/${written}`,
    );
  }
  // An undefined name: 500 RUNTIME_ERROR on file calls, nothing written.
  for (
    const route of [
      `/files/info?path=${encodeURIComponent(`${dir}/Outer$Inner.class`)}`,
      `/files/download?path=${encodeURIComponent(`${dir}/Outer$Inner.class`)}`,
      `/directories/list?path=${encodeURIComponent(`${dir}/$Inner`)}`,
    ]
  ) {
    const refused = await execd(base, "GET", route);
    assertEquals(refused.status, 500, route);
    assert(
      String((refused.body as Event).message).includes(
        "path references undefined environment variables: Inner",
      ),
    );
  }
  const refusedUpload = await upload(base, [{
    path: `${dir}/Outer$Inner.class`,
    content: "x",
  }]);
  assertEquals(refusedUpload.status, 500);
  assertEquals(exists(`${dir}/Outer.class`), false);
  // Folders: made and listed at the expanded path.
  const made = await execd(base, "POST", "/directories", {
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ [`${dir}/d$1/$MYDIR`]: { mode: 755 } }),
  });
  assertEquals(made.status, 200);
  assert(exists(`${dir}/d/mine`));
  const listed = await execd(
    base,
    "GET",
    `/directories/list?path=${encodeURIComponent(`${dir}/d$9`)}`,
  );
  assertEquals((listed.body as Event[]).map((e) => e.path), [`${dir}/d/mine`]);
  // cwd: special names dropped, defined ones expanded, undefined ones 400.
  await Deno.mkdir(`${dir}/a`);
  const inA = await run(base, {
    command: "pwd; echo $MYDIR",
    cwd: `${dir}/a$1`,
  });
  assertEquals(stdout(inA.events), [`${dir}/a`, "mine"]);
  const inMine = await run(base, { command: "pwd", cwd: `${dir}/d/$MYDIR` });
  assertEquals(stdout(inMine.events), [`${dir}/d/mine`]);
  const undefinedCwd = await run(base, { command: "pwd", cwd: `${dir}/$Nope` });
  assertEquals(undefinedCwd.status, 400);
  assertEquals((undefinedCwd.body as Event).code, "INVALID_REQUEST_BODY");
});

Deno.test("commands: the sandbox's creation env is seen by every command, below the request's envs", async () => {
  await using started = await start({}, {
    image: { uri: "ubuntu" },
    entrypoint: ["bash"],
    env: { FROM_CREATE: "created", BOTH: "create" },
  });
  const first = await run(started.execd, {
    command: 'echo "$FROM_CREATE $BOTH"',
  });
  assertEquals(stdout(first.events), ["created create"]);
  const second = await run(started.execd, {
    command: 'echo "$FROM_CREATE $BOTH"',
    envs: { BOTH: "request" },
  });
  assertEquals(stdout(second.events), ["created request"]);
});

Deno.test("files: a name holding \\n or \\r downloads (Content-Disposition writes them as spaces); /proc files are 500 'seeker can't seek'", async () => {
  await using started = await start();
  const name = "line\nbreak\rname.txt";
  await Deno.writeTextFile(`${started.dir}/${name}`, "odd name");
  const response = await fetch(
    `${started.execd}/files/download?path=${
      encodeURIComponent(`${started.dir}/${name}`)
    }`,
  );
  assertEquals(response.status, 200);
  assertEquals(
    response.headers.get("content-disposition"),
    'attachment; filename="line break name.txt"',
  );
  assertEquals(await response.text(), "odd name");
  for (const range of [undefined, "bytes=0-"]) {
    const proc = await fetch(
      `${started.execd}/files/download?path=/proc/self/status`,
      range === undefined ? {} : { headers: { range } },
    );
    assertEquals(proc.status, 500);
    assertEquals(
      proc.headers.get("content-type"),
      "text/plain; charset=utf-8",
    );
    assertEquals(
      proc.headers.get("content-disposition"),
      'attachment; filename="status"',
    );
    assert(proc.headers.has("last-modified"));
    assertEquals(proc.headers.has("accept-ranges"), false);
    assertEquals(await proc.text(), "seeker can't seek\n");
  }
});

Deno.test("interrupt: zombie semantics: DELETE /command answers only once kill(-pgid, 0) fails, zombies orphaned to pid 1 included", async () => {
  const observable = (pgid: number) => {
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[2]) === pgid) return true;
      } catch {
        // gone meanwhile
      }
    }
    return false;
  };
  await using started = await start();
  // A nested shell dies of SIGTERM before its `sleep`: the sleep is
  // orphaned to pid 1 and stays a zombie until pid 1 reaps it.
  const response = await fetch(`${started.execd}/command`, {
    method: "POST",
    body: JSON.stringify({ command: "bash -c 'sleep 30 & wait'" }),
  });
  const reader = response.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const id = JSON.parse(first.split("\n\n")[0]!).text as string;
  await new Promise((resolve) => setTimeout(resolve, 300));
  const pgid = started.server.commands.get(id)!.pgid;
  const began = performance.now();
  const interrupted = await fetch(`${started.execd}/command?id=${id}`, {
    method: "DELETE",
  });
  await interrupted.body?.cancel();
  assertEquals(interrupted.status, 200);
  assertEquals(observable(pgid), false, "no member left, zombie or not");
  assertLess(performance.now() - began, 3_500);
  await reader.cancel();
});

Deno.test("compared by hand: doublestar search, a trailing slash redirects, 0 ms execution_time left out, undefined $VAR messages as the real ones", async () => {
  await using started = await start();
  const { dir, execd: base } = started;
  await Deno.mkdir(`${dir}/a/b`, { recursive: true });
  await Deno.writeTextFile(`${dir}/top.txt`, "");
  await Deno.writeTextFile(`${dir}/a/b/deep.txt`, "");
  const found = await execd(
    base,
    "GET",
    `/files/search?path=${encodeURIComponent(dir)}&pattern=${
      encodeURIComponent("**/*.txt")
    }`,
  );
  assertEquals((found.body as Event[]).map((e) => e.path).sort(), [
    `${dir}/a/b/deep.txt`,
    `${dir}/top.txt`,
  ]);
  const moved = await fetch(`${base}/ping/`, { redirect: "manual" });
  assertEquals(
    [moved.status, moved.headers.get("location"), await moved.text()],
    [301, "/ping", '<a href="/ping">Moved Permanently</a>.\n\n'],
  );
  const background = await run(base, { command: "true", background: true });
  const complete = background.events.find((e) =>
    e.type === "execution_complete"
  )!;
  assert(
    !("execution_time" in complete) || complete.execution_time > 0,
    JSON.stringify(complete),
  );
  const listed = await execd(
    base,
    "GET",
    `/directories/list?path=${encodeURIComponent(`${dir}/$Nope`)}`,
  );
  assertEquals(
    (listed.body as Event).message,
    "error converting path  to absolute. path references undefined environment variables: Nope",
  );
});

Deno.test("commands: output goes to regular files as on the real server (tailed), \\r swallows the \\n of the next write", async () => {
  await using started = await start();
  const result = await run(started.execd, {
    command:
      "[ -f /proc/$$/fd/1 ] && [ -f /proc/$$/fd/2 ] && echo files; printf 'abc\\r'; sleep 0.25; printf '\\n'; echo next",
  });
  assertEquals(stdout(result.events), ["files", "abc", "next"]);
});

Deno.test("compared by hand: Go's words for mkdir over a file, chmod of a missing path and JSON of the wrong type", async () => {
  await using started = await start();
  const { dir, execd: base } = started;
  await Deno.writeTextFile(`${dir}/afile`, "");
  const post = async (route: string, body: string) => {
    const answer = await execd(base, "POST", route, {
      headers: { "content-type": "application/json" },
      body,
    });
    return [answer.status, (answer.body as Event).message];
  };
  assertEquals(
    await post(
      "/directories",
      JSON.stringify({ [`${dir}/afile`]: { mode: 755 } }),
    ),
    [500, `error accessing file: mkdir ${dir}/afile: not a directory`],
  );
  assertEquals(
    await post(
      "/files/permissions",
      JSON.stringify({ [`${dir}/missing`]: { mode: 644 } }),
    ),
    [
      500,
      `error changing permissions for ${dir}/missing. chmod ${dir}/missing: no such file or directory`,
    ],
  );
  assertEquals(await post("/directories", "[1]"), [
    400,
    "error parsing request, MAYBE invalid body format. json: cannot unmarshal array into Go value of type map[string]model.Permission",
  ]);
  assertEquals(await post("/files/mv", '{"a":1}'), [
    400,
    "error parsing request, MAYBE invalid body format. json: cannot unmarshal object into Go value of type []model.RenameFileItem",
  ]);
});

Deno.test("compared by hand (run 7): upload errors in Go's words, metadata modes typed as Go ints, output files where execd puts them", async () => {
  await using started = await start();
  const { dir, execd: base } = started;
  await Deno.mkdir(`${dir}/folder`);
  await Deno.writeTextFile(`${dir}/afile`, "");
  const message = async (
    files: { path: string; content: string; mode?: unknown }[],
  ) => {
    const { body, contentType, length } = multipartBody(
      files.flatMap((file) => [{
        name: "metadata",
        filename: "metadata",
        contentType: "application/json",
        content: JSON.stringify(file),
      }, { name: "file", filename: "f", content: file.content }]),
    );
    const answer = await execd(base, "POST", "/files/upload", {
      headers: {
        "content-type": contentType,
        "content-length": String(length),
      },
      body,
    });
    return [answer.status, (answer.body as Event | undefined)?.message];
  };
  assertEquals(await message([{ path: `${dir}/folder`, content: "x" }]), [
    500,
    `error opening destination file ${dir}/folder. open ${dir}/folder: is a directory`,
  ]);
  assertEquals(await message([{ path: `${dir}/afile/x/y`, content: "x" }]), [
    500,
    `error creating target directory ${dir}/afile/x. mkdir ${dir}/afile: not a directory`,
  ]);
  assertEquals(await message([{ path: `${dir}/g/`, content: "x" }]), [
    500,
    `error opening destination file ${dir}/g/. open ${dir}/g/: is a directory`,
  ]);
  assertEquals(
    await message([{ path: `${dir}/m`, content: "x", mode: "755" }]),
    [
      400,
      "invalid metadata format. json: cannot unmarshal string into Go struct field FileMetadata.Permission.mode of type int",
    ],
  );
  assertEquals(
    await message([{ path: `${dir}/m`, content: "x", mode: 1.5 }]),
    [
      400,
      "invalid metadata format. json: cannot unmarshal number 1.5 into Go struct field FileMetadata.Permission.mode of type int",
    ],
  );
  // Where a command's output goes: regular files in the temporary folder.
  const tmp = Deno.env.get("TMPDIR") || "/tmp";
  const foreground = await run(base, {
    command: "readlink /proc/$$/fd/1 /proc/$$/fd/2",
  });
  const [out, err] = stdout(foreground.events);
  const id = foreground.events.find((e) => e.type === "init")!.text;
  assertEquals([out, err], [`${tmp}/${id}.stdout`, `${tmp}/${id}.stderr`]);
  const background = await run(base, {
    command: "readlink /proc/$$/fd/1 /proc/$$/fd/2",
    background: true,
  });
  const backgroundId = background.events.find((e) => e.type === "init")!.text;
  let logs = "";
  for (let i = 0; i < 100 && logs.split("\n").length < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    logs = await (await fetch(`${base}/command/${backgroundId}/logs?cursor=0`))
      .text();
  }
  assertEquals(
    logs,
    `${tmp}/${backgroundId}.output\n${tmp}/${backgroundId}.output\n`,
  );
});

Deno.test("compared by hand: a body that does not decode gets encoding/json's own words; a decoder reads the first value only", async () => {
  await using started = await start();
  const cases: [string, string][] = [
    [
      "{nope",
      "invalid character 'n' looking for beginning of object key string",
    ],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 x', "invalid character 'x' after object key:value pair"],
    ["[1 2]", "invalid character '2' after array element"],
    ["tru", "unexpected EOF"],
    ['"\u0001"', "invalid character '\\x01' in string literal"],
    [
      '{"a":1.x}',
      "invalid character 'x' after decimal point in numeric literal",
    ],
    ['{"a":"\\q"}', "invalid character 'q' in string escape code"],
    [
      "{'a':1}",
      "invalid character '\\'' looking for beginning of object key string",
    ],
    ["", "EOF"],
  ];
  for (const [body, words] of cases) {
    const answer = await execd(started.execd, "POST", "/command", { body });
    assertEquals(answer.status, 400, body);
    assertEquals(
      (answer.body as Event).message,
      `error parsing request, MAYBE invalid body format. ${words}`,
      body,
    );
  }
  const response = await fetch(`${started.execd}/command`, {
    method: "POST",
    body: '{"command":"echo hi"} trailing',
  });
  const text = await response.text();
  assertEquals(response.status, 200);
  assert(text.includes('"text":"hi"'), text);
  // Upload metadata goes through json.Unmarshal, which words it its own way.
  const { body, contentType, length } = multipartBody([
    {
      name: "metadata",
      filename: "metadata",
      contentType: "application/json",
      content: "not json",
    },
    { name: "file", filename: "f", content: "x" },
  ]);
  const upload = await execd(started.execd, "POST", "/files/upload", {
    headers: { "content-type": contentType, "content-length": String(length) },
    body,
  });
  assertEquals(
    (upload.body as Event).message,
    "invalid metadata format. invalid character 'o' in literal null (expecting 'u')",
  );
});

Deno.test("compared by hand (run 8): a Range suffix of 0 bytes is a 206 of no byte; unsatisfiable ranges with a comma get the whole file; envs values typed as Go strings", async () => {
  await using started = await start();
  const file = `${started.dir}/ten.txt`;
  await Deno.writeTextFile(file, "0123456789");
  const get = async (range: string) => {
    const response = await fetch(
      `${started.execd}/files/download?path=${encodeURIComponent(file)}`,
      { headers: { range } },
    );
    return [
      response.status,
      response.headers.get("content-range"),
      await response.text(),
    ];
  };
  assertEquals(await get("bytes=-0"), [206, "bytes 10-9/10", ""]);
  assertEquals(await get("bytes=20-30"), [
    416,
    "bytes */10",
    "invalid range: failed to overlap\n",
  ]);
  assertEquals(await get("bytes=20-30,"), [200, null, "0123456789"]);
  assertEquals(await get("bytes=-0,20-30"), [200, null, "0123456789"]);
  const typed = await execd(started.execd, "POST", "/command", {
    body: JSON.stringify({ command: "true", envs: { N: 5 } }),
  });
  assertEquals(
    (typed.body as Event).message,
    "error parsing request, MAYBE invalid body format. json: cannot unmarshal number into Go struct field RunCommandRequest.envs of type string",
  );
});
