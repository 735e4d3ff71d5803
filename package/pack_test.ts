import { assert, assertEquals, assertRejects } from "@std/assert";
import { hostPath } from "../_internal/std.ts";
import { walkSkillFiles } from "../workspace/copy.ts";
import { loadSkills } from "../skill/load.ts";
import {
  installPackage,
  PackageError,
  packSkill,
  verifyInstalled,
} from "./mod.ts";
import { randomBytes, skillMd } from "../tests/helpers/package.ts";
import { skillCorpus } from "../tests/helpers/skill_fixture.ts";

// The real skills when ../shared is beside the clone, else generated ones
// (fonts, images, a gzip archive, nested folders, executable scripts).
const corpus = await skillCorpus();
const CORPUS = corpus.root;
const CANVAS = corpus.name("canvas-design");

async function sameFiles(source: string, installed: string): Promise<void> {
  const expected = await Array.fromAsync(walkSkillFiles(source));
  const got = await Array.fromAsync(walkSkillFiles(installed));
  assertEquals(
    got.map((f) => f.relativePath),
    expected.map((f) => f.relativePath),
  );
  for (let i = 0; i < expected.length; i++) {
    const a = await Deno.readFile(expected[i]!.path);
    const b = await Deno.readFile(got[i]!.path);
    assertEquals(b, a, expected[i]!.relativePath);
    assertEquals(got[i]!.executable, expected[i]!.executable);
  }
}

