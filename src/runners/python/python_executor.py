"""The python runner's executor: loads the component's script from the mounted
revision (script_loader.py) and calls its function as `function(event, ctx)`:

- `event` is the request data as sent (`event["httpDetails"]["pathParameters"]`...);
- `ctx` is the context as sent, readable as a dict or by attribute
  (`ctx.configuration`, `ctx["appId"]`), with `ctx.workspace` as absolute paths
  in the sandbox's writable tree and `ctx.tools` bound to this execution's token
  (uhlp_tools.py).

A function defined with `async def` is run to its end on its thread's event
loop. What it returns or raises is mapped by script_result.py. The rules, and
the reading of scripts through MCP for pods, are the jit-runner's
(src/runners/jit/jit-executor.ts).
"""

import base64
import os
import sys
import threading
import time

from script_loader import ScriptLoader, ScriptLoadError
from script_result import result_from_value, runner_error

READ_TOOL = "core.state.getDefinitionFileContent"
# The revision of the warm-up script: all zeros, which no commit id is.
WARM_UP_REVISION = "0" * 40


class ScriptContext(dict):
    """The context a script gets: the dict the core sent, also readable by attribute."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class PythonExecutor:
    def __init__(self, definitions_root, work_dir=None, definitions_via_mcp=False, kept=None):
        self._loader = ScriptLoader(definitions_root)
        # Called with each script kept in the cache, once written: the walk of the work tree records it (work_tree_walk.RunnerFiles).
        self._kept = kept
        self._work_dir = work_dir
        self._via_mcp = definitions_via_mcp
        self._loops = threading.local()

    def __call__(self, request, tools):
        context = request["context"]
        task = context.get("taskDetails")
        if not isinstance(task, dict) or task.get("handler") != "JIT" or not task.get("script"):
            return runner_error("UHLP_EXECUTE_BAD_REQUEST", "context.taskDetails must name a JIT script")
        if task.get("oracle") is not None:
            return runner_error("UHLP_EXECUTE_BAD_REQUEST", "the python runner runs no candidates of the optimization oracle (they are ES modules)")
        revision, script, name = task["revision"], task["script"], task.get("function")
        load_started = None if self._loader.is_loaded(revision, script, name) else time.perf_counter()
        try:
            function = self._function(request, tools, revision, script, name)
        except ScriptLoadError as error:
            return runner_error(error.code, error.message)
        script_load_ms = None if load_started is None else round((time.perf_counter() - load_started) * 1000, 3)

        workspace = self._workspace(context.get("workspace"))
        if workspace is not None:
            # Temporary files of the script (and of what it uses) go to the turn's own directory. tempfile
            # keeps the first directory it found, so once a script imported it, it is told too. With
            # concurrency above 1 executions share the process environment: the last one set wins.
            os.environ["TMPDIR"] = os.environ["TEMP"] = os.environ["TMP"] = workspace["tmpDir"]
            if "tempfile" in sys.modules:
                sys.modules["tempfile"].tempdir = workspace["tmpDir"]
        ctx = ScriptContext(context)
        if workspace is not None:
            ctx["workspace"] = workspace
        ctx["tools"] = tools
        run_started = time.perf_counter()
        value = function(request["requestData"], ctx)
        if hasattr(type(value), "__await__"):
            value = self._loop().run_until_complete(_awaited(value))
        run_ms = round((time.perf_counter() - run_started) * 1000, 3)
        result = result_from_value(value)
        metrics = {} if script_load_ms is None else {"script_load_ms": script_load_ms}
        # For the core's trace: the script's own run, and its first load when this execution did it (offsets from the
        # request's arrival, which the execution's tools client knows); the server sends them to a core that traces.
        offset = getattr(tools, "offset", None)
        if offset is not None:
            timings = {"run": {"start_ms": offset(run_started), "duration_ms": run_ms}}
            if load_started is not None and script_load_ms is not None:
                timings["script_load"] = {"start_ms": offset(load_started), "duration_ms": script_load_ms}
            metrics["timings"] = timings
        return result.with_metrics(metrics) if metrics else result

    def app_dir(self, request):
        """The app directory of a request's script (its revision's), for the frames of an exception; None when the request names none."""
        task = request.get("context", {}).get("taskDetails")
        revision = task.get("revision") if isinstance(task, dict) else None
        if not isinstance(revision, str) or not revision:
            return None
        return self._loader.app_dir(revision)

    def warm_up(self):
        """A pod's first script is kept in the cache and loaded: do that once with a script of its own."""
        if not self._via_mcp:
            return
        file = self._loader.resolve(WARM_UP_REVISION, "warm_up.py")
        _keep(file, b"def handler(event, ctx):\n    return 0\n", self._kept)
        self._loader.load(WARM_UP_REVISION, "warm_up.py", None)(None, None)

    def _function(self, request, tools, revision, script, name):
        try:
            return self._loader.load(revision, script, name)
        except ScriptLoadError as error:
            if not self._via_mcp or error.code != "UHLP_SCRIPT_NOT_FOUND":
                raise
        # The core sends the script with its first execution here; else it is read through MCP.
        file = self._loader.resolve(revision, script)
        sent = next((entry for entry in request.get("definitionFiles") or () if entry.get("path") == script), None)
        if sent is not None:
            _keep(file, sent["content"].encode("utf-8"), self._kept)
        else:
            _keep(file, _fetch(tools, script, revision), self._kept)
        return self._loader.load(revision, script, name)

    def _workspace(self, sent):
        """The execution's directories as absolute paths inside the work tree; None when either is missing or leaves it."""
        root = self._work_dir
        if not root or not isinstance(sent, dict) or not isinstance(sent.get("tmpDir"), str) or not isinstance(sent.get("outputDir"), str):
            return None
        base = os.path.abspath(root)
        tmp_dir = os.path.normpath(os.path.join(base, sent["tmpDir"]))
        output_dir = os.path.normpath(os.path.join(base, sent["outputDir"]))
        if not (tmp_dir.startswith(base + os.sep) and output_dir.startswith(base + os.sep)):
            return None
        return ScriptContext({**sent, "tmpDir": tmp_dir, "outputDir": output_dir})

    def _loop(self):
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            # asyncio is imported by the first script that needs it: a runner whose scripts never await starts without it.
            import asyncio

            loop = self._loops.loop = asyncio.new_event_loop()
        return loop


