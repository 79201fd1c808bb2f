"""Entry point of the python runner, the program inside every `runner: python`
sandbox (a process sandbox, a container, a pod). It takes the command line of
the Node runners (src/runners/kit/runner-process.ts), so every driver starts it
alike, plus the cap Node takes as a flag of its own:

    python3 -B -E -S -X utf8 main.py --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
        --definitions DIR [--definitions-via-mcp] [--work-dir DIR] [--concurrency N]
        [--niceness N] [--memory-mb N] [--mcp-socket PATH]
        [--exit-on-stdin-close] [--drain-on-sigterm] [--seccomp-self FILE]

It prints one JSON line {"event":"ready",...} to stdout once it accepts
requests. `--memory-mb` caps the process's data segment (RLIMIT_DATA: every
heap and private mapping) and its address space (RLIMIT_AS: what it had mapped
at start plus the cap, which bounds shared mappings too) so that a script that
fills its memory ends the runner as a heap limit (runner_exit.py) before the
kernel's OOM killer would, and one that maps more (`mmap.mmap(-1, n)`) is refused.
`--seccomp-self` loads the sandboxes' seccomp policy from FILE onto the runner
itself before anything else (seccomp_self.py: pods and containers, whose runtime
does not load it for us); a runner that cannot load it exits 70.
A bad command line exits 64 with the reason on stderr.
"""

import json
import os
import resource
import signal
import socket
import sys
import threading

import runner_exit
from execute_contract import validate_execute_request
from python_executor import PythonExecutor
from runner_server import RunnerServer, ThreadingTCPHTTPServer, ThreadingUnixHTTPServer, make_handler
from uhlp_tools import ExecutionTools
from work_tree_walk import RunnerFiles, WorkTree

# The runner's socket directory in a process sandbox and a container: writable, and walked with the tree.
SOCKET_DIR = "/run/uhlp"

# Stack of each thread (one per connection): its whole size counts against --memory-mb, so not glibc's 8 MiB.
THREAD_STACK_BYTES = 2 * 1024 * 1024
USAGE_EXIT_STATUS = 64


# Options that take a value, and flags; anything else is a usage error. (Not argparse: it alone is a tenth of the start.)
_VALUES = ("listen", "definitions", "work-dir", "concurrency", "niceness", "memory-mb", "mcp-socket", "seccomp-self")
_FLAGS = ("definitions-via-mcp", "exit-on-stdin-close", "drain-on-sigterm")
USAGE = "usage: python-runner --listen unix:<path>|tcp:<host>:<port> --definitions <dir> [--definitions-via-mcp] [--work-dir <dir>] [--concurrency N] [--niceness N] [--memory-mb N] [--mcp-socket <path>] [--exit-on-stdin-close] [--drain-on-sigterm] [--seccomp-self <file>]"


def _usage(message):
    sys.stderr.write(f"python-runner: {message}\n{USAGE}\n")
    sys.exit(USAGE_EXIT_STATUS)


def _integer(options, name, default, low, high):
    text = options.get(name, default)
    if text is None:
        return None
    if not text.isdigit() or not low <= int(text) <= high:
        _usage(f'--{name} must be an integer {low}-{high}, got "{text}"')
    return int(text)


class _Args:
    def __init__(self, options):
        self.listen = options.get("listen")
        self.definitions = options.get("definitions")
        if not self.listen or not self.definitions:
            _usage("--listen and --definitions are required")
        self.work_dir = options.get("work-dir")
        self.mcp_socket = options.get("mcp-socket")
        self.seccomp_self = options.get("seccomp-self")
        self.definitions_via_mcp = "definitions-via-mcp" in options
        self.exit_on_stdin_close = "exit-on-stdin-close" in options
        self.drain_on_sigterm = "drain-on-sigterm" in options
        self.concurrency = _integer(options, "concurrency", "1", 1, 1000)
        self.niceness = _integer(options, "niceness", "0", 0, 19)
        self.memory_mb = _integer(options, "memory-mb", None, 8, 1024 * 1024)
        if self.listen.startswith("unix:") and len(self.listen) > len("unix:"):
            self.target = ("unix", self.listen[len("unix:") :])
            return
        host, _, port = self.listen[len("tcp:") :].rpartition(":") if self.listen.startswith("tcp:") else ("", "", "")
        if not host or not port.isdigit():
            _usage(f'--listen must be unix:<path> or tcp:<host>:<port>, got "{self.listen}"')
        self.target = ("tcp", (host, int(port)))


def _parse(argv):
    options = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name = arg[2:] if arg.startswith("--") else None
        if name in _FLAGS:
            options[name] = True
        elif name in _VALUES and rest:
            options[name] = rest.pop(0)
        else:
            _usage(f'unknown or incomplete option "{arg}"')
    return _Args(options)


