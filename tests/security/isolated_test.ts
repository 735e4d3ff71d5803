/**
 * Security suite: what could still leave the isolated sandbox (bubblewrap):
 * descriptors inherited by the process that runs the runtime, setuid and
 * setgid files made inside, Unix sockets of host services under the folders
 * mounted read-only, and the sandbox's PID 1 command line.
 *
 * @module
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  assertOk,
  type SecurityCase,
  securityCases,
  type World,
} from "./_harness.ts";

const here = new URL(".", import.meta.url).pathname;
const repo = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** Why the isolated cases cannot run here, or `undefined`. */
function noBwrap(): string | undefined {
  if (Deno.build.os !== "linux") return "not Linux";
  try {
    const output = new Deno.Command("bwrap", {
      args: [
        "--unshare-all",
        "--unshare-user",
        "--ro-bind",
        "/",
        "/",
        "true",
      ],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return output.success
      ? undefined
      : "bwrap cannot start a sandbox here (user namespaces?)";
  } catch {
    return "bwrap is not installed (apt-get install bubblewrap)";
  }
}

const missing = noBwrap();
if (missing) {
  console.error(`Ignoring the isolated security cases: ${missing}`);
}

/** Every file under `dir` with the setuid or setgid bit, on the host. */
async function setIdFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (path: string): Promise<void> => {
    for await (const entry of Deno.readDir(path)) {
      const full = `${path}/${entry.name}`;
      const info = await Deno.lstat(full);
      if (((info.mode ?? 0) & 0o6000) !== 0) {
        found.push(`${full} ${(info.mode ?? 0).toString(8)}`);
      }
      if (info.isDirectory) await visit(full);
    }
  };
  await visit(dir);
  return found;
}

function isolated(c: SecurityCase): SecurityCase {
  return {
    ...c,
    world: { ...c.world, isolate: true },
    ignore: missing !== undefined,
  };
}

securityCases("isolated", [
  isolated({
    name:
      "setuid and setgid files made inside never reach the host with those bits",
    async attack(world: World) {
      const result = await world.sh([
        "cp /bin/bash rootshell; chmod 4755 rootshell",
        "chmod u+s rootshell; chmod g+s rootshell; chmod 6777 rootshell",
        "install -m 4755 /bin/true installed",
        "cp -p /bin/true copied; chmod --reference=/usr/bin/passwd copied 2>/dev/null",
        "mkdir d && chmod 2775 d",
        'command -v python3 >/dev/null && python3 -c \'import os; os.close(os.open("created", os.O_CREAT|os.O_WRONLY, 0o4755)); os.mknod("node", 0o104755)\' 2>&1',
        'command -v perl >/dev/null && perl -e \'chmod 04755, "rootshell" or print "perl refused\\n"\'',
        "ls -l",
      ].join("; ")).then((r) => r.text);
      assertEquals(await setIdFiles(world.workspace), [], result);
      assert(result.includes("Operation not permitted"), result);
    },
    async control(world) {
      assertOk(
        await world.sh(
          "cp /bin/true mine && chmod 755 mine && ./mine && echo ran",
        ),
        "ran",
      );
      const info = await Deno.stat(`${world.workspace}/mine`);
      assertEquals((info.mode ?? 0) & 0o7777, 0o755);
    },
  }),
  isolated({
    name: "PID 1's command line (bwrap's, with host paths) is not readable",
    async attack(world) {
      const result = await world.sh(
        "cat /proc/1/cmdline 2>&1 | tr '\\0' ' '; echo; ps -o args= -p 1 2>&1; echo",
      );
      assert(!result.text.includes("--bind"), result.text);
      assert(!result.text.includes("skillrun-"), result.text);
      assert(!result.text.includes(world.base), result.text);
    },
    async control(world) {
      assertOk(
        await world.sh("tr '\\0' ' ' < /proc/self/cmdline; echo"),
        "tr",
      );
    },
  }),
]);

// Both modes: without a network, and with an egress policy (whose bridge
// inside connects to the proxy's Unix socket for every request: the
// command under it still cannot make one).
for (
  const [mode, isolate] of [
    ["no network", true],
    ["egress policy", { network: { allow: ["example.invalid"] } }],
  ] as const
) {
  Deno.test({
    name:
      `security: isolated (${mode}): a Unix socket of a host service under a read-only folder (/opt) refuses connections from inside`,
    ignore: missing !== undefined,
    async fn() {
      let folder: string;
      try {
        folder = await Deno.makeTempDir({
          dir: "/opt",
          prefix: "skillrun-security-",
        });
      } catch (error) {
        throw new Error(
          `This case needs to make a folder in /opt (run the tests as root, or where /opt is writable): ${error}`,
        );
      }
      const socket = `${folder}/service.sock`;
      let served = 0;
      const server = Deno.serve(
        { path: socket, transport: "unix", onListen() {} },
        () => {
          served++;
          return new Response("host service secret\n");
        },
      );
      try {
        const { makeWorld, snapshotOutside, assertAlive } = await import(
          "./_harness.ts"
        );
        await using world = await makeWorld({ isolate });
        const before = await snapshotOutside(world);
        // Control first: the service answers on the host.
        const direct = await new Deno.Command("curl", {
          args: ["-s", "--unix-socket", socket, "http://host/"],
        }).output();
        assertEquals(
          new TextDecoder().decode(direct.stdout),
          "host service secret\n",
        );
        const seenByHost = served;
        // Attack: the socket is visible inside (/opt is mounted read-only)...
        const visible = await world.sh(`test -S ${socket} && echo visible`);
        assertOk(visible, "visible");
        // ...but no connection is made to it.
        const attack = await world.sh(
          `curl -sS --max-time 5 --unix-socket ${socket} http://host/ 2>&1; ` +
            `command -v python3 >/dev/null && python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("${socket}"); print(s.recv(100))' 2>&1 | tail -1`,
        );
        assert(!attack.text.includes("host service secret"), attack.text);
        assertEquals(served, seenByHost, "the host service got a connection");
        // Control: inside, a pair of connected sockets still works, and so
        // does everything else.
        assertOk(
          await world.sh(
            "command -v python3 >/dev/null && python3 -c 'import socket; a,b=socket.socketpair(); a.send(b\"pair\"); print(b.recv(4).decode())' || echo pair",
          ),
          "pair",
        );
        if (typeof isolate === "object") {
          // The egress proxy's own socket is bound inside; the command cannot
          // open it either (only the bridge, started before the command's
          // filter, can)...
          const proxySocket = "/run/skillrun/egress/proxy.sock";
          const raw = await world.sh(
            `test -S ${proxySocket} && echo bound; curl -sS --max-time 5 --unix-socket ${proxySocket} http://example.invalid/ 2>&1; echo "curl=$?"`,
          );
          assertOk(raw, "bound");
          assert(!raw.text.includes("skillrun egress"), raw.text);
          assert(!raw.text.includes("curl=0"), raw.text);
          // ...while the bridge carries the command's requests to the proxy:
          // an unlisted host gets the proxy's 403 with its reason.
          const proxied = await world.sh(
            `curl -s --max-time 20 -o /dev/null -w '%{http_code}' http://not-listed.example/; echo`,
          );
          assertOk(proxied, "403");
          // The nested step keeps the sandbox's devices usable.
          assertOk(
            await world.sh(
              "echo x > /dev/null && head -c 3 /dev/urandom | wc -c && echo devices-ok",
            ),
            "devices-ok",
          );
          // The nested step that loads the command's filter leaves it no
          // capability and no way to make a user namespace of its own.
          const powers = await world.sh(
            `grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; unshare -U true 2>&1; echo "unshare=$?"`,
          );
          assertOk(powers, "unshare=");
          assert(!powers.text.includes("unshare=0"), powers.text);
          for (const line of powers.text.split("\n")) {
            if (line.startsWith("Cap")) {
              assert(/:\s+0+$/.test(line), powers.text);
            }
          }
        }
        assertEquals(await snapshotOutside(world), before);
        await assertAlive(world);
      } finally {
        await server.shutdown();
        await Deno.remove(folder, { recursive: true });
      }
    },
  });
}

Deno.test({
  name:
    "security: isolated: descriptors the host process inherited (a file, a socket) never reach a command",
  ignore: missing !== undefined,
  async fn() {
    const root = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-security-fds-" }),
    );
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const received: string[] = [];
    const accepting = (async () => {
      for await (const conn of listener) {
        const text = await new Response(conn.readable).text().catch(() => "");
        received.push(text);
      }
    })();
    try {
      await Deno.writeTextFile(`${root}/host-secret.txt`, "host file secret\n");
      const run = async (hardening: "on" | "off") => {
        const output = await new Deno.Command("bash", {
          args: [
            "-c",
            `exec 7<"$1" 8<>/dev/tcp/127.0.0.1/$2; exec "$3" run -A --quiet "$4" "$5" "$6"`,
            "parent",
            `${root}/host-secret.txt`,
            String((listener.addr as Deno.NetAddr).port),
            Deno.execPath(),
            `${here}testdata/isolated_fds.ts`,
            `${root}/conversations-${hardening}`,
            hardening,
          ],
          cwd: repo,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(output.stdout);
        assert(
          output.success,
          `${text}${new TextDecoder().decode(output.stderr)}`,
        );
        return JSON.parse(text) as {
          host: string;
          attack: string;
          control: string;
        };
      };
      const seen = await run("on");
      // The host process did hold them: the attack is real.
      assert(seen.host.includes("host file secret"), seen.host);
      assert(/\b7\b/.test(seen.host) && /\b8\b/.test(seen.host), seen.host);
      // Attack: nothing but the standard streams inside.
      assert(!seen.attack.includes("host file secret"), seen.attack);
      const fds = seen.attack.split("\n")[0]!.trim().split(" ");
      assertEquals(fds.filter((fd) => !["0", "1", "2", "3"].includes(fd)), []);
      // Control: commands run, and the process answered to the end.
      assertEquals(seen.control, "control\n");
      // Without the fence the same command reads the file (the test sees it).
      const open = await run("off");
      assert(open.attack.includes("host file secret"), open.attack);
    } finally {
      listener.close();
      await accepting.catch(() => {});
      await Deno.remove(root, { recursive: true });
    }
    // The socket carried nothing from the fenced run (the unfenced one wrote).
    assertEquals(received.filter((t) => t.includes("pwned")).length, 1);
  },
});
