"""How the python runner ends when a script takes the process down with it.

The drivers read a sandbox's death from its exit (src/sandbox/*-exit-cause.ts),
and they read it as they do for Node, so a pool reports both runners alike:

- memory: the runner caps its own data segment (`--memory-mb`, RLIMIT_DATA,
  as Node caps its heap with --max-old-space-size); a script that passes it
  gets a MemoryError, and the runner then ends as V8 does on its heap limit:
  "heap out of memory" on stderr and exit status 134 (`heap-limit`). The
  process is not trusted to go on once an allocation failed anywhere in it.
- `sys.exit()` / `raise SystemExit`: the script ends its process, as
  `process.exit()` does in JavaScript (`crash`, and no answer).

Nothing is flushed or cleaned: os._exit, at once.
"""

import os
import sys

# V8's abort on its heap limit, as the drivers know it (128 + SIGABRT).
HEAP_LIMIT_EXIT_STATUS = 134

_limit_mb = None


def set_memory_limit(limit_mb):
    global _limit_mb
    _limit_mb = limit_mb


def out_of_memory():
    limit = f" (limit {_limit_mb} MB)" if _limit_mb is not None else ""
    _say(f"python-runner: FATAL: heap out of memory: a script ran out of memory{limit}\n")
    os._exit(HEAP_LIMIT_EXIT_STATUS)


def script_exit(error):
    code = error.code
    status = code if isinstance(code, int) and not isinstance(code, bool) else (0 if code is None else 1)
    _say(f"python-runner: the script ended the process (SystemExit {code!r})\n")
    os._exit(status & 0xFF)


def _say(text):
    # No allocation worth the name: the process may have none left.
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:
        pass
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - ending anyway
        pass
