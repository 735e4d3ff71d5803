/**
 * E2B and Vercel Sandbox on their test servers, each against the bare
 * request: `execute("true")` against a bare `fetch` of the same request
 * (stream read to its end), the upload of the generated 5,000-file skill
 * against `curl` sending the same requests, and a 1 GiB download against
 * `curl -s -o` and a bare `fetch` piped to a file. For uploads and downloads
 * the server runs in its own process (started by hand, as
 * `deno run -A tests/servers/<kind>.ts`), so a side's peak memory is the
 * client's alone.
 *
 * @module
 */
import {
  type BenchCase,
  curlToFile,
  runChild,
  startServerProcess,
} from "./_harness.ts";
import {
  BIG,
  BIG_SIZE,
  generateBig,
  generateMany,
  MANY,
  POLICY,
} from "./remote_bench.ts";
import { collectUploadEntries } from "../runtimes/remote/upload.ts";
import type { RemoteUploadFile } from "../runtimes/remote/fs.ts";
import { sessionBashArgs } from "../runtimes/remote/shell.ts";
import { E2BSkillRuntime } from "../runtimes/e2b/mod.ts";
import { EnvdClient } from "../runtimes/e2b/envd.ts";
import { connectEnvelope } from "../runtimes/remote/streams.ts";
import { HttpClient } from "../runtimes/remote/http.ts";
import { VercelSandboxSkillRuntime } from "../runtimes/vercel/mod.ts";
import { VercelApiClient } from "../runtimes/vercel/api.ts";
import { startE2BServer } from "../tests/servers/e2b.ts";
import { startVercelServer } from "../tests/servers/vercel.ts";

const DATA = new URL("./.data/", import.meta.url).pathname;
const KEY = "bench-key";

// ---- execute("true"): in-process server, one connected runtime per child ----

interface ExecSetup {
  run(): Promise<void>;
  bare(): Promise<void>;
  close(): Promise<void>;
}

const execSetups = new Map<string, Promise<ExecSetup>>();

