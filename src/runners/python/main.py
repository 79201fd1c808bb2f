"""Entry point of the python runner, the program inside every `runner: python`
sandbox (a process sandbox, a container, a pod). It takes the command line of
the Node runners (src/runners/kit/runner-process.ts), so every driver starts it
alike, plus the cap Node takes as a flag of its own:

    python3 -B -E -S -X utf8 main.py --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
        --definitions DIR [--definitions-via-mcp] [--work-dir DIR] [--concurrency N]
        [--niceness N] [--memory-mb N] [--mcp-socket PATH]
        [--exit-on-stdin-close] [--drain-on-sigterm]

It prints one JSON line {"event":"ready",...} to stdout once it accepts
requests. `--memory-mb` caps the process's data segment (RLIMIT_DATA: every
heap and anonymous mapping) so that a script that fills its memory ends the
runner as a heap limit (runner_exit.py) before the kernel's OOM killer would.
A bad command line exits 64 with the reason on stderr.
"""

import argparse
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

# Stack of each thread (one per connection): its whole size counts against --memory-mb, so not glibc's 8 MiB.
THREAD_STACK_BYTES = 2 * 1024 * 1024
USAGE_EXIT_STATUS = 64


class _Usage(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"python-runner: {message}\n")
        sys.exit(USAGE_EXIT_STATUS)


def _positive(text, name, low, high):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or value > high:
        sys.stderr.write(f'python-runner: --{name} must be an integer {low}-{high}, got "{text}"\n')
        sys.exit(USAGE_EXIT_STATUS)
    return value


def _parse(argv):
    parser = _Usage(prog="python-runner", add_help=False)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--definitions", required=True)
    parser.add_argument("--definitions-via-mcp", action="store_true")
    parser.add_argument("--work-dir")
    parser.add_argument("--concurrency", default="1")
    parser.add_argument("--niceness", default="0")
    parser.add_argument("--memory-mb")
    parser.add_argument("--mcp-socket")
    parser.add_argument("--exit-on-stdin-close", action="store_true")
    parser.add_argument("--drain-on-sigterm", action="store_true")
    args = parser.parse_args(argv)
    args.concurrency = _positive(args.concurrency, "concurrency", 1, 1000)
    args.niceness = _positive(args.niceness, "niceness", 0, 19)
    args.memory_mb = None if args.memory_mb is None else _positive(args.memory_mb, "memory-mb", 8, 1024 * 1024)
    if args.listen.startswith("unix:"):
        args.target = ("unix", args.listen[len("unix:") :])
    else:
        host, _, port = args.listen[len("tcp:") :].rpartition(":") if args.listen.startswith("tcp:") else ("", "", "")
        if not host or not port.isdigit():
            parser.error(f'--listen must be unix:<path> or tcp:<host>:<port>, got "{args.listen}"')
        args.target = ("tcp", (host, int(port)))
    return args


def _bind(target, handler):
    kind, address = target
    if kind == "unix":
        try:
            os.unlink(address)
        except FileNotFoundError:
            pass
        return ThreadingUnixHTTPServer(address, handler)
    return ThreadingTCPHTTPServer(address, handler)


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


def main(argv):
    args = _parse(argv)
    if args.niceness > 0:
        os.nice(args.niceness)
    if args.memory_mb is not None:
        limit = args.memory_mb * 1024 * 1024
        # Soft and hard alike: a script cannot raise it back.
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        runner_exit.set_memory_limit(args.memory_mb)
    threading.stack_size(THREAD_STACK_BYTES)
    threading.excepthook = _on_thread_exception

    executor = PythonExecutor(args.definitions, args.work_dir, args.definitions_via_mcp)
    runner = RunnerServer(executor, args.concurrency, args.mcp_socket)
    try:
        server = _bind(args.target, make_handler(runner))
    except OSError as error:
        sys.stderr.write(f"python-runner: cannot listen on {args.listen}: {error.strerror}\n")
        sys.exit(USAGE_EXIT_STATUS)

    def drain():
        server.shutdown()
        runner.wait_idle()
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