for (const format of ["zip", "tar.gz"] as const) {
  Deno.test(`every corpus skill round-trips as ${format}: packed twice the same, installed, loaded, byte-identical`, async () => {
    const root = await Deno.makeTempDir();
    try {
      const names = [...Deno.readDirSync(CORPUS)].map((e) => e.name).sort();
      assert(names.length >= (corpus.real ? 10 : 4));
      for (const name of names) {
        const dir = `${CORPUS}${name}`;
        const a = await packSkill(dir, { format });
        const b = await packSkill(dir, { format });
        assertEquals(a.digest, b.digest, `${name} is reproducible`);
        assertEquals(a.name, name);
        const pkg = await installPackage(a.bytes!, {
          root,
          digest: a.digest,
        });
        assertEquals(pkg.name, name);
        await sameFiles(dir, pkg.path);
        const loaded = await loadSkills(pkg.path);
        assertEquals(loaded.skills.map((s) => s.name), [name]);
        assert((await verifyInstalled(pkg)).ok);
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}

Deno.test("packSkill leaves secrets out, keeps modes, fixes times, refuses links", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const skill = `${dir}/demo`;
    await Deno.mkdir(`${skill}/scripts`, { recursive: true });
    await Deno.writeTextFile(`${skill}/SKILL.md`, skillMd("demo"));
    await Deno.writeTextFile(`${skill}/scripts/run.sh`, "echo hi\n", {
      mode: 0o755,
    });
    await Deno.writeTextFile(`${skill}/.env`, "TOKEN=secret");
    await Deno.writeTextFile(`${skill}/id_rsa`, "KEY");
    const first = await packSkill(skill, { output: `${dir}/a.zip` });
    await Deno.utime(`${skill}/SKILL.md`, 1_000_000, 1_000_000);
    const second = await packSkill(skill, { output: `${dir}/b.zip` });
    assertEquals(first.digest, second.digest, "times do not count");
    assertEquals(first.files, 2);
    const listing = new TextDecoder().decode(
      (await new Deno.Command("unzip", { args: ["-Z", `${dir}/a.zip`] })
        .output()).stdout,
    );
    assert(
      listing.includes("-rwxr-xr-x") && listing.includes("demo/scripts/run.sh"),
    );
    assert(!listing.includes(".env") && !listing.includes("id_rsa"));
    await Deno.symlink("/etc/passwd", `${skill}/link`);
    const error = await assertRejects(() => packSkill(skill), PackageError);
    assertEquals(error.code, "link");
    assert(error.message.includes('"link"'));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a ZIP made by Debian's zip command installs", async () => {
  const zip = await new Deno.Command("zip", { args: ["-v"] }).output().catch(
    () => null,
  );
  if (!zip?.success) {
    throw new Error(
      "the `zip` command is missing: install it (apt-get install zip), .ci/run does",
    );
  }
  const dir = await Deno.makeTempDir();
  try {
    const made = await new Deno.Command("zip", {
      args: ["-r", "-X", "-q", `${dir}/canvas.zip`, CANVAS],
      cwd: CORPUS,
    }).output();
    assert(made.success);
    const pkg = await installPackage({ path: `${dir}/canvas.zip` }, {
      root: `${dir}/root`,
    });
    assertEquals(pkg.name, CANVAS);
    await sameFiles(`${CORPUS}${CANVAS}`, pkg.path);
    // The files are installed read-only.
    const info = await Deno.stat(`${pkg.path}/SKILL.md`);
    assertEquals(info.mode! & 0o222, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("packSkill's ZIP is read by Debian's unzip: UTF-8 names, modes, a streamed entry", async () => {
  const unzip = await new Deno.Command("unzip", { args: ["-v"] }).output()
    .catch(() => null);
  if (!unzip?.success) {
    throw new Error(
      "the `unzip` command is missing: install it (apt-get install unzip), .ci/run does",
    );
  }
  const dir = await Deno.makeTempDir();
  try {
    const skill = `${dir}/src/demo`;
    await Deno.mkdir(`${skill}/scripts`, { recursive: true });
    await Deno.writeTextFile(`${skill}/SKILL.md`, skillMd("demo"));
    await Deno.writeTextFile(`${skill}/scripts/run.sh`, "echo hi\n", {
      mode: 0o755,
    });
    await Deno.writeTextFile(`${skill}/notes é ü.txt`, "ünïcödé\n");
    await Deno.writeFile(`${skill}/empty.txt`, new Uint8Array(0));
    // Over the size read whole: streamed, its sizes in a data descriptor.
    const big = new Uint8Array(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) % 251;
    await Deno.writeFile(`${skill}/big.bin`, big);
    await packSkill(skill, { output: `${dir}/demo.zip` });
    const test = await new Deno.Command("unzip", {
      args: ["-tq", `${dir}/demo.zip`],
    }).output();
    assert(test.success, new TextDecoder().decode(test.stdout));
    const out = await new Deno.Command("unzip", {
      args: ["-q", `${dir}/demo.zip`, "-d", `${dir}/out`],
    }).output();
    assert(out.success, new TextDecoder().decode(out.stderr));
    await sameFiles(skill, `${dir}/out/demo`);
    const mode = (await Deno.stat(`${dir}/out/demo/scripts/run.sh`)).mode!;
    assertEquals(mode & 0o777, 0o755);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("concurrent installs of one digest from several processes end with one copy", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const packed = await packSkill(corpus.skill("claude-api"), {
      output: `${dir}/p.zip`,
    });
    const script = `${dir}/install.ts`;
    await Deno.writeTextFile(
      script,
      `import { installPackage } from ${
        JSON.stringify(new URL("./mod.ts", import.meta.url).href)
      };
const pkg = await installPackage({ path: Deno.args[0] }, { root: Deno.args[1], digest: Deno.args[2] });
console.log(pkg.path);`,
    );
    const runs = await Promise.all(
      Array.from({ length: 4 }, () =>
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            "--config",
            hostPath.fromFileUrl(new URL("../deno.json", import.meta.url)),
            script,
            `${dir}/p.zip`,
            `${dir}/root`,
            packed.digest,
          ],
        }).output()),
    );
    const paths = runs.map((run) => {
      assert(run.success, new TextDecoder().decode(run.stderr));
      return new TextDecoder().decode(run.stdout).trim();
    });
    assertEquals(new Set(paths).size, 1);
    const entries = [...Deno.readDirSync(`${dir}/root`)].map((e) => e.name);
    assertEquals(entries, [`sha256-${packed.digest.slice(7)}`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("long paths, Unicode names and empty files round-trip in both formats", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const deep = `${"deep/".repeat(30)}${"n".repeat(120)}.txt`;
    await Deno.mkdir(hostPath.dirname(`${dir}/s/${deep}`), { recursive: true });
    await Deno.writeTextFile(`${dir}/s/SKILL.md`, skillMd("s"));
    await Deno.writeTextFile(`${dir}/s/${deep}`, "long");
    await Deno.writeTextFile(`${dir}/s/héllo wörld ✓.md`, "unicode");
    await Deno.writeFile(`${dir}/s/empty`, new Uint8Array(0));
    for (const format of ["zip", "tar.gz"] as const) {
      const packed = await packSkill(`${dir}/s`, { format });
      const pkg = await installPackage(packed.bytes!, {
        root: `${dir}/r-${format}`,
      });
      await sameFiles(`${dir}/s`, pkg.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tar.gz archives made by GNU tar install (with folder entries, ./ and pax headers)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const made = [
      ["-czf", `${dir}/a.tgz`, "-C", CORPUS, CANVAS],
      ["-czf", `${dir}/b.tgz`, "-C", `${CORPUS}${CANVAS}`, "."],
      ["--format=pax", "-czf", `${dir}/c.tgz`, "-C", CORPUS, CANVAS],
    ];
    for (const args of made) {
      assert((await new Deno.Command("tar", { args }).output()).success);
    }
    for (const name of ["a", "b", "c"]) {
      const pkg = await installPackage({ path: `${dir}/${name}.tgz` }, {
        root: `${dir}/root-${name}`,
      });
      assertEquals(pkg.name, CANVAS);
      await sameFiles(`${CORPUS}${CANVAS}`, pkg.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a package over 64 MiB streams from disk (its large entry inflated into reused buffers) and installs byte for byte", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/big`);
    await Deno.writeTextFile(`${dir}/big/SKILL.md`, skillMd("big"));
    const data = new Uint8Array(70 * 1024 * 1024);
    for (let i = 0; i < data.length; i += 65536) {
      crypto.getRandomValues(data.subarray(i, i + 65536));
    }
    data.fill(7, 0, 1 << 20); // some compressible bytes too
    await Deno.writeFile(`${dir}/big/data.bin`, data);
    for (const format of ["zip", "tar.gz"] as const) {
      const packed = await packSkill(`${dir}/big`, {
        format,
        output: `${dir}/big.${format}`,
      });
      assert(packed.size > 64 * 1024 * 1024);
      const pkg = await installPackage({ path: `${dir}/big.${format}` }, {
        root: `${dir}/root-${format}`,
        digest: packed.digest,
      });
      await sameFiles(`${dir}/big`, pkg.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("packSkill and installPackage tell their progress: bytes and files of the pack, the read and the unpacking", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const skill = `${dir}/big`;
    await Deno.mkdir(`${skill}/data`, { recursive: true });
    await Deno.writeTextFile(`${skill}/SKILL.md`, skillMd("big"));
    for (let i = 0; i < 3; i++) {
      await Deno.writeFile(`${skill}/data/part-${i}.bin`, randomBytes(1 << 20));
    }
    for (const format of ["zip", "tar.gz"] as const) {
      const packing: { bytes: number; files: number }[] = [];
      const packed = await packSkill(skill, {
        format,
        output: `${dir}/big.${format}`,
        onProgress: (p) => {
          assertEquals(p.stage, "pack");
          packing.push({ bytes: p.bytes, files: p.files });
        },
      });
      assert(packing.length > 1, `${format}: ${packing.length} updates`);
      assertEquals(packing.at(-1)!.bytes, packed.size, format);
      assertEquals(packing.at(-1)!.files, 4, format);
      for (let i = 1; i < packing.length; i++) {
        assert(packing[i]!.bytes > packing[i - 1]!.bytes, format);
        assert(packing[i]!.files >= packing[i - 1]!.files, format);
      }
      const seen: { stage: string; bytes: number; files: number }[] = [];
      await installPackage({ path: `${dir}/big.${format}` }, {
        root: `${dir}/installed-${format.replace(".", "-")}`,
        digest: packed.digest,
        onProgress: (p) => seen.push({ ...p }),
      });
      const read = seen.filter((p) => p.stage === "read");
      const extract = seen.filter((p) => p.stage === "extract");
      assertEquals(read.at(-1)?.bytes, packed.size, format);
      assert(
        seen.indexOf(extract[0]!) > seen.indexOf(read.at(-1)!),
        "read, then unpacked",
      );
      // Every byte of every file: 3 MiB and the SKILL.md.
      assertEquals(
        extract.at(-1)!.bytes,
        3 * (1 << 20) + skillMd("big").length,
        format,
      );
      assertEquals(extract.at(-1)!.files, 4, format);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
