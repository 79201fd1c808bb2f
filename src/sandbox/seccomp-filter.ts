/**
 * The seccomp policy of every sandbox, in the two forms that load it: the
 * classic BPF program bubblewrap's `--seccomp FD` loads right before it starts a
 * process sandbox's runner, and the JSON profile Docker gives a container.
 *
 * It is a deny list on top of the namespaces: a runner may create threads but no
 * process (fork, vfork, and clone without CLONE_THREAD fail with EPERM; clone3
 * answers ENOSYS, so the C library falls back to clone, whose flags a filter can
 * read), and the calls that reach past a namespace or into the kernel's riskier
 * corners (ptrace, mount, namespaces, BPF, kernel keyrings and modules,
 * io_uring...) fail with EPERM. So do links, symbolic or hard: a link in a
 * sandbox's tree is only ever a way to point the core's walk of it elsewhere
 * (the python runner has no permission model to refuse one). So do System V
 * IPC and POSIX message queues: their objects live in the sandbox's IPC
 * namespace, outside every file the core walks, and would keep what one session
 * put there for the next. Node, libuv, V8 and CPython use none of them. A foreign
 * ABI (x32, or 32-bit calls on a 64-bit kernel) kills the process: its syscall
 * numbers would slip past this list.
 */
import { UhlpError } from '../shared/errors.js';

/** seccomp_data offsets (linux/seccomp.h). */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
/** Low 32 bits of args[0] on a little-endian machine. */
const ARG0_LOW_OFFSET = 16;

/** BPF opcodes (linux/bpf_common.h). */
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

const CLONE_THREAD = 0x00010000;
/** Syscall numbers at or above this are the x32 ABI on x86_64. */
const X32_SYSCALL_BIT = 0x40000000;

interface ArchTable {
  /** AUDIT_ARCH_* of the architecture. */
  readonly audit: number;
  /** libseccomp's name of it, for Docker. */
  readonly scmp: string;
  readonly clone: number;
  readonly clone3: number;
  /** Syscalls answered EPERM. */
  readonly denied: Readonly<Record<string, number>>;
  readonly hasX32: boolean;
}

/** Syscalls refused everywhere, by name; each table gives their numbers where the architecture has them. */
const ARCHES: Readonly<Record<string, ArchTable>> = {
  x64: {
    audit: 0xc000003e,
    scmp: 'SCMP_ARCH_X86_64',
    clone: 56,
    clone3: 435,
    hasX32: true,
    denied: {
      fork: 57, vfork: 58, execveat: 322, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311,
      mount: 165, umount2: 166, pivot_root: 155, chroot: 161, unshare: 272, setns: 308,
      open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
      bpf: 321, perf_event_open: 298, userfaultfd: 323, keyctl: 250, add_key: 248, request_key: 249,
      kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176,
      io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      name_to_handle_at: 303, open_by_handle_at: 304, acct: 163, swapon: 167, swapoff: 168, reboot: 169, syslog: 103,
      personality: 135, quotactl: 179, lookup_dcookie: 212,
      link: 86, symlink: 88, linkat: 265, symlinkat: 266,
      clock_settime: 227, clock_adjtime: 305, settimeofday: 164, ioperm: 173, iopl: 172, kcmp: 312,
      mbind: 237, move_pages: 279, set_mempolicy: 238, get_mempolicy: 239, uselib: 134, ustat: 136, sysfs: 139, _sysctl: 156,
      shmget: 29, shmat: 30, shmctl: 31, shmdt: 67, semget: 64, semop: 65, semctl: 66, semtimedop: 220,
      msgget: 68, msgsnd: 69, msgrcv: 70, msgctl: 71,
      mq_open: 240, mq_unlink: 241, mq_timedsend: 242, mq_timedreceive: 243, mq_notify: 244, mq_getsetattr: 245,
    },
  },
  arm64: {
    audit: 0xc00000b7,
    scmp: 'SCMP_ARCH_AARCH64',
    clone: 220,
    clone3: 435,
    hasX32: false,
    denied: {
      execveat: 281, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271,
      mount: 40, umount2: 39, pivot_root: 41, chroot: 51, unshare: 97, setns: 268,
      open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
      bpf: 280, perf_event_open: 241, userfaultfd: 282, keyctl: 219, add_key: 217, request_key: 218,
      kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106,
      io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      name_to_handle_at: 264, open_by_handle_at: 265, acct: 89, swapon: 224, swapoff: 225, reboot: 142, syslog: 116,
      personality: 92, quotactl: 60, lookup_dcookie: 18,
      linkat: 37, symlinkat: 36,
      clock_settime: 112, clock_adjtime: 266, settimeofday: 170, kcmp: 272, mbind: 235, move_pages: 239, set_mempolicy: 237, get_mempolicy: 236,
      mq_open: 180, mq_unlink: 181, mq_timedsend: 182, mq_timedreceive: 183, mq_notify: 184, mq_getsetattr: 185,
      msgget: 186, msgctl: 187, msgrcv: 188, msgsnd: 189, semget: 190, semctl: 191, semtimedop: 192, semop: 193,
      shmget: 194, shmctl: 195, shmat: 196, shmdt: 197,
    },
  },
};

