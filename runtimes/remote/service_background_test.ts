import {
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import {
  backgroundCommandLine,
  commandOfLine,
  serviceBackgroundHooks,
  type ServiceBackgroundKind,
  type ServiceBackgroundStatus,
} from "./service_background.ts";
import type { RemoteCommandEvent } from "./command.ts";

const REQUEST = {
  command: "serve",
  cwd: "/",
  env: {},
  timeoutMs: 60_000,
  maxOutputBytes: 1024,
};

class Unknown extends Error {}

/** A service's background facility in memory: one command, `c1`. */
function service(options: {
  launch?: RemoteCommandEvent;
  status?: () => ServiceBackgroundStatus;
  log?: string;
  registerGraceMs?: number;
} = {}) {
  const calls: string[] = [];
  const kind: ServiceBackgroundKind = {
    start: () =>
      Promise.resolve({
        id: "c1",
        events: (async function* () {
          yield options.launch ?? { type: "exit", exitCode: 0 };
        })(),
      }),
    status: (id) => {
      calls.push(`status ${id}`);
      return Promise.resolve().then(() =>
        options.status?.() ?? { running: false, exitCode: 0 }
      );
    },
    logs: (id, cursor) => {
      calls.push(`logs ${id} ${cursor}`);
      return Promise.resolve({
        body: new Blob([cursor === 0 ? options.log ?? "" : ""]).stream(),
      });
    },
    kill: (id) => {
      calls.push(`kill ${id}`);
      return Promise.resolve();
    },
    unknown: (error) => error instanceof Unknown,
    idPattern: /^c\d+$/,
    ...(options.registerGraceMs === undefined
      ? {}
      : { registerGraceMs: options.registerGraceMs }),
  };
  return { hooks: serviceBackgroundHooks(kind), calls };
}

Deno.test("serviceBackgroundHooks: a start the service could not launch kills the command and throws its failure", async () => {
  const { hooks, calls } = service({
    launch: { type: "exit", exitCode: -1, failure: new Error("no such file") },
  });
  await assertRejects(
    () => hooks.startBackground(REQUEST),
    Error,
    "no such file",
  );
  assertEquals(calls, ["kill c1"]);
});

Deno.test("serviceBackgroundHooks: state first, then the log from the cursor; the output goes to onStdout", async () => {
  let out = "";
  const { hooks, calls } = service({
    status: () => ({ running: false, exitCode: 4 }),
    log: "hello\n",
  });
  const command = await hooks.startBackground({
    ...REQUEST,
    onStdout: (chunk) => out += new TextDecoder().decode(chunk),
  });
  assertEquals(command.id, "c1");
  assertEquals(await command.poll(), { running: false, exitCode: 4 });
  assertEquals([out, calls], ["hello\n", ["status c1", "logs c1 0"]]);
});

Deno.test("serviceBackgroundHooks: a command the service does not know yet reads as running for the grace, then the error is thrown", async () => {
  const { hooks } = service({
    status: () => {
      throw new Unknown("command not found");
    },
    registerGraceMs: 100,
  });
  const command = await hooks.startBackground(REQUEST);
  assertEquals(await command.poll(), { running: true });
  await new Promise((resolve) => setTimeout(resolve, 120));
  await assertRejects(() => command.poll(), Unknown);
});

Deno.test("serviceBackgroundHooks: killed by a signal past its timeout reads as timed out; before it, as killed", async () => {
  const killed = () => ({ running: false, exitCode: -1, killed: true });
  const late = service({ status: killed });
  const timed = await late.hooks.startBackground({ ...REQUEST, timeoutMs: 0 });
  assertEquals(await timed.poll(), {
    running: false,
    exitCode: -1,
    timedOut: true,
  });
  const early = service({ status: killed });
  const stopped = await early.hooks.startBackground(REQUEST);
  assertEquals(await stopped.poll(), { running: false, exitCode: -1 });
});

Deno.test("serviceBackgroundHooks: attach finds a command by its id through its status; another shape or an unknown id is undefined", async () => {
  const started = new Date("2026-01-02T03:04:05Z");
  const { hooks, calls } = service({
    status: () => ({
      running: true,
      command: "serve --port 8",
      startedAt: started,
    }),
  });
  const found = await hooks.attachBackground("c7", {});
  assertEquals([found?.command, found?.startedAt], ["serve --port 8", started]);
  assertEquals(await hooks.attachBackground("../c7", {}), undefined);
  assertEquals(calls, ["status c7"]);
  const gone = service({
    status: () => {
      throw new Unknown("command not found");
    },
  });
  assertEquals(await gone.hooks.attachBackground("c8", {}), undefined);
});

Deno.test("backgroundCommandLine: run by bash it enters the folder, evaluates the command (a leading - too) and reads back as the command", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-b$x-" });
  try {
    const command = `-x() { echo "it's $1"; }; -x "$PWD"`;
    const line = backgroundCommandLine(command, dir);
    assertEquals(commandOfLine(line), command);
    const ran = await new Deno.Command("bash", { args: ["-c", line] })
      .output();
    assertEquals(new TextDecoder().decode(ran.stdout), `it's ${dir}\n`);
    const missing = await new Deno.Command("bash", {
      args: ["-c", backgroundCommandLine("echo ran", `${dir}/none`)],
      stderr: "piped",
    }).output();
    assertEquals([missing.code, new TextDecoder().decode(missing.stdout)], [
      1,
      "",
    ]);
    assertStringIncludes(new TextDecoder().decode(missing.stderr), "none");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
