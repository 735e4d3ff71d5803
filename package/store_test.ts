import { assert, assertEquals, assertRejects } from "@std/assert";
import { hostPath } from "../_internal/std.ts";
import {
  FileSkillPackageStore,
  installFromStore,
  installPackage,
  PackageError,
  packSkill,
  S3SkillPackageStore,
  type SkillPackageStore,
} from "./mod.ts";
import { S3_CREDENTIALS, startS3Server } from "../tests/helpers/s3_server.ts";
import { skillMd } from "../tests/helpers/package.ts";
import { skillCorpus } from "../tests/helpers/skill_fixture.ts";

// Some skills: the real ones of ../shared, or generated ones on a bare clone.
const corpus = await skillCorpus();

async function roundTrip(store: SkillPackageStore, dir: string) {
  const a = await packSkill(corpus.skill("canvas-design"), { format: "zip" });
  const b = await packSkill(corpus.skill("skill-creator"), {
    format: "tar.gz",
  });
  await store.put(a.digest, a.bytes!);
  await Deno.writeFile(`${dir}/b.tgz`, b.bytes!);
  await store.put(b.digest, { path: `${dir}/b.tgz` });
  assertEquals(
    await store.list(),
    [{ digest: a.digest, size: a.size }, { digest: b.digest, size: b.size }]
      .sort((x, y) => x.digest < y.digest ? -1 : 1),
  );
  const streamed = await new Response(await store.open(a.digest)).bytes();
  assertEquals(streamed, a.bytes!);
  const pkg = await installFromStore(store, b.digest, { root: `${dir}/cache` });
  assertEquals(pkg.name, corpus.name("skill-creator"));
  // Bytes that do not have the digest are refused, nothing is stored.
  await assertRejects(() => store.put(a.digest, b.bytes!));
  assertEquals((await store.list()).length, 2);
  await store.delete(a.digest);
  await store.delete(a.digest); // a second delete is no error
  assertEquals((await store.list()).map((p) => p.digest), [b.digest]);
  await assertRejects(() => store.open(a.digest), Deno.errors.NotFound);
}

