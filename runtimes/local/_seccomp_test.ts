import { assertEquals } from "../../tests/helpers/assert.ts";
import { seccompFilter } from "./_seccomp.ts";

const ALLOW = 0x7fff0000;
const errno = (n: number) => 0x00050000 | n;

/** Runs a classic BPF program (the opcodes the filter uses) on a seccomp_data. */
function run(
  program: Uint8Array,
  data: { nr: number; arch: number; args?: number[] },
): number {
  const view = new DataView(program.buffer);
  const word = (offset: number): number => {
    if (offset === 0) return data.nr >>> 0;
    if (offset === 4) return data.arch >>> 0;
    const index = (offset - 16) / 8;
    return (data.args?.[index] ?? 0) >>> 0;
  };
  let a = 0;
  for (let pc = 0; pc * 8 < program.length;) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    if (code === 0x20) a = word(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) {
      pc += 1 + (a === k ? jt : jf);
      continue;
    } else if (code === 0x45) {
      pc += 1 + ((a & k) !== 0 ? jt : jf);
      continue;
    } else throw new Error(`unknown opcode ${code}`);
    pc++;
  }
  throw new Error("the program fell off its end");
}

Deno.test("seccomp: x86_64: setuid/setgid modes, AF_UNIX, openat2 and other ABIs refused; the rest allowed", () => {
  const p = seccompFilter("x86_64", { refuseUnixSockets: true })!;
  const arch = 0xc000003e;
  const cases: [string, { nr: number; args?: number[] }, number][] = [
    ["chmod 4755", { nr: 90, args: [0, 0o4755] }, errno(1)],
    ["chmod 2755", { nr: 90, args: [0, 0o2755] }, errno(1)],
    ["chmod 755", { nr: 90, args: [0, 0o755] }, ALLOW],
    ["fchmod 6777", { nr: 91, args: [3, 0o6777] }, errno(1)],
    ["fchmodat 4755", { nr: 268, args: [0, 0, 0o4755] }, errno(1)],
    ["fchmodat 1777 (sticky)", { nr: 268, args: [0, 0, 0o1777] }, ALLOW],
    ["fchmodat2 2700", { nr: 452, args: [0, 0, 0o2700] }, errno(1)],
    ["open O_CREAT 4755", { nr: 2, args: [0, 0o100, 0o4755] }, errno(1)],
    ["open 644", { nr: 2, args: [0, 0o100, 0o644] }, ALLOW],
    ["openat 4755", { nr: 257, args: [0, 0, 0o100, 0o4755] }, errno(1)],
    ["openat 600", { nr: 257, args: [0, 0, 0o100, 0o600] }, ALLOW],
    ["creat 2755", { nr: 85, args: [0, 0o2755] }, errno(1)],
    ["mknod reg 4755", { nr: 133, args: [0, 0o104755] }, errno(1)],
    ["mknodat fifo 644", { nr: 259, args: [0, 0, 0o10644] }, ALLOW],
    ["socket AF_UNIX", { nr: 41, args: [1, 1] }, errno(97)],
    ["socket AF_INET", { nr: 41, args: [2, 1] }, ALLOW],
    ["socketpair AF_UNIX", { nr: 53, args: [1, 1] }, ALLOW],
    ["openat2", { nr: 437 }, errno(38)],
    ["io_uring_setup", { nr: 425 }, errno(38)],
    ["x32 chmod", { nr: 0x40000000 + 90, args: [0, 0o755] }, errno(1)],
    ["read", { nr: 0 }, ALLOW],
  ];
  for (const [name, data, expected] of cases) {
    assertEquals(run(p, { ...data, arch }), expected, name);
  }
  // i386 on x86_64: refused whatever the call.
  assertEquals(run(p, { nr: 3, arch: 0x40000003 }), errno(1));
  const open = seccompFilter("x86_64", { refuseUnixSockets: false })!;
  assertEquals(run(open, { nr: 41, arch, args: [1, 1] }), ALLOW);
  assertEquals(run(open, { nr: 90, arch, args: [0, 0o4755] }), errno(1));
});

Deno.test("seccomp: aarch64 numbers", () => {
  const p = seccompFilter("aarch64", { refuseUnixSockets: true })!;
  const arch = 0xc00000b7;
  assertEquals(run(p, { nr: 53, arch, args: [0, 0, 0o4755] }), errno(1));
  assertEquals(run(p, { nr: 56, arch, args: [0, 0, 0o100, 0o2755] }), errno(1));
  assertEquals(run(p, { nr: 198, arch, args: [1] }), errno(97));
  assertEquals(run(p, { nr: 198, arch, args: [10] }), ALLOW);
  // No x32 rule: bit 30 is just a number there.
  assertEquals(run(p, { nr: 63, arch }), ALLOW);
  assertEquals(run(p, { nr: 63, arch: 0x40000028 }), errno(1));
});
