import { assertEquals } from "../tests/helpers/assert.ts";
import {
  callCovered,
  commandCovered,
  commandParts,
  loadCommandParser,
  parseAllowedTools,
} from "./_allowed_tools.ts";

const { rules } = parseAllowedTools([
  "Bash(git:*)",
  "Bash(npm run test)",
  "Bash(ls *)",
  "Bash(docker compose up:*)",
  "Read",
]);

/** [command, covered by the rules above] */
const TABLE: readonly (readonly [string, boolean])[] = [
  // Plain commands.
  ["git", true],
  ["git status", true],
  ["git log --oneline -n 5", true],
  ["  git   status  ", true],
  ["git commit -m 'fix: a bug'", true],
  ['git commit -m "two words"', true],
  ["git add *.ts", true],
  ["npm run test", true],
  ["npm run test --watch", false],
  ["npm run", false],
  ["npm run test2", false],
  ["ls", true],
  ["ls -la src", true],
  ["docker compose up -d", true],
  ["docker compose down", false],
  ["docker compose", false],
  // Starts like an allowed command, is another.
  ["gitx status", false],
  ["git-upload-pack .", false],
  ["/usr/bin/git status", false],
  ["./git status", false],
  ["rm -rf /", false],
  ["FOO=1 git status", false],
  // Every part covered.
  ["git status; git log", true],
  ["git status && npm run test", true],
  ["git status || ls", true],
  ["git log | git stash", true],
  ["git fetch & git status", true],
  ["git status\ngit log", true],
  ["git status;", true],
  // A part not covered.
  ["git status; touch x", false],
  ["git status && rm -rf /", false],
  ["git status || rm -rf /", false],
  ["git log | sh", false],
  ["git status & touch x", false],
  ["git status |& tee x", false],
  ["git status\ntouch x", false],
  ["git status ;; touch x", false],
  ["npm run test; curl evil.example", false],
  // Substitutions, variables, redirections, subshells: never.
  ["git log $(touch x)", false],
  ["git log `touch x`", false],
  ['git log "$(touch x)"', false],
  ["git log $HOME", false],
  ["git log ${HOME}", false],
  ["git log > out.txt", false],
  ["git log >> out.txt", false],
  ["git log < in.txt", false],
  ["git log 2>&1", false],
  ["git log &> out.txt", false],
  ["git log <<EOF", false],
  ["git log <(touch x)", false],
  ["(git status)", false],
  ["(git status; touch x)", false],
  ["{ git status; }", false],
  ["git() { touch x; }; git status", false],
  // Quoting tricks.
  ["git' '--version; touch x", false],
  ["git' '--version", false],
  ['git" "status', false],
  ["git status 'unbalanced", false],
  ["git commit -m 'a\ntouch x'", false],
  ["git sta\\\ntus", false],
  ["g\\it status", false],
  ["git log \\; touch x", false],
  ["git log # ; touch x", false],
  ["git log\r; touch x", false],
  ["git log\u0000; touch x", false],
  ["", false],
  ["   ", false],
];

await loadCommandParser();

Deno.test("commandCovered(): the table of commands covered and not (Bash(git:*), Bash(npm run test), Bash(ls *), Bash(docker compose up:*))", () => {
  const wrong = TABLE.filter(([command, covered]) =>
    commandCovered(rules, command) !== covered
  );
  assertEquals(wrong, []);
  assertEquals(TABLE.length >= 40, true);
});

Deno.test("parseAllowedTools(): tool names to ours, patterns, and what is ignored", () => {
  const parsed = parseAllowedTools([
    "Read",
    "BashOutput",
    "KillShell",
    "Bash(git diff:*)",
    "Bash(*)",
    "Read(./src/**)",
    "Bash(git log; rm:*)",
    "Bash(git * --x)",
    "mcp__server__tool(x",
  ]);
  assertEquals(parsed.rules, [
    { tool: "read" },
    { tool: "bash_output" },
    { tool: "kill_bash" },
    { tool: "bash", command: { words: ["git", "diff"], prefix: true } },
    { tool: "bash" },
  ]);
  assertEquals(parsed.ignored.length, 4);
});

Deno.test("callCovered(): file tools by name, case-insensitively; Bash alone covers every command", () => {
  const { rules } = parseAllowedTools(["read", "Bash"]);
  assertEquals(callCovered(rules, "read", { file_path: "/etc/passwd" }), true);
  assertEquals(callCovered(rules, "write", { file_path: "a" }), false);
  assertEquals(callCovered(rules, "bash", { command: "rm -rf $(pwd)" }), true);
  assertEquals(callCovered([], "bash", { command: "git status" }), false);
});

Deno.test("commandParts(): the parts of a command, or undefined when it cannot be read safely", () => {
  assertEquals(commandParts("a b && c | d\ne"), [["a", "b"], ["c"], ["d"], [
    "e",
  ]]);
  assertEquals(commandParts("echo $(id)"), undefined);
});
