"""The python runner's HTTP server: POST /execute per the contract, GET /healthz
for readiness probes, as the Node runners' server (src/runners/kit/runner-server.ts)
answers them:

- the X-Request-ID header is required (once) and must equal the body's
  `requestId`; a body that is not JSON or breaks the contract is 400
  UHLP_EXECUTE_BAD_REQUEST; every answer echoes the request id;
- the pool leases a sandbox to at most `concurrency` executions at once, one
  more is refused with 429 UHLP_RUNNER_BUSY; a draining runner (a pod being
  deleted) finishes what it runs and refuses more with 503 UHLP_SHUTTING_DOWN;
- an execution's answer is 200 with resultType, data and metrics
  (execution_time_ms, script_load_ms on a script's first load, mcp_calls,
  and, for a core that traces the execution (it names the trace in
  X-Trace-ID), timings: the script's load and run and each tool call, which
  the core makes child spans of the execution's);
- a request that asks for it (`reportWrites`: pods) has the work tree walked
  after the execution (work_tree_walk.py) and its realized writes in `writes`,
  the tree emptied for the next turn.

It runs on the standard library's http.server (HTTP/1.1, keep-alive, one
thread per connection: the core keeps one connection per execution in flight).
"""

import http.server
import json
import re
import socket
import socketserver
import threading
import time

from execute_contract import EXECUTE_PATH, REQUEST_ID_HEADER, TRACE_ID_HEADER, validate_execute_request
import runner_exit
from script_result import result_from_exception
from uhlp_tools import ExecutionTools

# Largest /execute body the runner reads; the core's ingress limit is far below it.
MAX_EXECUTE_BODY_BYTES = 64 * 1024 * 1024
# An idle keep-alive connection is closed after this long (the core does not reuse one idle for half of it).
KEEP_ALIVE_SECONDS = 60
# A large answer is written in slices of this size, each encoded on its own.
WRITE_SLICE = 1024 * 1024
# A session id as the core makes them (letters, digits, "-"): one path segment, never "." or "..".
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}\Z")