function e2bExec(): Promise<ExecSetup> {
  const made = execSetups.get("e2b") ?? (async () => {
    const cwd = await Deno.makeTempDir({ prefix: "skillrun-bench-e2b-" });
    const server = startE2BServer({ apiKey: KEY });
    const runtime = new E2BSkillRuntime({
      apiKey: KEY,
      baseUrl: server.url,
      sandboxUrl: server.url,
      cwd,
    });
    await runtime.execute({ command: "true" });
    const sandbox = server.sandboxes.get(runtime.sandboxId!)!;
    // The very request the runtime sends.
    const body = connectEnvelope({
      process: {
        cmd: "/bin/bash",
        args: sessionBashArgs("true"),
        envs: {},
        cwd,
      },
    });
    const headers = {
      "e2b-sandbox-id": sandbox.id,
      "e2b-sandbox-port": "49983",
      "x-access-token": sandbox.token,
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      "connect-timeout-ms": "130000",
    };
    return {
      run: async () => {
        const result = await runtime.execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
      bare: async () => {
        const response = await fetch(`${server.url}/process.Process/Start`, {
          method: "POST",
          headers,
          body,
        });
        await response.arrayBuffer();
      },
      close: async () => {
        await runtime.close();
        await server.close();
        await Deno.remove(cwd, { recursive: true });
      },
    };
  })();
  execSetups.set("e2b", made);
  return made;
}

function vercelExec(): Promise<ExecSetup> {
  const made = execSetups.get("vercel") ?? (async () => {
    const cwd = await Deno.makeTempDir({ prefix: "skillrun-bench-vercel-" });
    const server = startVercelServer({ token: KEY });
    const runtime = new VercelSandboxSkillRuntime({
      apiKey: KEY,
      teamId: "team_bench",
      projectId: "prj_bench",
      baseUrl: server.url,
      cwd,
    });
    await runtime.execute({ command: "true" });
    const session = server.sandboxes.get(runtime.sandboxId!)!
      .currentSessionId;
    const body = JSON.stringify({
      command: "bash",
      args: sessionBashArgs("true"),
      cwd,
      env: {},
      wait: true,
    });
    return {
      run: async () => {
        const result = await runtime.execute({ command: "true" });
        if (result.exitCode !== 0) throw new Error("true failed");
      },
      bare: async () => {
        const response = await fetch(
          `${server.url}/v2/sandboxes/sessions/${session}/cmd?teamId=team_bench`,
          {
            method: "POST",
            headers: {
              authorization: `Bearer ${KEY}`,
              "content-type": "application/json",
            },
            body,
          },
        );
        await response.arrayBuffer();
      },
      close: async () => {
        await runtime.close();
        await server.close();
        await Deno.remove(cwd, { recursive: true });
      },
    };
  })();
  execSetups.set("vercel", made);
  return made;
}

// ---- servers in their own processes (uploads and downloads) ----

interface Remote {
  url: string;
  child: Deno.ChildProcess;
}

const remotes = new Map<string, Promise<Remote>>();

function startRemote(kind: "e2b" | "vercel"): Promise<Remote> {
  const made = remotes.get(kind) ?? (async () => {
    const server = new URL(`../tests/servers/${kind}.ts`, import.meta.url)
      .pathname;
    const { child, firstLine } = await startServerProcess([
      "run",
      "-A",
      server,
      ...(kind === "e2b"
        ? ["--api-key", KEY]
        : ["--token", KEY, "--root", "/"]),
    ], { what: `the ${kind} test server`, stderr: "null" });
    return { url: firstLine, child };
  })();
  remotes.set(kind, made);
  return made;
}

/** A sandbox on the E2B server in its own process: its envd headers. */
const e2bSandbox = (() => {
  let made: Promise<{ url: string; headers: Record<string, string> }>;
  return () =>
    made ??= (async () => {
      const { url } = await startRemote("e2b");
      const created = await (await fetch(`${url}/sandboxes`, {
        method: "POST",
        headers: { "x-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ templateID: "base", timeout: 3600 }),
      })).json();
      return {
        url,
        headers: {
          "e2b-sandbox-id": created.sandboxID,
          "e2b-sandbox-port": "49983",
          "x-access-token": created.envdAccessToken,
        },
      };
    })();
})();

/** A sandbox on the Vercel server in its own process: its session. */
const vercelSession = (() => {
  let made: Promise<{ url: string; session: string }>;
  return () =>
    made ??= (async () => {
      const { url } = await startRemote("vercel");
      const created = await (await fetch(`${url}/v3/sandboxes?teamId=t`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ timeout: 3_600_000 }),
      })).json();
      return { url, session: created.session.id };
    })();
})();

// ---- uploads of the 5,000-file skill ----

const TARGET = `${DATA}hosted-upload-target`;

async function uploadFiles(): Promise<RemoteUploadFile[]> {
  const entries = await collectUploadEntries(MANY, { policy: POLICY });
  return entries.map((entry) => ({
    remotePath: `${TARGET}/${entry.relativePath}`,
    content: { path: entry.localPath, size: entry.size },
  }));
}

let files: Promise<RemoteUploadFile[]> | undefined;

async function e2bUpload(): Promise<void> {
  const { url, headers } = await e2bSandbox();
  files ??= uploadFiles();
  await new EnvdClient(new HttpClient({ baseUrl: url, headers })).upload(
    await files,
  );
}

/** The same requests: 200 files each (`-F file=@path;filename=<target>`). */
async function e2bCurl(atOnce: number): Promise<void> {
  const { url, headers } = await e2bSandbox();
  const all = await (files ??= uploadFiles());
  const batches: string[][] = [];
  for (let i = 0; i < all.length; i += 200) {
    const args = ["-s", "-f", "-o", "/dev/null", "-H", "Expect:"];
    for (const [name, value] of Object.entries(headers)) {
      args.push("-H", `${name}: ${value}`);
    }
    for (const file of all.slice(i, i + 200)) {
      const { path } = file.content as { path: string };
      args.push("-F", `file=@${path};filename=${file.remotePath}`);
    }
    args.push(`${url}/files`);
    batches.push(args);
  }
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const status = await new Deno.Command("curl", {
        args: batches[next++]!,
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).output();
      if (!status.success) throw new Error(`curl exited with ${status.code}`);
    }
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
}

