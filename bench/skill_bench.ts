/**
 * Loading skills: `loadSkills` over 1,000 generated skill folders against just
 * reading their 1,000 `SKILL.md` files with `Deno.readTextFile` (paths known).
 *
 * @module
 */
import { type BenchCase, runChild } from "./_harness.ts";
import { hostPath } from "../_internal/std.ts";
import { loadSkills } from "../skill/load.ts";

const COUNT = 1_000;
const ROOT = hostPath.fromFileUrl(
  new URL("./.data/skills-1000/", import.meta.url),
);
const MARKER = hostPath.join(ROOT, ".complete");

function nameOf(i: number): string {
  return `skill-${String(i).padStart(4, "0")}`;
}

const PATHS = Array.from(
  { length: COUNT },
  (_, i) => hostPath.join(ROOT, nameOf(i), "SKILL.md"),
);

function skillText(i: number): string {
  const name = nameOf(i);
  const body = Array.from(
    { length: 30 },
    (_, line) =>
      `${line + 1}. Step ${
        line + 1
      } of ${name}: run \`bash scripts/run.sh\` and check the output file.`,
  ).join("\n");
  return `---
name: ${name}
description: Generated skill number ${i} for the loading benchmark. Use it when the user asks for report ${i}, a summary of data set ${i}, or anything about topic ${i}.
license: MIT
metadata:
  version: 1.0
  author: bench
allowed-tools: Bash Read Write
---
# ${name}

${body}
`;
}

/** Writes the 1,000 skills once; later runs reuse them. */
async function setup(): Promise<void> {
  try {
    if ((await Deno.readTextFile(MARKER)).trim() === String(COUNT)) return;
  } catch {
    // Not generated yet.
  }
  await Deno.remove(ROOT, { recursive: true }).catch(() => {});
  for (let i = 0; i < COUNT; i++) {
    const dir = hostPath.join(ROOT, nameOf(i));
    await Deno.mkdir(hostPath.join(dir, "scripts"), { recursive: true });
    await Deno.writeTextFile(hostPath.join(dir, "SKILL.md"), skillText(i));
    await Deno.writeTextFile(
      hostPath.join(dir, "scripts", "run.sh"),
      `#!/usr/bin/env bash\necho "report ${i}" > out.txt\n`,
    );
  }
  await Deno.writeTextFile(MARKER, String(COUNT));
}

/** The bench cases of skill loading. */
export const cases: BenchCase[] = [
  {
    id: "skill-load-1000",
    title: "load 1,000 skills",
    module: import.meta.url,
    setup,
    iterations: 10,
    maxRatio: 3,
    ours: {
      label: "loadSkills(root)",
      fn: async () => {
        const { skills } = await loadSkills(ROOT);
        if (skills.length !== COUNT) {
          throw new Error(`Expected ${COUNT} skills, got ${skills.length}`);
        }
      },
    },
    baseline: {
      label: "readTextFile x1000 (parallel)",
      fn: async () => {
        const texts = await Promise.all(
          PATHS.map((path) => Deno.readTextFile(path)),
        );
        if (texts.length !== COUNT) throw new Error("Missing files");
      },
    },
    extra: [{
      label: "readTextFile x1000 (one by one)",
      fn: async () => {
        for (const path of PATHS) await Deno.readTextFile(path);
      },
    }],
  },
];

if (import.meta.main) await runChild(cases);
