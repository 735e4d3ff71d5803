import {
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertNotEquals,
  assertRejects,
} from "../tests/helpers/assert.ts";
import { skillDigest } from "./skill_digest.ts";

async function makeSkill(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-digest-" });
  await Deno.mkdir(`${dir}/scripts`);
  await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: demo\n---\nbody\n");
  await Deno.writeTextFile(`${dir}/scripts/run.sh`, "echo hi\n", {
    mode: 0o644,
  });
  await Deno.writeFile(`${dir}/data.bin`, new Uint8Array([0, 1, 2, 255]));
  return dir;
}

Deno.test("skillDigest is stable and moves with every file and config change, and only then", async () => {
  const dir = await makeSkill();
  const copy = await makeSkill();
  try {
    const config = {
      env: { API_URL: "https://x", TOKEN: "s3cret-value" },
      bootstrap: [{ command: "pip install x", timeoutMs: 1000 }],
    };
    const base = await skillDigest(dir, { config });
    assertEquals(await skillDigest(dir, { config }), base);
    // Same files elsewhere: same digest (paths are relative to the skill).
    assertEquals(await skillDigest(copy, { config }), base);
    assertFalse(base.includes("s3cret"));
    // Not changed by times, excluded files or symlinks.
    await Deno.utime(`${dir}/SKILL.md`, 1, 1);
    await Deno.writeTextFile(`${dir}/.env`, "TOKEN=other");
    await Deno.mkdir(`${dir}/.git`);
    await Deno.writeTextFile(`${dir}/.git/HEAD`, "ref");
    if (Deno.build.os !== "windows") {
      await Deno.symlink(`${dir}/SKILL.md`, `${dir}/link.md`);
    }
    assertEquals(await skillDigest(dir, { config }), base);
    // Env order does not matter; its values do.
    assertEquals(
      await skillDigest(dir, {
        config: {
          ...config,
          env: { TOKEN: "s3cret-value", API_URL: "https://x" },
        },
      }),
      base,
    );
    const changes: [string, () => Promise<string>][] = [
      ["an env value", () =>
        skillDigest(dir, {
          config: { ...config, env: { ...config.env, TOKEN: "s3cret-valuf" } },
        })],
      ["an env name", () =>
        skillDigest(dir, {
          config: {
            ...config,
            env: { API_URL: "https://x", TOKEN2: "s3cret-value" },
          },
        })],
      ["a bootstrap command", () =>
        skillDigest(dir, {
          config: {
            ...config,
            bootstrap: [{ command: "pip install y", timeoutMs: 1000 }],
          },
        })],
      ["a bootstrap timeout", () =>
        skillDigest(dir, {
          config: {
            ...config,
            bootstrap: [{ command: "pip install x", timeoutMs: 2000 }],
          },
        })],
      ["no config", () => skillDigest(dir)],
      [
        "the policy",
        () =>
          skillDigest(dir, { config, policy: { extraExcludes: ["*.bin"] } }),
      ],
    ];
    const seen = new Set([base]);
    for (const [what, digest] of changes) {
      const value = await digest();
      assertFalse(seen.has(value), `${what} did not change the digest`);
      seen.add(value);
    }
    // File changes, each undone after.
    const fileChanges: [string, () => Promise<void>, () => Promise<void>][] = [
      [
        "same-size content",
        () =>
          Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: demo\n---\nbodY\n"),
        () =>
          Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: demo\n---\nbody\n"),
      ],
      [
        "a binary byte",
        () => Deno.writeFile(`${dir}/data.bin`, new Uint8Array([0, 1, 2, 254])),
        () => Deno.writeFile(`${dir}/data.bin`, new Uint8Array([0, 1, 2, 255])),
      ],
      [
        "a new file",
        () => Deno.writeTextFile(`${dir}/scripts/new.py`, ""),
        () => Deno.remove(`${dir}/scripts/new.py`),
      ],
      [
        "a rename",
        () => Deno.rename(`${dir}/scripts/run.sh`, `${dir}/scripts/run2.sh`),
        () => Deno.rename(`${dir}/scripts/run2.sh`, `${dir}/scripts/run.sh`),
      ],
    ];
    if (Deno.build.os !== "windows") {
      fileChanges.push([
        "the executable bit",
        () => Deno.chmod(`${dir}/scripts/run.sh`, 0o755),
        () => Deno.chmod(`${dir}/scripts/run.sh`, 0o644),
      ]);
    }
    for (const [what, change, undo] of fileChanges) {
      await change();
      const changed = await skillDigest(dir, { config });
      assertNotEquals(changed, base, `${what} did not change the digest`);
      await undo();
      assertEquals(await skillDigest(dir, { config }), base, `undoing ${what}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(copy, { recursive: true });
  }
});

Deno.test("skillDigest hashes large files in pieces: a change past the first piece counts", async () => {
  const dir = await makeSkill();
  try {
    const big = new Uint8Array(9 * 1024 * 1024).fill(7);
    await Deno.writeFile(`${dir}/big.bin`, big);
    const before = await skillDigest(dir);
    big[big.length - 1] = 8;
    await Deno.writeFile(`${dir}/big.bin`, big);
    assertNotEquals(await skillDigest(dir), before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("skillDigest: a missing folder and an aborted walk are errors", async () => {
  await assertRejects(
    () => skillDigest("/nonexistent/skillrun-skill"),
    Deno.errors.NotFound,
  );
  const dir = await makeSkill();
  try {
    const controller = new AbortController();
    controller.abort(new DOMException("stop", "AbortError"));
    const error = await assertRejects(() =>
      skillDigest(dir, { signal: controller.signal })
    );
    assertInstanceOf(error, DOMException);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