async function vercelUpload(): Promise<void> {
  const { url, session } = await vercelSession();
  files ??= uploadFiles();
  await new VercelApiClient({ baseUrl: url, apiKey: KEY, teamId: "t" }).write(
    session,
    await files,
  );
}

/** The same request: `tar -cz` of the same files piped into `curl --data-binary @-`. */
async function vercelCurl(): Promise<void> {
  const { url, session } = await vercelSession();
  const list = `${DATA}hosted-tar-list.txt`;
  const all = await (files ??= uploadFiles());
  // The tar names the targets: a folder of symlinks would change the bytes,
  // so tar reads the skill in place and rewrites names to the target.
  await Deno.writeTextFile(
    list,
    all.map((f) => (f.content as { path: string }).path.slice(1)).join("\n"),
  );
  const from = MANY.slice(1);
  const to = TARGET.slice(1);
  const script =
    `tar -C / -cz --transform 's|^${from}|${to}|' -T '${list}' | ` +
    `curl -s -f -o /dev/null -H 'Expect:' -H 'Authorization: Bearer ${KEY}' ` +
    `-H 'Content-Type: application/gzip' -H 'x-cwd: /' --data-binary @- ` +
    `'${url}/v2/sandboxes/sessions/${session}/fs/write?teamId=t'`;
  const status = await new Deno.Command("bash", {
    args: ["-o", "pipefail", "-c", script],
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!status.success) throw new Error(`tar | curl exited with ${status.code}`);
}

// ---- downloads of 1 GiB ----

const scratch = () => `${DATA}hosted-download`;

async function e2bDownload(): Promise<void> {
  const { url, headers } = await e2bSandbox();
  const envd = new EnvdClient(new HttpClient({ baseUrl: url, headers }));
  await Deno.mkdir(scratch(), { recursive: true });
  const { downloadToFile } = await import("../runtimes/remote/download.ts");
  const { bytes } = await downloadToFile(
    (offset, signal) =>
      envd.open(BIG, { offset, ...(signal ? { signal } : {}) }),
    `${scratch()}/e2b-ours.bin`,
    { expectedSize: BIG_SIZE },
  );
  if (bytes !== BIG_SIZE) throw new Error("short download");
}

async function vercelDownload(): Promise<void> {
  const { url, session } = await vercelSession();
  const api = new VercelApiClient({ baseUrl: url, apiKey: KEY, teamId: "t" });
  await Deno.mkdir(scratch(), { recursive: true });
  const { downloadToFile } = await import("../runtimes/remote/download.ts");
  const { bytes } = await downloadToFile(
    (_offset, signal) => api.read(session, BIG, signal),
    `${scratch()}/vercel-ours.bin`,
    { expectedSize: BIG_SIZE },
  );
  if (bytes !== BIG_SIZE) throw new Error("short download");
}

async function bareDownload(kind: "e2b" | "vercel"): Promise<void> {
  await Deno.mkdir(scratch(), { recursive: true });
  let response: Response;
  if (kind === "e2b") {
    const { url, headers } = await e2bSandbox();
    response = await fetch(`${url}/files?path=${encodeURIComponent(BIG)}`, {
      headers,
    });
  } else {
    const { url, session } = await vercelSession();
    response = await fetch(
      `${url}/v2/sandboxes/sessions/${session}/fs/read?teamId=t`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ path: BIG, cwd: "/" }),
      },
    );
  }
  const file = await Deno.open(`${scratch()}/${kind}-bare.bin`, {
    write: true,
    create: true,
    truncate: true,
  });
  await response.body!.pipeTo(file.writable);
}