Deno.test("FileSkillPackageStore: put, list, stream, install, delete", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await roundTrip(new FileSkillPackageStore(`${dir}/store`), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("S3 store against a real S3 server (s3rver behind a SigV4-checking proxy)", async (t) => {
  await using s3 = await startS3Server();
  const dir = await Deno.makeTempDir();
  try {
    const store = new S3SkillPackageStore({
      endpoint: s3.endpoint,
      bucket: s3.bucket,
      prefix: "packages/",
      ...S3_CREDENTIALS,
    });

    await t.step("put, list, stream, install, delete", async () => {
      await roundTrip(store, dir);
      // Only the put of bytes that do not have the digest was refused (by the
      // signed payload hash); every other request was correctly signed.
      assertEquals(s3.refused, 1);
    });

    await t.step(
      "a wrong secret is answered clearly, and the secret is never shown",
      async () => {
        const wrong = new S3SkillPackageStore({
          endpoint: s3.endpoint,
          bucket: s3.bucket,
          accessKeyId: S3_CREDENTIALS.accessKeyId,
          secretAccessKey: "wrong-secret-value-42",
        });
        const error = await assertRejects(
          () => wrong.list(),
          Deno.errors.PermissionDenied,
        );
        assert(
          error.message.includes("refused the credentials"),
          error.message,
        );
        assert(error.message.includes("SignatureDoesNotMatch"), error.message);
        assert(!error.message.includes("wrong-secret-value-42"));
        const unknown = new S3SkillPackageStore({
          endpoint: s3.endpoint,
          bucket: s3.bucket,
          accessKeyId: "AKIDUNKNOWN",
          secretAccessKey: "x",
        });
        const second = await assertRejects(
          () => unknown.open(`sha256:${"1".repeat(64)}`),
          Deno.errors.PermissionDenied,
        );
        assert(second.message.includes("InvalidAccessKeyId"), second.message);
        assert(s3.refused >= 2);
      },
    );

    await t.step(
      "a network failure mid-download leaves no partial install",
      async () => {
        const big = `${dir}/big`;
        await Deno.mkdir(big);
        await Deno.writeTextFile(`${big}/SKILL.md`, skillMd("big"));
        const noise = new Uint8Array(2 * 1024 * 1024);
        for (let i = 0; i < noise.length; i += 65536) {
          crypto.getRandomValues(noise.subarray(i, i + 65536));
        }
        await Deno.writeFile(`${big}/noise.bin`, noise);
        const packed = await packSkill(big);
        await store.put(packed.digest, packed.bytes!);
        s3.cutNextDownloadAfter(100_000);
        const root = `${dir}/cut-root`;
        const error = await assertRejects(
          () => installFromStore(store, packed.digest, { root }),
          PackageError,
        );
        assertEquals(error.code, "source");
        assertEquals([...Deno.readDirSync(root)], []);
        // The next try succeeds.
        const pkg = await installFromStore(store, packed.digest, { root });
        assertEquals(pkg.name, "big");
      },
    );

    await t.step(
      "concurrent installs of one digest from several processes",
      async () => {
        const packed = await packSkill(corpus.skill("claude-api"));
        await store.put(packed.digest, packed.bytes!);
        const script = `${dir}/materialize.ts`;
        await Deno.writeTextFile(
          script,
          `import { installFromStore, S3SkillPackageStore } from ${
            JSON.stringify(new URL("./mod.ts", import.meta.url).href)
          };
const [endpoint, bucket, root, digest] = Deno.args;
const store = new S3SkillPackageStore({ endpoint, bucket, prefix: "packages/", accessKeyId: Deno.env.get("KEY_ID"), secretAccessKey: Deno.env.get("SECRET") });
const pkg = await installFromStore(store, digest, { root });
console.log(pkg.path);`,
        );
        const root = `${dir}/shared-cache`;
        const runs = await Promise.all(
          Array.from({ length: 4 }, () =>
            new Deno.Command(Deno.execPath(), {
              args: [
                "run",
                "-A",
                "--config",
                hostPath.fromFileUrl(new URL("../deno.json", import.meta.url)),
                script,
                s3.endpoint,
                s3.bucket,
                root,
                packed.digest,
              ],
              env: {
                KEY_ID: S3_CREDENTIALS.accessKeyId,
                SECRET: S3_CREDENTIALS.secretAccessKey,
              },
            }).output()),
        );
        const paths = runs.map((run) => {
          assert(run.success, new TextDecoder().decode(run.stderr));
          return new TextDecoder().decode(run.stdout).trim();
        });
        assertEquals(new Set(paths).size, 1);
        assertEquals(
          [...Deno.readDirSync(root)].map((e) => e.name),
          [`sha256-${packed.digest.slice(7)}`],
        );
      },
    );

    await t.step(
      "cli add s3://bucket/prefix#digest installs from the store and locks it",
      async () => {
        const packed = await packSkill(corpus.skill("frontend-design"));
        await store.put(packed.digest, packed.bytes!);
        const run = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            "--config",
            hostPath.fromFileUrl(new URL("../deno.json", import.meta.url)),
            hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url)),
            "add",
            `s3://${s3.bucket}/packages#${packed.digest}`,
            "--into",
            `${dir}/cli-skills`,
          ],
          env: {
            AWS_ENDPOINT_URL: s3.endpoint,
            AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
            AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
          },
          stdin: "null",
        }).output();
        const stderr = new TextDecoder().decode(run.stderr);
        assert(run.success, stderr);
        assertEquals(
          new TextDecoder().decode(run.stdout).trim(),
          `${corpus.name("frontend-design")} ${packed.digest}`,
        );
        const lock = JSON.parse(
          await Deno.readTextFile(`${dir}/cli-skills/skills.lock.json`),
        );
        assertEquals(
          lock.skills[corpus.name("frontend-design")].digest,
          packed.digest,
        );
        assert(!stderr.includes(S3_CREDENTIALS.secretAccessKey));
      },
    );

    await t.step(
      "installPackage straight from the store's stream",
      async () => {
        const packed = await packSkill(corpus.skill("theme-factory"), {
          format: "tar.gz",
        });
        await store.put(packed.digest, packed.bytes!);
        const pkg = await installPackage(await store.open(packed.digest), {
          root: `${dir}/direct`,
          digest: packed.digest,
        });
        assertEquals(pkg.name, corpus.name("theme-factory"));
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
