"""The python runner's walk of its work tree after a turn, when the core asks for
it (`reportWrites`: pods, whose /work the core cannot see).

The same walk as the Node runners' and the core's (src/shared/work-tree-walk.ts),
in Python: the rules are that file's, and its constants (the two top directories,
the file and byte limits) come from the generated contract JSON, never copied by
hand. Before the turn its directories `tmp/<sid>/` and `output/<sid>/` exist;
after it the root is listed (anything beside `tmp/` and `output/`, but the
files the runner recorded in its definitions cache, is a stray), the top directories are (the session's
own directory is the turn's, any other entry a stray), and the side directories
are (the socket directory, `/run/uhlp`, anything in it but `runner.sock`). Every
file is hashed; nothing is followed through a link and nothing but a regular file
is opened (O_NOFOLLOW, then fstat). Emptying removes what was found and keeps the
session's empty directories for its next turn.
"""

import hashlib
import os
import shutil
import stat
import threading

from execute_contract import WORK_TREE_WALK

TOP_DIRS = tuple(WORK_TREE_WALK["topDirs"])
MAX_FILES = WORK_TREE_WALK["maxFiles"]
MAX_BYTES = WORK_TREE_WALK["maxBytes"]
_CHUNK = 1024 * 1024


class RunnerFiles:
    """The files the runner wrote into a directory at the tree's root itself (a pod's
    definitions cache), each with the stamp it had then (device, inode, mode, size,
    change time): a turn cannot make a file whose stamp matches, so anything else
    there, or a recorded file changed, is the turn's write."""

    def __init__(self, name):
        self.name = name
        self._stamps = {}

    def record(self, file):
        self._stamps[os.path.abspath(file)] = _stamp(os.lstat(file))

    def holds(self, file):
        stamp = self._stamps.get(file)
        if stamp is None:
            return False
        try:
            return _stamp(os.lstat(file)) == stamp
        except OSError:
            return False


def _stamp(info):
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_ctime_ns)


class WorkTree:
    """One tree: its root, the runner's own directory in it, its side directories, and the turns in it."""

    def __init__(self, root, runner_files=None, sides=()):
        self.root = os.path.abspath(root)
        self.runner_files = runner_files
        # (directory, names kept there)
        self.sides = tuple((os.path.abspath(directory), frozenset(keep)) for directory, keep in sides)
        self._prepared = set()
        self._active = {}
        self._lock = threading.Lock()

    def begin(self, session_id):
        """Makes the turn's directories (once per session) and counts the turn in."""
        with self._lock:
            if session_id not in self._prepared:
                for top in TOP_DIRS:
                    os.makedirs(os.path.join(self.root, top, session_id), exist_ok=True)
                self._prepared.add(session_id)
            self._active[session_id] = self._active.get(session_id, 0) + 1
        return _Turn(self, session_id)


class _Turn:
    def __init__(self, tree, session_id):
        self._tree = tree
        self._sid = session_id
        self._ended = False

    def walk(self):
        """What the tree holds, as the contract's realized writes: [{path, hash?, size, kind}]."""
        tree = self._tree
        with tree._lock:
            # Turns of one session running at once see each other's files: the last one walks them.
            if tree._active.get(self._sid, 0) > 1:
                return []
            active = set(tree._active)
        entries = []
        for entry in _scan(tree.root):
            if _is_top_dir(entry):
                continue
            if _is_runner_dir(tree, entry):
                _foreign(entry.path, entry.name, tree.runner_files, entries)
            else:
                _stray(entry, entry.name, entries)
        for top in TOP_DIRS:
            for entry in _scan(os.path.join(tree.root, top)):
                own = entry.name == self._sid and entry.is_dir(follow_symlinks=False)
                # Another session's directory while one of its turns runs here: that turn walks it.
                if not own and entry.name in active and entry.is_dir(follow_symlinks=False):
                    continue
                if own:
                    _collect(entry.path, top, entries)
                else:
                    _stray(entry, f"{top}/{entry.name}", entries)
        for directory, keep in tree.sides:
            for entry in _scan(directory):
                if entry.name not in keep:
                    _stray(entry, f"{directory}/{entry.name}", entries)
        found = []
        budget = {"files": 0, "bytes": 0}
        for full, where in entries:
            _record(full, where, found, budget)
        return found

    def discard(self):
        """Empties the turn's part of the tree and whatever strays there are, and counts the turn out."""
        tree = self._tree
        if self._ended:
            return
        self._ended = True
        with tree._lock:
            left = tree._active.get(self._sid, 1) - 1
            if left > 0:
                tree._active[self._sid] = left
                return
            del tree._active[self._sid]
            active = set(tree._active)
        for entry in _scan(tree.root):
            if _is_top_dir(entry):
                continue
            if _is_runner_dir(tree, entry):
                _remove_foreign(entry.path, tree.runner_files)
            else:
                _remove(entry.path)
        for directory, keep in tree.sides:
            for entry in _scan(directory):
                if entry.name not in keep:
                    _remove(entry.path)
        for top in TOP_DIRS:
            root = os.path.join(tree.root, top)
            if not _is_directory(root):
                # A top directory a turn removed or replaced: made again (the session directories with it).
                with tree._lock:
                    tree._prepared.clear()
                _remove(root)
                os.makedirs(root, mode=0o755, exist_ok=True)
                continue
            for entry in _scan(root):
                if entry.name in active:
                    continue
                if entry.name == self._sid and entry.is_dir(follow_symlinks=False):
                    # Kept for the session's next turn: emptied, not removed.
                    for inner in _scan(entry.path):
                        _remove(inner.path)
                else:
                    _remove(entry.path)
                    with tree._lock:
                        tree._prepared.discard(entry.name)