def _bind(target, handler):
    kind, address = target
    if kind == "unix":
        try:
            os.unlink(address)
        except FileNotFoundError:
            pass
        return ThreadingUnixHTTPServer(address, handler)
    return ThreadingTCPHTTPServer(address, handler)


def _work_tree(args):
    """The work tree as the runner walks it when asked, its socket directory with it. A definitions cache in it
    (a pod's /work/.definitions) is the runner's: the scripts it keeps there are recorded, anything else is a turn's."""
    if not args.work_dir:
        return None
    root = os.path.abspath(args.work_dir)
    cache = os.path.abspath(args.definitions)
    runner_files = RunnerFiles(os.path.basename(cache)) if os.path.dirname(cache) == root else None
    return WorkTree(root, runner_files, [(SOCKET_DIR, ["runner.sock"])])


def _warm_up(executor):
    """A pod's runner is claimed warm: its first request must cost what the next ones do."""
    validate_execute_request({})
    ExecutionTools("http://core/mcp", None).metrics()
    try:
        executor.warm_up()
    except Exception as error:  # noqa: BLE001 - best effort: a runner that cannot warm up still serves
        sys.stderr.write(f"python-runner: warm-up failed: {error}\n")


def _on_thread_exception(hook):
    # A thread a script started may die of anything; only a failed allocation ends the runner.
    if issubclass(hook.exc_type, MemoryError):
        runner_exit.out_of_memory()
    sys.stderr.write(f"python-runner: a thread ended with {hook.exc_type.__name__}: {hook.exc_value}\n")


# mallopt's M_ARENA_MAX (malloc.h).
_M_ARENA_MAX = -8


def _cap_memory(memory_mb):
    """Caps the runner's memory, whatever a script allocates it with; soft and hard alike, so a script cannot raise it back."""
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    runner_exit.set_memory_limit(memory_mb)
    # RLIMIT_DATA counts private memory only: a shared anonymous mapping (mmap.mmap(-1, n) is MAP_SHARED) or
    # memory a script maps from a file is outside it, and a process sandbox has no cgroup to count it. The
    # address space counts everything; it is capped at what CPython has mapped by now plus the same cap.
    # glibc reserves 64 MiB of address space per thread arena, memory nobody uses that the cap would count:
    # one arena is all a runner needs, its threads taking the GIL in turn anyway.
    import ctypes

    ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)
    mapped = _mapped_bytes()
    if mapped is None:
        sys.stderr.write("python-runner: /proc/self/statm is unreadable: shared memory is not capped\n")
        return
    space = mapped + limit
    resource.setrlimit(resource.RLIMIT_AS, (space, space))


def _mapped_bytes():
    """The process's address space now (/proc/self/statm), or None where /proc does not tell."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return None


def main(argv):
    args = _parse(argv)
    if args.seccomp_self is not None:
        # First, while the runner is one thread and has read no script; imported here: ctypes is a cost only this case pays.
        import seccomp_self

        seccomp_self.install(args.seccomp_self)
    if args.niceness > 0:
        os.nice(args.niceness)
    if args.memory_mb is not None:
        _cap_memory(args.memory_mb)
    threading.stack_size(THREAD_STACK_BYTES)
    threading.excepthook = _on_thread_exception

    work_tree = _work_tree(args)
    kept = work_tree.runner_files.record if work_tree is not None and work_tree.runner_files is not None else None
    executor = PythonExecutor(args.definitions, args.work_dir, args.definitions_via_mcp, kept)
    runner = RunnerServer(executor, args.concurrency, args.mcp_socket, work_tree)
    try:
        server = _bind(args.target, make_handler(runner))
    except OSError as error:
        sys.stderr.write(f"python-runner: cannot listen on {args.listen}: {error.strerror}\n")
        sys.exit(USAGE_EXIT_STATUS)

    def drain():
        server.shutdown()
        runner.drain()
        os._exit(0)

    def on_term(_signal, _frame):
        # A pod being deleted finishes what it runs; anything else stops at once.
        if args.drain_on_sigterm:
            threading.Thread(target=drain, daemon=True).start()
        else:
            os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, lambda _signal, _frame: os._exit(0))
    if args.exit_on_stdin_close:
        # The parent holds our stdin open; when it dies, the pipe closes and we follow.
        def watch_stdin():
            try:
                while sys.stdin.buffer.read(4096):
                    pass
            finally:
                os._exit(0)

        threading.Thread(target=watch_stdin, daemon=True).start()

    if args.target[0] == "tcp":
        runner.warming = True
        _warm_up(executor)
        runner.warming = False
        host, port = server.server_address[:2]
        address = {"address": host, "family": "IPv6" if server.address_family == socket.AF_INET6 else "IPv4", "port": port}
    else:
        address = args.target[1]
    sys.stdout.write(json.dumps({"event": "ready", "pid": os.getpid(), "address": address}) + "\n")
    sys.stdout.flush()
    server.serve_forever(poll_interval=0.2)
    # Only a drain stops serving: it exits the process once the executions running have answered.
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
