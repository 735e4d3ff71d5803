/**
 * Security suite: a remote server whose error answers echo what it was sent
 * (or what it remembers), on every remote kind: no configured value, whole or
 * in part, in any error thrown to the application (`execute`, `fs.*`,
 * `prepare`) nor in any tool result.
 *
 * @module
 */
import { assert } from "../helpers/assert.ts";
import { RemoteHttpError } from "../../runtimes/remote/errors.ts";
import {
  assertNoSecret,
  assertOk,
  SECRET_PEM,
  SECRET_TOKEN,
} from "./_harness.ts";
import {
  makeRemoteWorld,
  REMOTE_KINDS,
  remoteSecurityCases,
  type RemoteWorld,
} from "./_remote.ts";
import { SkillRuntimeConfig } from "../../runtimes/config.ts";
import type { Skill } from "../../skill/types.ts";
import { makeSkill } from "../helpers/remote.ts";

/** What the server remembers and gives back: every configured value. */
const REMEMBERED = `${SECRET_TOKEN} ${SECRET_PEM}`;

/** Every text an application could log of an error. */
function textsOf(error: unknown): string {
  assert(error instanceof Error, `not an error: ${String(error)}`);
  const parts = [error.message, error.stack ?? "", Deno.inspect(error)];
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    parts.push(e.message, e.stack ?? "");
    if (e instanceof RemoteHttpError) {
      parts.push(e.serverMessage ?? "", e.code ?? "", e.url);
    }
  }
  return parts.join("\n");
}

/** The `RemoteHttpError` an error is or was caused by. */
function httpErrorOf(error: unknown): RemoteHttpError | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof RemoteHttpError) return e;
  }
  return undefined;
}

/** The error a call throws, which must be one. */
async function thrown(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error("the call did not fail");
}

/** An answer whose excerpt (300 characters) cuts the token in its middle. */
function cutAnswer(): string {
  return JSON.stringify({
    code: "BAD",
    message: `${"a".repeat(290)}${SECRET_TOKEN}`,
  });
}

/** The skill each world's setup wrote for the preparation case. */
const extraSkills = new WeakMap<RemoteWorld, Skill>();

function echoOn(world: RemoteWorld, path: string, more = ""): void {
  world.faults.add({
    path,
    fault: {
      kind: "status",
      status: 400,
      echo: true,
      echoed: `${more} ${REMEMBERED}`,
    },
  });
}

remoteSecurityCases("remote errors", [
  {
    name: "execute: an error answer echoing the request and the secrets",
    async attack(world) {
      echoOn(world, world.routes.exec, "req-only-secret-5678");
      const error = await thrown(() =>
        world.runtime.execute({
          command: "echo hi",
          env: { EXTRA_TOKEN: "req-only-secret-5678" },
        })
      );
      // (E2B's command stream reports the answer as an EnvdError, Deno
      // Sandbox's JSON-RPC as a DenoSandboxError.)
      assert(
        httpErrorOf(error)?.status === 400 ||
          (error instanceof Error &&
            ["EnvdError", "DenoSandboxError"].includes(error.name)),
        String(error),
      );
      const texts = textsOf(error);
      assertNoSecret(texts);
      assert(!texts.includes("req-only-secret"), texts);
      assertNoSecret((await world.sh("echo hi")).text);
    },
    async control(world) {
      const result = await world.runtime.execute({ command: "echo hi" });
      assert(result.stdout === "hi\n", result.stdout);
    },
  },
  {
    name: "fs.readText: an error answer with the secrets, whole or cut",
    async attack(world) {
      // (A conversation's small read is one command on AIO and Vercel.)
      echoOn(world, world.routes.download);
      echoOn(world, world.routes.exec);
      assertNoSecret(
        textsOf(
          await thrown(() =>
            world.runtime.fs.readText("alive.txt", { maxBytes: 100 })
          ),
        ),
      );
      world.faults.clear();
      for (const path of [world.routes.download, world.routes.exec]) {
        world.faults.add({
          path,
          fault: { kind: "status", status: 400, body: cutAnswer() },
        });
      }
      const cut = textsOf(
        await thrown(() =>
          world.runtime.fs.readText("alive.txt", { maxBytes: 100 })
        ),
      );
      assert(cut.includes("aaaa"), cut);
      assertNoSecret(cut);
      assertNoSecret(
        (await world.call("read", { file_path: "alive.txt" })).text,
      );
    },
    async control(world) {
      const text = await world.runtime.fs.readText("alive.txt", {
        maxBytes: 100,
      });
      assert(text === "alive\n");
    },
  },
  {
    name: "fs.writeText and the search: an error answer with the secrets",
    async attack(world) {
      // A conversation's write is a command (check, temporary file, rename),
      // with an upload for large content.
      echoOn(world, world.routes.upload);
      echoOn(world, world.routes.exec);
      assertNoSecret(
        textsOf(
          await thrown(() => world.runtime.fs.writeText("new.txt", "x")),
        ),
      );
      assertNoSecret(
        (await world.call("write", { file_path: "new.txt", content: "x" }))
          .text,
      );
    },
    async control(world) {
      await world.runtime.fs.writeText("new.txt", "x");
      assertOk(await world.call("read", { file_path: "new.txt" }), "x");
    },
  },
  {
    name: "prepare: an upload refused with the configuration echoed",
    async setup(world) {
      extraSkills.set(world, await makeSkill(`${world.base}/more`, "more"));
    },
    async attack(world) {
      echoOn(world, world.routes.upload, "more-secret-value-42");
      const skill = extraSkills.get(world)!;
      const config = new SkillRuntimeConfig({
        env: { MORE_TOKEN: "more-secret-value-42" },
      });
      const error = await thrown(() =>
        world.runtime.prepare({ skills: [{ skill, config }] })
      );
      const texts = textsOf(error);
      assertNoSecret(texts);
      assert(!texts.includes("more-secret"), texts);
    },
    async control(world) {
      const skill = extraSkills.get(world)!;
      const [prepared] = await world.runtime.prepare({ skills: [{ skill }] });
      assert(prepared?.basePath.startsWith(world.workspace));
    },
  },
]);

for (const kind of REMOTE_KINDS) {
  Deno.test({
    name:
      `security: remote errors (${kind.name}): destroy(): an error answer echoing the secrets`,
    ignore: Deno.build.os !== "linux",
    async fn() {
      await using world = await makeRemoteWorld(kind);
      world.faults.add({
        method: world.routes.destroy.method,
        path: world.routes.destroy.path,
        fault: { kind: "status", status: 400, echo: true, echoed: REMEMBERED },
      });
      const destroy = (world.runtime as unknown as {
        destroy(): Promise<void>;
      }).destroy.bind(world.runtime);
      assertNoSecret(textsOf(await thrown(destroy)));
      // Control: once the server answers, destroying works.
      world.faults.clear();
      await destroy();
    },
  });
}