class RunnerServer:
    """What the HTTP handler asks: the state of the executions and how to run one."""

    def __init__(self, executor, concurrency=1, mcp_socket=None, work_tree=None):
        self._executor = executor
        # Walked after an execution whose request asks for it (work_tree_walk.WorkTree); None: no report, and the core fails the turn.
        self._work_tree = work_tree
        self._concurrency = concurrency
        self._mcp_socket = mcp_socket
        self._lock = threading.Lock()
        self._in_flight = {}
        self._idle = threading.Condition(self._lock)
        self._draining = False
        self.warming = False

    def health(self):
        if self.warming:
            return 503, {"status": "starting"}
        with self._lock:
            running = len(self._in_flight)
        return 200, {"status": "ok", "busy": running >= self._concurrency, "running": running}

    def drain(self):
        """Takes no new execution (a request on a kept connection gets 503) and returns once none runs."""
        with self._idle:
            self._draining = True
            while self._in_flight:
                self._idle.wait()

    def execute(self, raw, request_id, answer, timed=False):
        """Runs one POST /execute and answers it with `answer(status, body parts)`; an execution counts as running until its answer is written.

        `timed`: the core traces the execution, and the answer carries what the runner timed (`metrics.timings`).
        """
        try:
            body = json.loads(raw)
        except ValueError:
            return answer(400, _error_body("UHLP_EXECUTE_BAD_REQUEST", "the body is not JSON"))
        violation = validate_execute_request(body)
        if violation is not None:
            return answer(400, _error_body("UHLP_EXECUTE_BAD_REQUEST", f"{violation.path}: {violation.message}"))
        if body["requestId"] != request_id:
            return answer(400, _error_body("UHLP_EXECUTE_BAD_REQUEST", "requestId does not match the X-Request-ID header"))
        token = object()
        with self._lock:
            if self._draining:
                refusal = (503, _error_body("UHLP_SHUTTING_DOWN", "the runner is stopping"))
            elif len(self._in_flight) >= self._concurrency:
                refusal = (429, _error_body("UHLP_RUNNER_BUSY", f"busy with {', '.join(self._in_flight.values())}"))
            else:
                refusal = None
                self._in_flight[token] = request_id
        if refusal is not None:
            return answer(*refusal)
        started = time.perf_counter()
        context = body["context"]
        tools = ExecutionTools(context["mcp_endpoint"], context.get("mcp_token"), self._mcp_socket, started_at=started)
        turn = self._turn_tree(body)
        try:
            try:
                result = self._executor(body, tools)
            except MemoryError:
                runner_exit.out_of_memory()
            except SystemExit as error:
                runner_exit.script_exit(error)
            except BaseException as error:  # noqa: BLE001 - whatever a script raises is its error answer
                # Where it was raised: the frames of the script's app directory, when the executor can name it.
                app_dir_of = getattr(self._executor, "app_dir", None)
                result = result_from_exception(error, app_dir_of(body) if app_dir_of is not None else None)
            metrics = dict(result.metrics or {})
            # What the executor timed (the script's load and run), with every tool call: only for a traced execution, so an untraced turn's answer stays small.
            timings = metrics.pop("timings", None)
            if timed:
                timings = dict(timings) if isinstance(timings, dict) else {}
                tool_calls = tools.timings()
                if tool_calls:
                    timings["tool_calls"] = tool_calls
                if timings:
                    metrics["timings"] = timings
            metrics["execution_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
            calls = tools.metrics()
            if calls:
                metrics["mcp_calls"] = calls
            writes = _walk_and_empty(turn) if turn is not None else None
            # The id, the metrics (tool names a script chose among them) and the writes as ASCII JSON: nothing in them can fail the answer.
            answer(200, [
                '{"requestId":' + json.dumps(request_id) + ',"resultType":"' + result.result_type + '","data":',
                result.data_json,
                ',"metrics":' + json.dumps(metrics, separators=(",", ":"))
                + ("" if writes is None else ',"writes":' + json.dumps(writes, separators=(",", ":")))
                + "}",
            ])
        finally:
            tools.close()
            with self._idle:
                del self._in_flight[token]
                self._idle.notify_all()


    def _turn_tree(self, body):
        """The execution's hold on the work tree when its request asks for a report, its directories made; else None."""
        session_id = body["context"].get("sessionId")
        if body.get("reportWrites") is not True or self._work_tree is None or not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
            return None
        try:
            return self._work_tree.begin(session_id)
        except OSError:
            # A tree the runner cannot write: no report, and the core fails the turn.
            return None


def _walk_and_empty(turn):
    """What the execution left in the tree, then the tree emptied; None when the walk failed (the core then fails the turn and deletes the pod)."""
    try:
        realized = turn.walk()
        turn.discard()
    except Exception:  # noqa: BLE001 - no report is the answer to a walk that failed
        return None
    return {"realized": realized, "emptied": True}


def _error_body(code, details):
    return [json.dumps({"error": code, "details": details}, ensure_ascii=False)]


def make_handler(runner):
    """The http.server handler class bound to `runner`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uhlp-python-runner"
        sys_version = ""
        timeout = KEEP_ALIVE_SECONDS

        def setup(self):
            super().setup()
            if self.connection.family in (socket.AF_INET, socket.AF_INET6):
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def handle(self):
            try:
                super().handle()
            except MemoryError:
                runner_exit.out_of_memory()

        def do_GET(self):
            if self.path == "/healthz":
                status, body = runner.health()
                self._answer(status, [json.dumps(body)])
            else:
                self._not_here()

        def do_POST(self):
            if self.path != EXECUTE_PATH:
                self._not_here()
                return
            ids = self.headers.get_all(REQUEST_ID_HEADER) or []
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                self._refuse(411, "UHLP_EXECUTE_BAD_REQUEST", "send the body with a Content-Length")
                return
            try:
                length = int(self.headers.get("content-length") or "0")
            except ValueError:
                self._refuse(400, "UHLP_EXECUTE_BAD_REQUEST", "Content-Length is not a number")
                return
            if length < 0 or length > MAX_EXECUTE_BODY_BYTES:
                self._refuse(413, "UHLP_EXECUTE_BAD_REQUEST", f"the body is over {MAX_EXECUTE_BODY_BYTES} bytes")
                return
            raw = self.rfile.read(length)
            if len(ids) != 1:
                self._answer(400, _error_body("UHLP_EXECUTE_BAD_REQUEST", "the X-Request-ID header is required (once)"))
                return
            runner.execute(raw, ids[0], lambda status, parts: self._answer(status, parts, ids[0]), self.headers.get(TRACE_ID_HEADER) is not None)

        def do_PUT(self):
            self._not_here()

        do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_PUT

        def _not_here(self):
            if self.path == EXECUTE_PATH:
                self._answer(405, [json.dumps({"error": "method_not_allowed", "details": "use POST /execute"})])
            else:
                self._answer(404, [json.dumps({"error": "not_found", "details": f"{self.command} {self.path}"})])

        def _refuse(self, status, code, details):
            self.close_connection = True
            self._answer(status, _error_body(code, details))

        def send_error(self, code, message=None, explain=None):
            # What http.server refuses itself (a bad request line, a header block too large): JSON, as every answer.
            self.close_connection = True
            self._answer(code, _error_body("UHLP_EXECUTE_BAD_REQUEST", message or explain or "bad request"))

        def log_message(self, format, *args):
            # Requests are the core's to log; a runner's stderr is for what goes wrong.
            pass

        def _answer(self, status, parts, request_id=None):
            """Writes the head and the body: small answers in one write, large ones in slices."""
            # A part is ASCII text, or bytes already (a result's UTF-8, script_result.py): nothing here can fail to encode.
            chunks = [part if isinstance(part, bytes) or part.isascii() else part.encode("utf-8", "backslashreplace") for part in parts]
            length = sum(len(chunk) for chunk in chunks)
            head = f"HTTP/1.1 {status} {_reason(status)}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n"
            if request_id is not None:
                head += f"x-request-id: {request_id}\r\n"
            if self.close_connection:
                head += "connection: close\r\n"
            head += "\r\n"
            try:
                if length <= WRITE_SLICE:
                    self.wfile.write(head.encode("latin-1") + b"".join(chunk if isinstance(chunk, bytes) else chunk.encode("ascii") for chunk in chunks))
                    return
                self.wfile.write(head.encode("latin-1"))
                for chunk in chunks:
                    for offset in range(0, len(chunk), WRITE_SLICE):
                        piece = chunk[offset : offset + WRITE_SLICE]
                        self.wfile.write(piece if isinstance(piece, bytes) else piece.encode("ascii"))
            except (BrokenPipeError, ConnectionResetError):
                # The core stopped reading (an answer over its limit): this connection is done.
                self.close_connection = True

    return Handler


def _reason(status):
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Status"


class ThreadingUnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False


# socketserver's, not http.server's HTTPServer: that one looks its own name up in DNS when it binds.
class ThreadingTCPHTTPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
