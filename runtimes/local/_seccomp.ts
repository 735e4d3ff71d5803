/**
 * The seccomp filter of the isolated launcher, as the classic BPF program
 * `bwrap --seccomp <fd>` loads (what `seccomp_export_bpf` writes): a few
 * rules, written by hand so that nothing is compiled at run time.
 *
 * What it refuses, in every process of the sandbox (with an egress proxy,
 * the Unix socket rule only in the command's processes: the launcher loads
 * it in a nested step after the bridge to the proxy has started):
 *
 * - a mode with the setuid or setgid bit (`S_ISUID`, `S_ISGID`), in `chmod`,
 *   `fchmod`, `fchmodat`, `fchmodat2`, `open`, `openat`, `creat`, `mknod`
 *   and `mknodat` (`EPERM`): no file made inside can carry those bits out to
 *   the host (where the host user, maybe root, owns it);
 * - `openat2` and `io_uring_setup` (`ENOSYS`: callers fall back to `openat`),
 *   whose modes a filter cannot read;
 * - optionally `socket(AF_UNIX, ...)` (`EAFNOSUPPORT`): a Unix socket of a
 *   host service visible in a mounted folder (a read-only mount does not
 *   stop `connect()`) or an abstract one (reachable when the network is
 *   shared) cannot be reached; `socketpair` stays allowed (its two ends
 *   reach nothing else);
 * - every system call of another ABI (i386 and x32 on x86_64, arm32 on
 *   aarch64: `EPERM`), whose numbers differ and whose `socketcall` hides
 *   its arguments.
 *
 * On other architectures there is no filter (the report says so).
 *
 * @module
 */

/** What the filter refuses besides setuid and setgid modes. */
export interface SeccompOptions {
  /** Refuse `socket(AF_UNIX, ...)`. */
  readonly refuseUnixSockets: boolean;
}

interface Numbers {
  /** `AUDIT_ARCH_*` of the native ABI. */
  readonly arch: number;
  /** Whether x32 numbers (bit 30) must be refused (x86_64). */
  readonly x32: boolean;
  /** System calls with a mode argument: number → argument index. */
  readonly modes: readonly (readonly [number, number])[];
  readonly socket: number;
  readonly unsupported: readonly number[];
}

const X86_64: Numbers = {
  arch: 0xc000003e,
  x32: true,
  modes: [
    [2, 2], // open(path, flags, mode)
    [85, 1], // creat(path, mode)
    [90, 1], // chmod(path, mode)
    [91, 1], // fchmod(fd, mode)
    [133, 1], // mknod(path, mode, dev)
    [257, 3], // openat(dirfd, path, flags, mode)
    [259, 2], // mknodat(dirfd, path, mode, dev)
    [268, 2], // fchmodat(dirfd, path, mode)
    [452, 2], // fchmodat2(dirfd, path, mode, flags)
  ],
  socket: 41,
  unsupported: [437, 425], // openat2, io_uring_setup
};

const AARCH64: Numbers = {
  arch: 0xc00000b7,
  x32: false,
  modes: [
    [52, 1], // fchmod(fd, mode)
    [53, 2], // fchmodat(dirfd, path, mode)
    [56, 3], // openat(dirfd, path, flags, mode)
    [33, 2], // mknodat(dirfd, path, mode, dev)
    [452, 2], // fchmodat2(dirfd, path, mode, flags)
  ],
  socket: 198,
  unsupported: [437, 425],
};

// Classic BPF opcodes and seccomp return values.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;
const AF_UNIX = 1;
const S_ISUID_ISGID = 0o6000;
const X32_BIT = 0x40000000;
/** `struct seccomp_data`: `nr` at 0, `arch` at 4, `args[i]` at 16 + 8i (low half first). */
const NR = 0;
const ARCH = 4;
const argOffset = (index: number) => 16 + 8 * index;

type Instruction = readonly [code: number, jt: number, jf: number, k: number];

/**
 * The filter for this machine's architecture, or `undefined` where there is
 * none (not x86_64 nor aarch64).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { seccompFilter } from "./_seccomp.ts";
 * const filter = seccompFilter("x86_64", { refuseUnixSockets: true });
 * assert(filter !== undefined && filter.length % 8 === 0);
 * assert(seccompFilter("riscv64gc" as never, { refuseUnixSockets: true }) === undefined);
 * ```
 *
 * @param arch `Deno.build.arch`.
 * @param options What else to refuse.
 * @returns The program's bytes (8 per instruction, little-endian).
 */
export function seccompFilter(
  arch: typeof Deno.build.arch,
  options: SeccompOptions,
): Uint8Array | undefined {
  const numbers = arch === "x86_64"
    ? X86_64
    : arch === "aarch64"
    ? AARCH64
    : undefined;
  if (!numbers) return undefined;
  const program: Instruction[] = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ_K, 1, 0, numbers.arch],
    [RET_K, 0, 0, RET_ERRNO | EPERM],
  ];
  if (numbers.x32) {
    program.push(
      [LD_W_ABS, 0, 0, NR],
      [JSET_K, 0, 1, X32_BIT],
      [RET_K, 0, 0, RET_ERRNO | EPERM],
    );
  }
  // One block per rule; a rule's number appears in no other block.
  const conditional = (
    nr: number,
    arg: number,
    test: typeof JEQ_K | typeof JSET_K,
    value: number,
    errno: number,
  ) =>
    program.push(
      [LD_W_ABS, 0, 0, NR],
      [JEQ_K, 0, 4, nr],
      [LD_W_ABS, 0, 0, argOffset(arg)],
      [test, 0, 1, value],
      [RET_K, 0, 0, RET_ERRNO | errno],
      [RET_K, 0, 0, RET_ALLOW],
    );
  for (const [nr, arg] of numbers.modes) {
    conditional(nr, arg, JSET_K, S_ISUID_ISGID, EPERM);
  }
  if (options.refuseUnixSockets) {
    conditional(numbers.socket, 0, JEQ_K, AF_UNIX, EAFNOSUPPORT);
  }
  for (const nr of numbers.unsupported) {
    program.push(
      [LD_W_ABS, 0, 0, NR],
      [JEQ_K, 0, 1, nr],
      [RET_K, 0, 0, RET_ERRNO | ENOSYS],
    );
  }
  program.push([RET_K, 0, 0, RET_ALLOW]);
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  });
  return bytes;
}
