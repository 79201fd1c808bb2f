"""The core's MCP tools for Python component scripts: `ctx.tools`.

    value = ctx.tools.call("core.kv.get", {"key": "ctr:visits"})
    ctx.tools.core.kv.set(key="ctr:visits", value=1)          # the same call, by attribute
    try:
        ctx.tools.call("core.linux.executeCommand", {"argv": ["id"]})
    except ToolCallError as error:                            # from uhlp_tools import ToolCallError
        error.code, error.status, error.details               # the core's refusal

A call answers the tool's structured content (a dict). A refusal or failure is
raised as ToolCallError with the core's code, status and details, so a refusal
a script does not catch becomes its error answer with the right status, as in
JavaScript (src/runners/kit/tools-client.ts, whose rules this module follows).
Which tools an app may call, and with what arguments, is decided by the core
from the app's capabilities and the execution's token; nothing here widens it.

The core's MCP server is stateless and answers plain JSON, so a call is one
JSON-RPC POST over http.client (the standard library only: no package of
PyPI), on the Unix socket the sandbox has (`--mcp-socket`) or to
`context.mcp_endpoint` over TCP. One keep-alive connection per execution.
Calls are counted per tool for the answer's `metrics.mcp_calls`, and each is
timed (its start from the request's arrival, its duration and outcome) for
`metrics.timings.tool_calls` of a traced execution.
"""

import http.client
import json
import threading
import time
import urllib.parse

from unix_http import UnixHTTPConnection

# The protocol revision the requests claim; the core's SDK accepts it.
MCP_PROTOCOL_VERSION = "2025-06-18"
# A tool call waits this long at most; the pool's timeout ends a slower execution first.
CALL_TIMEOUT_SECONDS = 300
# Tool calls timed per execution, at most: a script that loops over a tool keeps its first ones (the contract's maxItems).
MAX_TIMED_CALLS = 256