async function curlDownload(kind: "e2b" | "vercel"): Promise<void> {
  await Deno.mkdir(scratch(), { recursive: true });
  const target = `${scratch()}/${kind}-curl.bin`;
  let size: number;
  if (kind === "e2b") {
    const { url, headers } = await e2bSandbox();
    size = await curlToFile(
      `${url}/files?path=${encodeURIComponent(BIG)}`,
      target,
      {
        headers: Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      },
    );
  } else {
    const { url, session } = await vercelSession();
    const status = await new Deno.Command("curl", {
      args: [
        "-s",
        "-f",
        "-H",
        `Authorization: Bearer ${KEY}`,
        "-H",
        "Content-Type: application/json",
        "--data",
        JSON.stringify({ path: BIG, cwd: "/" }),
        "-o",
        target,
        `${url}/v2/sandboxes/sessions/${session}/fs/read?teamId=t`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).output();
    if (!status.success) throw new Error(`curl exited with ${status.code}`);
    size = (await Deno.stat(target)).size;
  }
  if (size !== BIG_SIZE) throw new Error("short download");
}

function skipWithoutCurl(): string | undefined {
  try {
    new Deno.Command("curl", { args: ["--version"] }).outputSync();
    new Deno.Command("tar", { args: ["--version"] }).outputSync();
    return undefined;
  } catch {
    return "curl or tar is not installed";
  }
}

const execCase = (
  kind: "e2b" | "vercel",
  ready: () => Promise<ExecSetup>,
): BenchCase => ({
  id: `${kind}-execute-true`,
  title: `${
    kind === "e2b" ? "E2B" : "Vercel"
  } execute("true") vs a bare fetch of the same request`,
  module: import.meta.url,
  iterations: 30,
  rounds: 3,
  maxRatio: 1.2,
  ours: {
    label: 'runtime.execute({ command: "true" })',
    fn: async () => await (await ready()).run(),
  },
  baseline: {
    label: "bare fetch, stream read to the end",
    fn: async () => await (await ready()).bare(),
  },
});

/** The cases of this file. */
export const cases: BenchCase[] = [
  execCase("e2b", e2bExec),
  execCase("vercel", vercelExec),
  {
    id: "e2b-upload-5000-files",
    title:
      "E2B upload of a generated 5,000-file skill (26 multipart requests of 200 files)",
    module: import.meta.url,
    setup: generateMany,
    iterations: 3,
    rounds: 2,
    maxRatio: 1.5,
    ours: { label: "EnvdClient.upload (3 requests at a time)", fn: e2bUpload },
    baseline: {
      label: "curl -F, the same requests one after the other",
      fn: () => e2bCurl(1),
    },
    extra: [{
      label: "curl -F, the same requests, 3 at a time",
      fn: () => e2bCurl(3),
    }],
    skipReason: skipWithoutCurl,
  },
  {
    id: "vercel-upload-5000-files",
    title:
      "Vercel upload of a generated 5,000-file skill (one gzipped tar request)",
    module: import.meta.url,
    setup: generateMany,
    iterations: 3,
    rounds: 2,
    maxRatio: 1.5,
    ours: {
      label: "VercelApiClient.write (modern-tar + CompressionStream)",
      fn: vercelUpload,
    },
    baseline: {
      label: "tar -cz | curl --data-binary @-, the same request",
      fn: vercelCurl,
    },
    skipReason: skipWithoutCurl,
  },
  ...(["e2b", "vercel"] as const).map((kind): BenchCase => ({
    id: `${kind}-download-1gib`,
    title: `${kind === "e2b" ? "E2B" : "Vercel"} download of 1 GiB`,
    module: import.meta.url,
    setup: generateBig,
    iterations: 2,
    rounds: 2,
    maxRssMiB: 100,
    ours: {
      label: "downloadToFile over the runtime's file call",
      fn: kind === "e2b" ? e2bDownload : vercelDownload,
    },
    baseline: { label: "curl -s -o", fn: () => curlDownload(kind) },
    extra: [{
      label: "bare fetch piped to a file",
      fn: () => bareDownload(kind),
    }],
    skipReason: skipWithoutCurl,
  })),
];

if (import.meta.main) {
  await runChild(cases);
  for (const setup of execSetups.values()) await (await setup).close();
  for (const remote of remotes.values()) {
    const { child } = await remote;
    child.kill("SIGTERM");
    await child.status;
  }
}
