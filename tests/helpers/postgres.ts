/**
 * A private PostgreSQL cluster for tests: Debian's `postgresql` package
 * (`initdb`, `pg_ctl`), run as the `postgres` user when this process is root,
 * in a temporary folder, on a free port of 127.0.0.1; and, when `pgbouncer`
 * is installed, a pooler in transaction mode in front of it (how Supabase's
 * database is usually reached: no session state between transactions, no
 * prepared statements).
 *
 * Missing outside CI, a test that needs it says so loudly and is skipped
 * (see {@linkcode postgresOrSkip}); in CI (`CI=true`) its absence fails.
 *
 * @module
 */

/** A running cluster. */
export interface TestPostgres extends AsyncDisposable {
  /** A URL of the server itself (`postgres://postgres@127.0.0.1:<port>/postgres`). */
  readonly url: string;
  /** A URL through pgbouncer in transaction mode, when pgbouncer is installed. */
  readonly poolerUrl: string | undefined;
  /** Stops the server (immediate mode), waits for it, removes its folder. */
  stop(): Promise<void>;
  /** Stops the server, leaving its folder (to start it again). */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port. */
  resume(): Promise<void>;
}

/** Where Debian puts the server's programs, newest version first. */
export async function findPostgresBin(): Promise<string | undefined> {
  const versions: number[] = [];
  try {
    for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
      if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
    }
  } catch {
    return undefined;
  }
  for (const version of versions.sort((a, b) => b - a)) {
    const bin = `/usr/lib/postgresql/${version}/bin`;
    try {
      await Deno.stat(`${bin}/initdb`);
      return bin;
    } catch {
      // next
    }
  }
  return undefined;
}

async function which(name: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    for (const candidate of [`${dir}/${name}`]) {
      try {
        if ((await Deno.stat(candidate)).isFile) return candidate;
      } catch {
        // next
      }
    }
  }
  for (const dir of ["/usr/sbin", "/usr/bin"]) {
    try {
      if ((await Deno.stat(`${dir}/${name}`)).isFile) return `${dir}/${name}`;
    } catch {
      // next
    }
  }
  return undefined;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function run(
  asPostgres: boolean,
  command: string,
  args: string[],
): Promise<void> {
  const [program, programArgs] = asPostgres
    ? ["runuser", ["-u", "postgres", "--", command, ...args]]
    : [command, args];
  const output = await new Deno.Command(program, {
    args: programArgs as string[],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { LC_ALL: "C.UTF-8", LANG: "C.UTF-8" },
  }).output();
  if (!output.success) {
    const text = new TextDecoder().decode(output.stderr) +
      new TextDecoder().decode(output.stdout);
    throw new Error(
      `Cannot run ${command.split("/").at(-1)} for the test cluster: ${
        text.trim().split("\n").slice(-3).join(" / ")
      }`,
    );
  }
}

/**
 * Starts a private cluster (and pgbouncer in transaction mode when present).
 *
 * @returns The cluster, or `undefined` when PostgreSQL is not installed.
 */
export async function startTestPostgres(): Promise<TestPostgres | undefined> {
  const bin = await findPostgresBin();
  if (bin === undefined) return undefined;
  const root = Deno.uid?.() === 0;
  const dir = await Deno.makeTempDir({ prefix: "skillrun-pg-" });
  const data = `${dir}/data`;
  if (root) {
    await Deno.mkdir(data);
    await run(false, "chown", ["-R", "postgres:postgres", dir]);
    await Deno.chmod(dir, 0o755);
  }
  let port = freePort();
  await run(root, `${bin}/initdb`, [
    "-D",
    data,
    "-U",
    "postgres",
    "-A",
    "trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  const start = () =>
    run(root, `${bin}/pg_ctl`, [
      "-D",
      data,
      "-w",
      "-l",
      `${dir}/server.log`,
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`,
      "start",
    ]);
  const stopServer = () =>
    run(root, `${bin}/pg_ctl`, ["-D", data, "-m", "immediate", "-w", "stop"])
      .catch(() => {});
  // A port found free can be taken by another process before the server
  // binds it (test modules start clusters side by side): a start that fails
  // is tried again on another port, twice, and the last failure names what
  // the server's log said.
  for (let attempt = 1;; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      const log = await Deno.readTextFile(`${dir}/server.log`).catch(() => "");
      if (attempt === 3) {
        throw new Error(
          `${(error as Error).message} (server log: ${
            log.trim().split("\n").slice(-3).join(" / ")
          })`,
        );
      }
      port = freePort();
    }
  }
  let pooler: Deno.ChildProcess | undefined;
  let poolerUrl: string | undefined;
  const pgbouncer = await which("pgbouncer");
  if (pgbouncer !== undefined) {
    const poolerPort = freePort();
    const ini = `${dir}/pgbouncer.ini`;
    await Deno.writeTextFile(
      ini,
      `[databases]
postgres = host=127.0.0.1 port=${port} dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${poolerPort}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/users.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
`,
    );
    await Deno.writeTextFile(`${dir}/users.txt`, `"postgres" ""\n`);
    if (root) await run(false, "chown", ["-R", "postgres:postgres", dir]);
    pooler = new Deno.Command(root ? "runuser" : pgbouncer, {
      args: root ? ["-u", "postgres", "--", pgbouncer, ini] : [ini],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    for (let i = 0; i < 100; i++) {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port: poolerPort }))
          .close();
        poolerUrl = `postgres://postgres@127.0.0.1:${poolerPort}/postgres`;
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (pooler) {
        try {
          pooler.kill("SIGTERM");
        } catch {
          // gone
        }
        await pooler.status;
      }
      await stopServer();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    })();
    return stopped;
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    poolerUrl,
    stop,
    pause: stopServer,
    resume: start,
    [Symbol.asyncDispose]: stop,
  };
}

/** Whether the tests run in CI, where a missing PostgreSQL is a failure. */
export function inCi(): boolean {
  return /^(1|true|yes)$/i.test(Deno.env.get("CI") ?? "");
}

/**
 * The cluster for a test, or `undefined` after saying loudly that
 * PostgreSQL is missing (outside CI); in CI a missing PostgreSQL throws.
 *
 * @param what The tests that need it, for the message.
 * @returns The cluster, or `undefined`.
 * @throws {Error} PostgreSQL is missing in CI.
 */
export async function postgresOrSkip(
  what: string,
): Promise<TestPostgres | undefined> {
  const cluster = await startTestPostgres();
  if (cluster !== undefined) return cluster;
  const message =
    `PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): ${what} cannot run; install it with "apt-get install -y postgresql pgbouncer"`;
  if (inCi()) throw new Error(message);
  console.error(`\n!!! SKIPPED: ${message}\n`);
  return undefined;
}
