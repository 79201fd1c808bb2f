"""Finds and loads component scripts (.py) from an immutable definitions revision.

The root holds the sandbox's own app's revisions, a revision's files at
`<root>/<revision>/...`. A revision never changes, so a script is run once per
revision and its function kept: a new revision is a new module.

A script is compiled here from its source and run as a module of its own
(`uhlp_script_<n>`), never imported through the import system: no bytecode
is read from or written next to it (a `__pycache__` in the revision is
ignored), whatever the flags. It may import the standard library and
`uhlp_tools`; a script is one file (sibling modules of the app are not on the
path: pods fetch only the script itself).

`function` names the function to call; omitted (the schema's `default`), it is
the script's `handler`, as in AWS Lambda's Python convention.
"""

import itertools
import os
import re
import sys
import threading
import types

_REVISION = re.compile(r"^[0-9a-f]{7,64}$")
# The function `jit.function` names when it is omitted (the schema's default).
DEFAULT_FUNCTION = "handler"


class ScriptLoadError(Exception):
    """Why a script cannot run: UHLP_SCRIPT_NOT_FOUND, UHLP_SCRIPT_LOAD_FAILED, UHLP_FUNCTION_NOT_FOUND or UHLP_EXECUTE_BAD_REQUEST."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def function_name(name):
    return DEFAULT_FUNCTION if name in (None, "", "default") else name


class ScriptLoader:
    def __init__(self, root):
        self._root = root
        self._functions = {}
        self._modules = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def app_dir(self, revision):
        """The revision's app directory, as a script's frames name it (scripts are compiled with their absolute path)."""
        return os.path.normpath(os.path.join(self._root, revision))

    def resolve(self, revision, script):
        """The script's file inside its revision; refuses a revision that is no commit id and a path that leaves the app."""
        if not isinstance(revision, str) or not _REVISION.match(revision):
            raise ScriptLoadError("UHLP_EXECUTE_BAD_REQUEST", f'revision "{revision}" is not a commit id')
        app_dir = os.path.normpath(os.path.join(self._root, revision))
        file = os.path.normpath(os.path.join(app_dir, script))
        if not file.startswith(app_dir + os.sep):
            raise ScriptLoadError("UHLP_EXECUTE_BAD_REQUEST", f'script "{script}" leaves the app directory')
        if not file.endswith(".py"):
            raise ScriptLoadError("UHLP_EXECUTE_BAD_REQUEST", f'script "{script}" is not a .py Python module')
        return file

    def is_loaded(self, revision, script, name):
        return (revision, script, function_name(name)) in self._functions

    def load(self, revision, script, name):
        """The script's function; one loaded before for the same reference is answered from memory."""
        name = function_name(name)
        key = (revision, script, name)
        found = self._functions.get(key)
        if found is not None:
            return found
        file = self.resolve(revision, script)
        # One load of a module at a time: two executions of a cold script run it once.
        with self._lock:
            found = self._functions.get(key)
            if found is not None:
                return found
            module = self._module(revision, script, file)
            function = getattr(module, name, None)
            if not callable(function) or isinstance(function, type):
                raise ScriptLoadError("UHLP_FUNCTION_NOT_FOUND", f'script "{script}" has no function "{name}"')
            self._functions[key] = function
            return function

    def _module(self, revision, script, file):
        module = self._modules.get((revision, script))
        if module is not None:
            return module
        module_name = f"uhlp_script_{next(self._numbers)}"
        try:
            with open(file, "rb") as handle:
                source = handle.read()
        except FileNotFoundError:
            raise ScriptLoadError("UHLP_SCRIPT_NOT_FOUND", f'script "{script}" does not exist in revision {revision[:12]}') from None
        except OSError as error:
            raise ScriptLoadError("UHLP_SCRIPT_LOAD_FAILED", f'script "{script}" could not be read: {error.strerror}') from None
        module = types.ModuleType(module_name)
        module.__file__ = file
        # In sys.modules while it runs and after: dataclasses, pickle and typing look a module's classes up there.
        sys.modules[module_name] = module
        try:
            code = compile(source, file, "exec", dont_inherit=True)
            exec(code, module.__dict__)
        except MemoryError:
            del sys.modules[module_name]
            raise
        except BaseException as error:  # noqa: BLE001 - whatever a script raises while it loads is its load failure
            del sys.modules[module_name]
            if isinstance(error, SystemExit):
                raise
            reason = f"{type(error).__name__}: {error.msg} (line {error.lineno})" if isinstance(error, SyntaxError) else f"{type(error).__name__}: {error}"
            raise ScriptLoadError("UHLP_SCRIPT_LOAD_FAILED", f'script "{script}" could not be loaded: {reason}') from None
        self._modules[(revision, script)] = module
        return module