def _is_runner_dir(tree, entry):
    return tree.runner_files is not None and entry.name == tree.runner_files.name and entry.is_dir(follow_symlinks=False)


def _foreign(directory, where, runner_files, entries):
    """Lists what is in the runner's own directory and is not a file it recorded, unchanged."""
    for entry in _scan(directory):
        if entry.is_dir(follow_symlinks=False):
            _foreign(entry.path, f"{where}/{entry.name}", runner_files, entries)
        elif not runner_files.holds(entry.path):
            entries.append((entry.path, f"{where}/{entry.name}"))


def _remove_foreign(directory, runner_files):
    """Removes what is in the runner's own directory and is not a file it recorded (a directory holding none of them with it); answers whether any of them is left."""
    holds = False
    for entry in _scan(directory):
        if entry.is_dir(follow_symlinks=False):
            if _remove_foreign(entry.path, runner_files):
                holds = True
            else:
                _remove(entry.path)
        elif runner_files.holds(entry.path):
            holds = True
        else:
            _remove(entry.path)
    return holds


def _scan(directory):
    try:
        with os.scandir(directory) as listing:
            return list(listing)
    except OSError:
        return []


def _is_top_dir(entry):
    return entry.name in TOP_DIRS and entry.is_dir(follow_symlinks=False)


def _is_directory(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(path):
    try:
        if _is_directory(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _stray(entry, where, entries):
    """A write outside the turn's own directories: a directory's files (never through a link), or the entry itself."""
    if entry.is_dir(follow_symlinks=False):
        _collect(entry.path, where, entries)
    else:
        entries.append((entry.path, where))


def _collect(directory, where, entries):
    try:
        names = sorted(os.listdir(directory))
    except NotADirectoryError:
        # A file made where a session directory should be.
        entries.append((directory, where))
        return
    except OSError:
        return
    for name in names:
        if len(entries) > MAX_FILES:
            return
        full = os.path.join(directory, name)
        try:
            info = os.lstat(full)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            _collect(full, f"{where}/{name}", entries)
        else:
            entries.append((full, f"{where}/{name}"))


def _kind(mode):
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


def _record(full, where, found, budget):
    budget["files"] += 1
    if budget["files"] > MAX_FILES:
        if budget["files"] == MAX_FILES + 1:
            found.append({"path": where, "size": 0, "kind": "over-limit"})
        return
    try:
        info = os.lstat(full)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        found.append({"path": where, "size": 0, "kind": _kind(info.st_mode)})
        return
    budget["bytes"] += info.st_size
    if budget["bytes"] > MAX_BYTES:
        found.append({"path": where, "size": info.st_size, "kind": "over-limit"})
        return
    # O_NOFOLLOW: the file may be swapped for a link between lstat and open; O_NONBLOCK: or for a FIFO.
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        found.append({"path": where, "size": 0, "kind": "other"})
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            found.append({"path": where, "size": 0, "kind": "other"})
            return
        digest = hashlib.sha256()
        size = 0
        # Bounded: a file growing while it is read is hashed up to the byte budget.
        while size < MAX_BYTES:
            chunk = os.read(fd, min(_CHUNK, MAX_BYTES - size))
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
        found.append({"path": where, "hash": "sha256:" + digest.hexdigest(), "size": size, "kind": "file"})
    finally:
        os.close(fd)
