"""The ledger store: JSON lines of records, locked, read incrementally, checked for identity.

Each line is a record of the closed schema of :mod:`dp_sklearn._event_json`.
:class:`StoreCache` parses only the bytes appended since it
last read, settles a torn last line (a writer that stopped mid-write) without
under-counting, and refuses to go on when the file it has read is deleted, replaced,
truncated or rewritten (``docs/privacy.md``, P7).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import tempfile
import time
import uuid
from contextlib import contextmanager, suppress

from ._event_json import _MAX_LINE, _RECORD_KEYS, append_line, decode_record, dump_line, encode_event, loads
from .composition import RunningComposition

try:  # POSIX advisory locks; on other platforms appends are still single writes.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["StoreCache", "forget_temporary_store", "locked_store", "pinned_cache", "store_path",
           "temporary_store"]

# ---------------------------------------------------------------------------
# Store files: the path, temporary stores
# ---------------------------------------------------------------------------
#: temporary stores (path=None) -> pid of the process that made them; removed when it exits
_TEMPORARY_STORES = {}


def temporary_store():
    """A new temporary store file, removed when this process exits."""
    fd, path = tempfile.mkstemp(prefix="dp_sklearn_ledger_", suffix=".jsonl")
    os.close(fd)
    _TEMPORARY_STORES[os.path.abspath(path)] = os.getpid()
    return path


def forget_temporary_store(path):
    """Do not remove ``path`` at exit (it was deleted)."""
    _TEMPORARY_STORES.pop(path, None)


@atexit.register
def _remove_temporary_stores():
    for path, pid in list(_TEMPORARY_STORES.items()):
        if pid == os.getpid():
            with suppress(OSError):
                os.remove(path)


def store_path(path):
    """``path`` (``~`` expanded) checked for a store: a regular file, or a new file in an existing directory."""
    try:
        path = os.path.expanduser(os.fspath(path))
    except TypeError:
        raise TypeError(f"path must be a str, os.PathLike or None, got {type(path).__name__}.") from None
    if os.path.exists(path):
        if not os.path.isfile(path):
            raise ValueError(f"path={path!r} is not a regular file (a directory, device or pipe cannot hold a "
                             "ledger: what is written there could not be read back).")
    else:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ValueError(f"path={path!r}: the directory {parent!r} does not exist.")
        with suppress(OSError):  # unwritable location: reads as empty, writes raise
            open(path, "a", encoding="utf-8").close()
    return path


def pinned_cache(path):
    """A StoreCache pinned to the file now at ``path`` (``None`` if there is none yet)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return StoreCache(path, (st.st_dev, st.st_ino))


# ---------------------------------------------------------------------------
# The store: JSON lines, read incrementally
# ---------------------------------------------------------------------------
_TAIL = 64
_STRING = rb'"(?:[^"\\]|\\.)*"'
_TORN_KIND = re.compile(rb'\s*\{"kind": "(event|reserve|release)"')
_TORN_RESERVATION = re.compile(rb'\s*\{"kind": "event", "id": ' + _STRING + rb', "reservation": (null|' + _STRING
                               + rb')[,}]')


def _changed(path, what):
    return RuntimeError(
        f"PrivacyLedger store {path!r} {what} since this handle last read it: the history of releases it "
        "held is gone, so the cap can no longer be enforced. Nothing was checked or recorded. To start over "
        "on purpose, call reset() or delete() on this handle (or create a new PrivacyLedger).")


def _unwritable(path, exc):
    return PermissionError(f"PrivacyLedger store {path!r} is not writable here: it can be read (total_epsilon, "
                           "records, summary) but not written (check under a cap, record, cancel_pending, "
                           f"reset). ({exc})")


def _open(path, cache, write):
    """The store opened for ``write`` (or reading); ``None`` when a store never seen is missing."""
    known = cache is not None and cache.ident is not None
    try:
        # a store this handle has read must still exist: it is never silently re-created
        return open(path, ("r+b" if known else "a+b") if write else "rb")
    except FileNotFoundError:
        if known:
            raise _changed(path, "was deleted") from None
        if write:
            raise
        return None
    except PermissionError as exc:
        raise _unwritable(path, exc) from exc


@contextmanager
def locked_store(path, cache, write, sync=True):
    """Open and lock the store, bring ``cache`` up to date; yields ``(file or None, StoreCache)``.

    ``write=True`` opens it for writing under an exclusive ``fcntl.flock`` and raises a
    ``PermissionError`` naming the store if it cannot be written; ``write=False``
    opens it read-only under a shared lock (a store never read before that is missing
    reads as empty). A torn last line is repaired under the exclusive lock (a reader
    takes it for that, see :class:`StoreCache`). ``sync=False`` reads nothing and
    yields ``(file, None)`` (to erase the store).

    Raises
    ------
    RuntimeError
        If the store that ``cache`` has read was deleted, replaced, truncated or rewritten.
    ValueError
        Naming the file and line, for a line that is not a ledger record, or a torn
        last line that could hide a release.
    """
    fh = _open(path, cache, write)
    if fh is None:
        yield None, StoreCache(path)
        return
    with fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        try:
            store = StoreCache.synced(cache, fh, path, repair=write) if sync else False
        except _NeedsRepair:
            store = None
        if store is None:  # a reader met a torn line that only a writer can settle
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            with locked_store(path, cache, True) as (wfh, store):
                yield wfh, store
            return
        try:
            yield fh, store or None
        finally:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class _NeedsRepair(Exception):
    pass