class ToolCallError(Exception):
    """A tool failure as scripts see it: the core's code, message, HTTP status and details."""

    def __init__(self, code, message, status=None, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = details


class ExecutionTools:
    """One execution's client of the core's tools, and what it recorded."""

    def __init__(self, endpoint, token, mcp_socket=None, started_at=None):
        self._endpoint = urllib.parse.urlsplit(endpoint)
        # When the runner took the execution's request (time.perf_counter()): timings are offsets from it.
        self._started_at = time.perf_counter() if started_at is None else started_at
        self._timed = []
        self._token = token
        self._mcp_socket = mcp_socket
        self._connection = None
        self._lock = threading.Lock()
        self._next_id = 1
        self._totals = {}

    def call(self, name, args=None):
        """Calls tool `name` with `args` (a dict); answers its structured content or raises ToolCallError."""
        if not isinstance(name, str) or name == "":
            raise TypeError("ctx.tools.call needs a tool name")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise TypeError("ctx.tools.call takes the tool's arguments as a dict")
        started = time.perf_counter()
        usage = None
        outcome = "ok"
        try:
            result = self._rpc("tools/call", {"name": name, "arguments": args}, name)
            content = result.get("structuredContent") if result is not None else None
            if not isinstance(content, dict):
                raise ToolCallError("UHLP_MCP_CALL_FAILED", f"{name}: the result has no structured content", 502)
            if result.get("isError") is True:
                raise ToolCallError(
                    content["code"] if isinstance(content.get("code"), str) else "UHLP_MCP_CALL_FAILED",
                    content["message"] if isinstance(content.get("message"), str) else f"{name} failed",
                    content["status"] if isinstance(content.get("status"), int) else None,
                    content.get("details"),
                )
            usage = _token_usage(content)
            return content
        except ToolCallError as error:
            outcome = str(error.code)[:64]
            raise
        except BaseException:
            outcome = "error"
            raise
        finally:
            ended = time.perf_counter()
            self._count(name, (ended - started) * 1000, usage)
            self._time(name, started, ended, outcome)

    def list_tools(self):
        """The tools this execution's app may call, with their argument schemas (MCP tools/list); not counted as a call."""
        result = self._rpc("tools/list", {}, "tools/list")
        tools = result.get("tools") if result is not None else None
        if not isinstance(tools, list):
            raise ToolCallError("UHLP_MCP_CALL_FAILED", "tools/list: the answer has no tools", 502)
        return [tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]

    def metrics(self):
        """Calls per tool, for `metrics.mcp_calls`; empty when the script called none."""
        summary = []
        for tool, totals in self._totals.items():
            entry = {"tool": tool, "count": totals[0], "total_duration_ms": round(totals[1], 3)}
            if totals[2] is not None:
                entry["token_usage"] = {"prompt": totals[2][0], "completion": totals[2][1]}
            summary.append(entry)
        return summary

    def timings(self):
        """Each tool call's start (from the request's arrival), duration and outcome, for `metrics.timings.tool_calls`."""
        with self._lock:
            return list(self._timed)

    def offset(self, at):
        """ms from the request's arrival to `at` (a time.perf_counter() reading)."""
        return _ms(at - self._started_at)

    def close(self):
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __getattr__(self, name):
        # `ctx.tools.core.kv.get(key=...)`: a tool named by attributes. Private names stay attributes.
        if name.startswith("_"):
            raise AttributeError(name)
        return _ToolName(self, name)

    def _count(self, tool, duration_ms, usage):
        with self._lock:
            totals = self._totals.setdefault(tool, [0, 0.0, None])
            totals[0] += 1
            totals[1] += duration_ms
            if usage is not None:
                previous = totals[2] or (0, 0)
                totals[2] = (previous[0] + usage[0], previous[1] + usage[1])

    def _time(self, tool, started, ended, outcome):
        with self._lock:
            if len(self._timed) < MAX_TIMED_CALLS:
                self._timed.append({"tool": tool[:256], "start_ms": _ms(started - self._started_at), "duration_ms": _ms(ended - started), "outcome": outcome})

    def _connect(self):
        endpoint = self._endpoint
        if self._mcp_socket is not None:
            return UnixHTTPConnection(self._mcp_socket, endpoint.netloc or "core", CALL_TIMEOUT_SECONDS)
        if endpoint.scheme == "https":
            return http.client.HTTPSConnection(endpoint.hostname, endpoint.port, timeout=CALL_TIMEOUT_SECONDS)
        return http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=CALL_TIMEOUT_SECONDS)

    def _rpc(self, method, params, label):
        """One JSON-RPC request; its `result` (a dict or None), or a ToolCallError naming `label`."""
        if self._token is None:
            raise ToolCallError("UHLP_MCP_UNAUTHORIZED", "this execution has no MCP token", 401)
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, ensure_ascii=False).encode("utf-8")
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {self._token}",
            "mcp-protocol-version": MCP_PROTOCOL_VERSION,
        }
        path = self._endpoint.path or "/"
        if self._endpoint.query:
            path = f"{path}?{self._endpoint.query}"
        # Calls of one execution's threads share its connection, one at a time.
        with self._lock:
            try:
                status, text = self._exchange(path, body, headers)
            except ToolCallError:
                raise
            except (OSError, http.client.HTTPException) as error:
                raise ToolCallError("UHLP_MCP_CALL_FAILED", f"MCP endpoint unreachable: {error}", 502) from None
        answer = _parse_object(text)
        if status == 401:
            message = answer.get("message") if answer is not None and isinstance(answer.get("message"), str) else "unauthorized"
            raise ToolCallError("UHLP_MCP_UNAUTHORIZED", message, 401)
        # The core refused the request itself (a body over the endpoint's limit): its code and status, as a tool's refusal would be.
        refusal = answer.get("code") if answer is not None else None
        if 400 <= status < 500 and isinstance(refusal, str) and refusal.startswith("UHLP_"):
            message = answer["message"] if isinstance(answer.get("message"), str) else f"HTTP {status}"
            raise ToolCallError(refusal, f"{label}: {message}", status, answer.get("details"))
        rpc_error = answer.get("error") if answer is not None else None
        if not (200 <= status < 300) or answer is None or rpc_error is not None:
            why = rpc_error["message"] if isinstance(rpc_error, dict) and isinstance(rpc_error.get("message"), str) else f"HTTP {status}"
            raise ToolCallError("UHLP_MCP_CALL_FAILED", f"{label}: {why}", 502)
        result = answer.get("result")
        return result if isinstance(result, dict) else None

    def _exchange(self, path, body, headers):
        """POSTs on the kept connection; a kept one the core closed while idle is opened again, once (a new one never is: the call may have run)."""
        while True:
            reused = self._connection is not None
            if not reused:
                self._connection = self._connect()
            try:
                self._connection.request("POST", path, body=body, headers=headers)
                response = self._connection.getresponse()
                text = response.read()
                if response.will_close:
                    self._connection.close()
                    self._connection = None
                return response.status, text
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._connection.close()
                self._connection = None
                if not reused:
                    raise


class _ToolName:
    """A tool name being spelled by attributes: `tools.core.kv.get` is `core.kv.get`; calling it calls the tool."""

    __slots__ = ("_tools", "_name")

    def __init__(self, tools, name):
        self._tools = tools
        self._name = name

    def __getattr__(self, part):
        if part.startswith("_"):
            raise AttributeError(part)
        return _ToolName(self._tools, f"{self._name}.{part}")

    def __call__(self, args=None, **kwargs):
        return self._tools.call(self._name, {**(args or {}), **kwargs})

    def __repr__(self):
        return f"<tool {self._name}>"


def _ms(seconds):
    """Seconds as ms to the microsecond, never below 0 (the contract's minimum)."""
    return max(0.0, round(seconds * 1000, 3))


def _parse_object(text):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _token_usage(content):
    """core.llm.generate answers `usage: {prompt, completion}`: what the metrics count."""
    usage = content.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("prompt"), (int, float)) and isinstance(usage.get("completion"), (int, float)):
        return (usage["prompt"], usage["completion"])
    return None
