// Every command in every README works verbatim on a fresh clone with only
// Node: Deno is called as `npx -y deno@2.9.6` (or after the line that puts it
// on PATH), the files a command names exist, and the quick commands run.
import { assert, assertEquals } from "../_internal/assert.ts";
import { hostPath } from "../_internal/std.ts";

const ROOT = hostPath.fromFileUrl(new URL("../", import.meta.url));

async function readmes(): Promise<string[]> {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n")
    .filter((p) => p.endsWith("README.md"));
}

/** The command lines of the `sh` blocks of a Markdown file (continuations joined). */
function commands(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const text = block[1]!.replace(/\\\n\s*/g, " ");
    for (const raw of text.split("\n")) {
      const line = raw.replace(/\s+#.*$/, "").trim();
      if (line && !line.startsWith("#")) lines.push(line);
    }
  }
  return lines;
}

Deno.test("README commands call Deno as a fresh clone with only Node can, and name files that exist", async () => {
  const files = await readmes();
  assert(files.includes("README.md") && files.includes("examples/README.md"));
  let checked = 0;
  for (const file of files) {
    const text = await Deno.readTextFile(hostPath.join(ROOT, file));
    let denoOnPath = false;
    for (const line of commands(text)) {
      if (/npm install -g deno@2\.9\.6/.test(line)) denoOnPath = true;
      const words = line.split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
      if (words[0] === "deno") {
        assert(denoOnPath, `${file}: "${line}" needs Deno on PATH`);
      }
      if (words[0] === "npx") {
        assertEquals(words.slice(0, 3).join(" "), "npx -y deno@2.9.6", line);
      }
      // Paths a command names exist (commands run from the repository root); a template
      // line with <placeholders> names none.
      if (line.includes("<")) continue;
      for (const word of words) {
        const path = word.replace(/^--[a-z-]+=/, "").split(",")[0]!;
        if (
          /^(examples|bench|tests|tools|runtimes|search|cli)\/[\w./-]*$/
            .test(path) || /^[\w-]+\.(ts|json)$/.test(path)
        ) {
          if (path.startsWith(".skillrun")) continue;
          const exists = await Deno.stat(hostPath.join(ROOT, path)).then(
            () => true,
            () => false,
          );
          assert(
            exists,
            `${file}: "${line}" names "${path}", which is missing`,
          );
          checked++;
        }
      }
    }
  }
  assert(checked > 10, `only ${checked} paths checked`);
});

Deno.test("the README's quick command lines run verbatim from the repository root", async () => {
  const text = await Deno.readTextFile(hostPath.join(ROOT, "README.md"));
  const quick = commands(text).filter((line) =>
    line.startsWith("npx -y deno@2.9.6 run -A cli.ts ") &&
    !line.includes(" mcp ")
  );
  assert(quick.length >= 5, quick.join("\n"));
  for (const line of quick) {
    // `npx -y deno@2.9.6` is this Deno.
    const args = line.slice("npx -y deno@2.9.6 ".length).split(/\s+/)
      .map((w) => w.replace(/^\[--json\]$/, "--json"));
    const output = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(
      output.code,
      0,
      `${line}\n${new TextDecoder().decode(output.stderr)}`,
    );
  }
});