async def _awaited(awaitable):
    return await awaitable


def _fetch(tools, script, revision):
    """The script's bytes, read through MCP at the execution's revision."""
    try:
        answer = tools.call(READ_TOOL, {"path": script})
    except Exception as error:  # noqa: BLE001 - any failure of the read is the script's load failure
        if getattr(error, "code", None) == "UHLP_DEFINITION_FILE_NOT_FOUND":
            raise ScriptLoadError("UHLP_SCRIPT_NOT_FOUND", f'script "{script}" does not exist in revision {revision[:12]}') from None
        raise ScriptLoadError("UHLP_SCRIPT_LOAD_FAILED", f'script "{script}" could not be read from the core: {error}') from None
    if answer.get("revision") != revision or not isinstance(answer.get("content"), str):
        raise ScriptLoadError("UHLP_SCRIPT_LOAD_FAILED", f'the core answered script "{script}" for another revision or without content')
    if answer.get("encoding") == "base64":
        return base64.b64decode(answer["content"])
    return answer["content"].encode("utf-8")


def _keep(file, content, kept=None):
    """Writes a script into the cache whole, then renames it: a concurrent load never sees half."""
    os.makedirs(os.path.dirname(file), exist_ok=True)
    partial = f"{file}.{os.getpid()}.{threading.get_ident()}.part"
    with open(partial, "wb") as handle:
        handle.write(content)
    os.chmod(partial, 0o444)
    os.replace(partial, file)
    if kept is not None:
        kept(file)
