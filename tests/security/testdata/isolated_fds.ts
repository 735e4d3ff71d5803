// Started by tests/security/isolated_test.ts with descriptors 7 (a host file)
// and 8 (a TCP connection to the test's listener) open without
// close-on-exec, as a parent process may leave them. Runs an isolated
// conversation runtime and prints what its commands could do with them.
import { LocalSkillRuntime } from "../../../runtimes/local/mod.ts";

const [root, hardening] = Deno.args;
const { BubblewrapLauncher } = await import(
  "../../../runtimes/local/isolated.ts"
);
const launcher = await BubblewrapLauncher.create({
  hardening: hardening !== "off",
});
const runtime = await LocalSkillRuntime.create({
  conversationsRoot: root!,
  conversationId: "fds",
  launcher,
});
// The host side really holds them (the attack is real).
const host = await new Deno.Command("bash", {
  // (By path, so that the shared offset of descriptor 7 stays at 0.)
  args: ["-c", "head -c 100 /proc/self/fd/7; ls /proc/self/fd | tr '\\n' ' '"],
}).output();
const attack = await runtime.execute({
  command:
    "ls /proc/self/fd | tr '\\n' ' '; echo; head -c 100 <&7; echo pwned >&8; echo done",
});
const control = await runtime.execute({ command: "echo control" });
console.log(JSON.stringify({
  host: new TextDecoder().decode(host.stdout),
  attack: attack.stdout + attack.stderr,
  control: control.stdout,
}));
await runtime.close();