class StoreCache:
    """The lines of a store parsed so far (up to ``offset`` bytes) and their composition.

    Attributes
    ----------
    ident : tuple (st_dev, st_ino) or None
        The file read; ``None`` until one is seen.
    records : list of tuple (label, epsilon, delta, event, time, pid)
    pending : dict
        Outstanding reservations, id -> decoded reserve record, oldest first.
    state : dp_sklearn.composition.RunningComposition
        The recorded events, composed in order.

    Notes
    -----
    A torn last line (no newline, not parseable: a writer stopped mid-write; writers hold
    the exclusive lock while they write, so a reader never sees a live writer's partial
    line) is settled without under-counting. Torn ``reserve`` and ``release`` lines are
    ignored and, under the exclusive lock, cut off: the check that wrote a reservation
    never returned, and a lost release keeps its reservation counted. A torn ``event``
    line whose reservation is outstanding is replaced by a complete event line recording
    the reserved event. Any other torn line (an event written without a reservation, or
    cut before its reservation) could hide a release: every read raises ``ValueError``
    naming the line until someone removes it or resets the store.
    """

    def __init__(self, path, ident=None):
        self.path, self.ident = path, ident
        self.offset, self.n_lines, self.tail = 0, 0, b""
        self.records, self.pending, self.state = [], {}, RunningComposition()
        self.torn = b""  # an unterminated, unparseable last line (not counted in offset)
        self.open_line = False  # the last line parsed had no newline

    @classmethod
    def synced(cls, cache, fh, path, repair=False):
        """``cache`` brought up to date with the locked store ``fh``.

        Only the bytes after ``cache.offset`` are read. A store that ``cache`` has read
        must be the same file (inode), at least as long, with the same last bytes parsed.

        Raises
        ------
        RuntimeError
            If the file was replaced, truncated or rewritten.
        ValueError
            Naming the file and line, for a line that is not a ledger record.
        """
        st = os.fstat(fh.fileno())
        ident = (st.st_dev, st.st_ino)
        if cache is None or (cache.ident is None and cache.offset == 0):
            cache = cls(path, ident)
        if cache.ident != ident:
            raise _changed(path, "was deleted or replaced by another file")
        if st.st_size < cache.offset:
            raise _changed(path, f"was truncated from {cache.offset} to {st.st_size} bytes")
        if cache.offset:
            fh.seek(cache.offset - len(cache.tail))
            if fh.read(len(cache.tail)) != cache.tail:
                raise _changed(path, "was rewritten")
        if st.st_size > cache.offset:
            fh.seek(cache.offset)
            cache._consume(fh.read(st.st_size - cache.offset))
        if cache.torn:
            cache._settle_torn(fh, repair)
        return cache

    def _consume(self, data):
        start = 0
        if self.open_line and data[:1] == b"\n":  # the newline a writer put after an unterminated line
            start = 1
        segments = data[start:].split(b"\n")
        self.torn = b""
        try:
            for i, raw in enumerate(segments):
                last = i == len(segments) - 1
                if last and not raw:
                    break
                where = f"PrivacyLedger store {self.path!r}, line {self.n_lines + 1}"
                if len(raw) > _MAX_LINE:
                    raise ValueError(f"{where}: a line longer than {_MAX_LINE} bytes.")
                if raw.strip():
                    try:
                        obj = loads(raw.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError) as exc:
                        if last:  # unterminated and unparseable: a torn write
                            self.torn = raw
                            break
                        raise ValueError(f"{where}: {exc}") from None
                    try:
                        self._apply(decode_record(obj))
                    except ValueError as exc:
                        raise ValueError(f"{where}: {exc}") from None
                self.n_lines += 1
                start += len(raw) + (0 if last else 1)
                self.open_line = last
        finally:  # the lines before a refused one stay parsed
            self.offset += start
            self.tail = (self.tail + data[:start])[-_TAIL:]

    def _settle_torn(self, fh, repair):
        raw, where = self.torn, f"PrivacyLedger store {self.path!r}, line {self.n_lines + 1}"
        kind = _TORN_KIND.match(raw)
        kind = kind and kind.group(1).decode()
        if kind is None:
            raise ValueError(f"{where}: an incomplete last line (a writer stopped mid-write) that cannot be "
                             "identified: it could hide a release. Delete it once you know that none happened, "
                             "or reset() the store.")
        if kind == "event":
            found = _TORN_RESERVATION.match(raw)
            rid = found and found.group(1) != b"null" and json.loads(found.group(1))
            if rid not in self.pending:
                raise ValueError(
                    f"{where}: an incomplete last line (a writer stopped mid-write) recording a release this "
                    "reader cannot size, so every total would under-count it. If no release happened (the "
                    "writing process died before its fit returned), delete that line; otherwise record its "
                    "event again, or reset() the store.")
        if fcntl is None or (kind != "event" and not repair):
            return  # ignored: a lost reservation was never used, a lost release keeps its reservation counted
        if not repair:
            raise _NeedsRepair
        fh.truncate(self.offset)
        self.torn = b""
        if kind == "event":  # the reserved event, recorded in full
            res = self.pending[rid]
            entry = {k: res.get(k) for k in _RECORD_KEYS["event"]}
            entry.update(kind="event", id=uuid.uuid4().hex, reservation=rid, time=time.time(),
                         event=encode_event(res["event"]))
            line = dump_line(entry)
            append_line(fh, line)
            self._consume(line)

    def _apply(self, rec):
        kind = rec["kind"]
        if kind == "event":
            self.state.add(rec["event"])
            self.records.append((rec["label"], rec["epsilon"], rec["delta"], rec["event"], rec["time"], rec["pid"]))
            self.pending.pop(rec["reservation"], None)
        elif kind == "reserve":
            self.pending[rec["id"]] = rec
        else:
            self.pending.pop(rec["id"], None)