/** The architectures the filter is written for (`process.arch` names). */
export const SECCOMP_ARCHES: readonly string[] = Object.keys(ARCHES);

/** One BPF instruction; a jump names its targets by label, resolved when the program is assembled. */
interface Instruction {
  readonly code: number;
  readonly k: number;
  readonly label?: string;
  readonly jt?: string;
  readonly jf?: string;
}

/**
 * The filter for `arch` as bytes of `struct sock_filter[]`, ready for
 * bubblewrap. Throws for an architecture it has no table for.
 */
export function seccompFilter(arch: string = process.arch): Buffer {
  const table = archTable(arch);
  const program: Instruction[] = [
    { code: LD_W_ABS, k: ARCH_OFFSET },
    { code: JEQ_K, k: table.audit, jf: 'kill' },
    { code: LD_W_ABS, k: NR_OFFSET },
    ...(table.hasX32 ? [{ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'kill' }] : []),
    { code: JEQ_K, k: table.clone, jt: 'clone' },
    { code: JEQ_K, k: table.clone3, jt: 'nosys' },
    ...Object.values(table.denied).map((nr): Instruction => ({ code: JEQ_K, k: nr, jt: 'deny' })),
    { code: RET_K, k: RET_ALLOW },
    // clone: a thread may be made, a process may not.
    { label: 'clone', code: LD_W_ABS, k: ARG0_LOW_OFFSET },
    { code: JSET_K, k: CLONE_THREAD, jt: 'allow', jf: 'deny' },
    { label: 'allow', code: RET_K, k: RET_ALLOW },
    { label: 'deny', code: RET_K, k: RET_ERRNO | EPERM },
    { label: 'nosys', code: RET_K, k: RET_ERRNO | ENOSYS },
    { label: 'kill', code: RET_K, k: RET_KILL_PROCESS },
  ];
  return assemble(program);
}

function archTable(arch: string): ArchTable {
  const table = ARCHES[arch];
  if (table === undefined) {
    throw new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `no seccomp policy for the ${arch} architecture; sandboxes support ${SECCOMP_ARCHES.join(', ')}`);
  }
  return table;
}

/**
 * The same policy as a Docker seccomp profile (SecurityOpt `seccomp=<json>`).
 * Everything else is allowed, as in the BPF program; a call of another ABI
 * is refused, since only this architecture is listed.
 */
export function dockerSeccompProfile(arch: string = process.arch): string {
  const table = archTable(arch);
  return JSON.stringify({
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: [table.scmp],
    syscalls: [
      { names: Object.keys(table.denied).sort(), action: 'SCMP_ACT_ERRNO', errnoRet: EPERM },
      // Flags without CLONE_THREAD: a process, not a thread.
      { names: ['clone'], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM, args: [{ index: 0, value: CLONE_THREAD, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }] },
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
    ],
  });
}

/** Resolves labels to forward jump distances and writes the program as bytes. */
function assemble(program: readonly Instruction[]): Buffer {
  const labels = new Map<string, number>();
  program.forEach((instruction, index) => instruction.label !== undefined && labels.set(instruction.label, index));
  const distance = (from: number, label: string | undefined): number => {
    if (label === undefined) return 0;
    const target = labels.get(label);
    const jump = target === undefined ? -1 : target - from - 1;
    // Classic BPF jumps only forward, at most 255 instructions.
    if (jump < 0 || jump > 255) throw new Error(`seccomp filter: cannot jump from ${from} to "${label}"`);
    return jump;
  };
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach((instruction, index) => {
    bytes.writeUInt16LE(instruction.code, index * 8);
    bytes.writeUInt8(distance(index, instruction.jt), index * 8 + 2);
    bytes.writeUInt8(distance(index, instruction.jf), index * 8 + 3);
    bytes.writeUInt32LE(instruction.k >>> 0, index * 8 + 4);
  });
  return bytes;
}
