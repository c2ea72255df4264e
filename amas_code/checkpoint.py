"""Checkpoints beside the user's branch: before and after each change the agent makes (a file it
writes, a command it runs) a snapshot of the work tree is committed in a repository of Amas's own,
so /undo takes back a whole turn and never writes the user's branch, HEAD or index."""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from git import GitCommandError, InvalidGitRepositoryError, NoSuchPathError, Repo

from amas_code import ui
from amas_code.config import WORDS

# The newest snapshot; each has the one before as its parent, so that none is ever collected.
KEEP = "refs/amas/keep"
HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # while a record is written
FROM_STDIN = ["--pathspec-from-file=-", "--pathspec-file-nul"]  # any number of paths: no ARG_MAX
UNTRACKED = ["ls-files", "-z", "-o", "--exclude-standard"]  # neither tracked nor ignored


class Refused(Exception):
    """A snapshot, undo or redo that cannot be done; nothing was changed."""


class Checkpoint:
    """The snapshots, and the turns of changes that /undo and /redo walk."""

    start = None  # what was new at the session's first snapshot: the user's

    def __init__(self, root: str = ".", enabled: bool = True):
        self.root, self.dir, self.seed, self.left = Path(root).resolve(), None, None, set()
        user = None
        with suppress(InvalidGitRepositoryError, NoSuchPathError, GitCommandError):
            user = Repo(root, search_parent_directories=True)
            if Path(user.working_dir).resolve() != self.root and user.ignored(self.root):
                user = None  # a project the repository above ignores (a home folder kept in git)
        if not enabled or user and user.bare:  # a bare repository has no work tree to snapshot
            return
        if user:  # the snapshots' index starts as a copy of the user's: fast, tracked files all in
            self.root = Path(user.working_tree_dir).resolve()
            self.seed, self.dir = Path(user.git_dir, "index"), Path(user.git_dir, "amas", "repo")
        else:  # outside git, a repository of Amas's own in the user's cache
            cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            self.dir = cache / "amas" / str(self.root).replace(os.sep, "%")
        env = {**os.environ, **WORDS["identity"], "GIT_DIR": str(self.dir)}
        self.env = {**env, "GIT_WORK_TREE": str(self.root)}
        self.at = {"cwd": self.root, "capture_output": True, "start_new_session": True}  # no ^C
        # it reads the user's objects; what it writes it keeps, so no gc of theirs can take it
        objects = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": f"{user.common_dir}/objects"} if user else {}
        self.reader = {**self.env, **objects}
        # its own repository, never pushed or bundled with the user's, for the user alone (it may
        # copy keys); 3 ms when it is there; when init fails (a cache not writable) every change asks
        subprocess.run(["git", "init", "--bare", "--shared=0600", self.dir], capture_output=True)

    def git(self, *args: str, stdin: tuple | list = ()) -> str:
        """One git command in Amas's own repository, over the user's work tree; `stdin` is a list
        of paths, given NUL-separated on its standard input, so any number of them fits."""
        data = "\0".join(stdin).encode(errors="surrogateescape")
        env = self.env if args[0] in ("add", "update-index") else self.reader
        # umask: what undo brings back is the user's alone (by git's own umask, a 0600 key came
        # back 0644); their own changes keep their modes (_restore)
        run = subprocess.run(["git", *args], input=data, env=env, umask=0o77, **self.at)
        if run.returncode:
            why = run.stderr.decode(errors="replace").strip() or "failed"
            raise Refused(f"git {args[0]}: {why.splitlines()[0][:200]}")
        return run.stdout.decode(errors="surrogateescape").removesuffix("\n")

    @contextmanager
    def locked(self, warn: str = "") -> object:
        """One session at a time in the snapshots and the turns, with Ctrl-C and kill held off until
        a record is whole; a file that moved under us refuses in one line. With `warn`, a refusal
        is that warning instead, and the code after the block runs."""
        held = []  # Python runs handlers in the main thread, whichever thread got the signal
        old = {sig: signal.signal(sig, lambda number, frame: held.append(number)) for sig in HELD}
        try:
            with open(self.dir / "amas.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                yield
        except (OSError, ValueError, Refused) as e:
            if not warn:
                raise Refused(str(e)) from None
            ui.warning(f"{warn}: {e}")
        finally:
            for number, handler in old.items():
                signal.signal(number, handler)
            if held:  # now Ctrl-C (or kill) does what it would have done
                signal.raise_signal(held[0])

    def begin(self, request: str) -> None:
        """A new turn: the changes made for this request are undone and redone together."""
        self.turn = {"id": time.time_ns(), "time": time.strftime("%F %T"), "request": request}

    def snapshot(self, paths: list | None = None) -> str | None:
        """The work tree before a change ('' with checkpoints off); with `paths`, only those files
        are read again (a file the agent writes). None, after a warning, when git cannot take one:
        then the change asks."""
        if not self.dir:
            return ""
        with self.locked("No snapshot, so no /undo, for this change"):
            # the lock, opened just now ("w" truncates), stamped by the file system's clock; less
            # 2 s: a project on a disk whose clock ticks in seconds (FAT: 2 s), the lock not
            self.since = (self.dir / "amas.lock").stat().st_mtime_ns - 2_000_000_000
            return self._snap("amas snapshot", paths, not paths)

    def record(self, before: str, message: str, paths: list | None = None) -> None:
        """After a change: the files that differ from the snapshot `before` join this turn."""
        with self.locked("No /undo for this change"):
            after = self._snap(f"[amas] {message}", paths, not paths)
            if changed := [p for p in self._changed(before, after) if paths or self._touched(p)]:
                state = self.load()
                turn = next((t for t in state["undo"] if t["id"] == self.turn["id"]), None)
                if not turn:
                    state["undo"].append(turn := {**self.turn, "changes": []})
                turn["changes"].append({"before": before, "after": after, "paths": changed})
                self.store(state)

    def _touched(self, path: str) -> bool:
        """Whether a command changed `path` (or removed it): not if it did not change since the
        snapshot before, though the snapshots differ there (the one before left it out, or git
        ignored it then), nor if it is in what a snapshot left out: undo would delete it."""
        mine = not f"{path}/".startswith(tuple(p.rstrip("/") + "/" for p in self.left))
        with suppress(OSError):
            return mine and os.lstat(self.root / path).st_ctime_ns >= self.since
        return mine

    def _snap(self, message: str, paths: list | None, whole: bool) -> str:
        """A commit of the work tree as it is now: `paths` read again (a file the agent writes, even
        one git ignores), and the `whole` tree; its parent is the newest snapshot, or it is that one
        when nothing changed."""
        staged = self._seed()  # a list at a session's first snapshot: then the whole tree is read
        # as given (git reads a path inside the work tree); a staged one that is a folder now: below
        names = [*map(str, paths or []), *(p for p in staged or [] if not (self.root / p).is_dir())]
        if whole or staged is not None:  # what git tracks, then what is new: a walk for each
            names += self.git("diff-files", "-z", "--name-only").split("\0")[:-1]  # as add -u
            names += self._new()  # a file gone after it was listed is no error: --remove
        self.git("update-index", "--add", "--remove", "-z", "--stdin", stdin=names)
        tree = self.git("write-tree")
        # the newest snapshot's tree, then "-p" and that snapshot: the new one's parent
        keep = self.git("for-each-ref", "--format=%(tree) -p %(objectname)", KEEP).split() or [""]
        if keep[0] == tree:
            return keep[-1]
        commit = self.git("commit-tree", tree, *keep[1:], "-m", message)
        self.git("update-ref", KEEP, commit)
        return commit

    def _seed(self) -> list[str] | None:
        """At a session's first snapshot, the index starts as a copy of the user's, with its
        modification time (git's racy-clean check): fast, and every tracked file in, less what they
        staged and did not commit: returned, for the snapshot to read again from the work tree and
        keep its own copy (a file git ignores, a big one too). Then the whole tree must be read
        (conflicts resolve). None when seeded before."""
        if not self.seed or not self.seed.is_file():
            return None
        shutil.copy2(self.seed, self.dir / "index")
        staged = self.git(f"--git-dir={self.seed.parent}", "diff", "--cached", "-z", "--name-only")
        # a path with a `filter` (LFS, nbstripout, git-crypt) is in git as the filter made it (a
        # pointer, a notebook without its outputs): out of the index, it is new, read as it is
        filtered = self.git("ls-files", "-z", ":(exclude,attr:!filter)")
        if gone := (staged + filtered).split("\0")[:-1]:
            self.git("update-index", "--force-remove", "-z", "--stdin", stdin=gone)
        self.seed = None
        return staged.split("\0")[:-1]

    def _new(self) -> list[str]:
        """The new files git does not ignore, less what snapshots leave out while it stays new, as
        Codex does (named in a warning): a file over words.yaml's `big` bytes, a repository of its
        own (git cannot add one with no commit), and a folder of `many` files or more, counted as
        git would add them, that appeared during the session (a node_modules/, a venv/)."""
        listed = self.git(*UNTRACKED, "--directory").split("\0")
        self.start = set(listed) if self.start is None else self.start  # the user's: all in
        files, left = [], [name for name in listed if name in self.left]
        for name in (name for name in listed[:-1] if name not in self.left):
            # a folder's files, as git would add them (a repository of its own: `x/`); a file: itself
            inside = self.git(*UNTRACKED, "--", f":(literal){name}") if name[-1] == "/" else name
            if inside.count("\0") >= WORDS["many"] and name not in self.start:
                inside, left = "", [*left, name]
            for path in filter(None, inside.split("\0")):
                with suppress(FileNotFoundError):  # gone since: an editor's or a watcher's file
                    big = path.endswith("/") or os.lstat(self.root / path).st_size > WORDS["big"]
                    (left if big else files).append(path)
        if new := [name for name in left if name not in self.left]:
            ui.warning(WORDS["left_out"].format(", ".join(new[:5]) + (", …" if new[5:] else "")))
        self.left = set(left)
        return files

    def _changed(self, a: str, b: str) -> dict[str, str]:
        """The files that differ between two snapshots, each with its status (A, M, D or T)."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b).split("\0")
        return dict(zip(out[1::2], out[::2]))

    def undo(self, n: int | str = 0, redo: bool = False) -> str:
        """Take back (or, to redo, put back) the newest n turns; a redo with no n puts back as many
        as the last undo took back."""
        if not self.dir:
            raise Refused("Checkpoints are off (checkpoint_on_edit: false, or a bare repository).")
        with self.locked():
            state, (source, target) = self.load(), ("undo", "redo")[:: -1 if redo else 1]
            n = n or (state.get("last", 1) if redo else 1)
            if not str(n).isdecimal() or not int(n):
                raise Refused(f"Expected a number of turns, not {n!r}.")
            if not state[source]:
                raise Refused(f"Nothing to {source}.")
            turns = [state[source].pop() for _ in range(min(int(n), len(state[source])))]
            # each snapshot reads them all: the first, before any write, is where undo refuses
            paths = [p for turn in turns for change in turn["changes"] for p in change["paths"]]
            kept = [p for turn in turns for p in self._apply(turn, not redo, paths)]
            state[target] += turns
            self.store(state if redo else {**state, "last": len(turns)})
        what = "; ".join(f"{t['request'][:40]!r}: {files(t, kept)}" for t in turns)
        also = f" Kept as they are, changed since: {', '.join(sorted(set(kept)))}." if kept else ""
        return f"{('Undid', 'Redid')[redo]} {len(turns)} turn{'s'[len(turns) < 2 :]}: {what}.{also}"

    def _apply(self, turn: dict, undo: bool, paths: list[str]) -> list[str]:
        """Take back a turn's changes, newest first (or put them back, oldest first), each file only
        where it still holds what the change (or the undo) left; returns the files kept."""
        kept = []
        for change in turn["changes"][::-1] if undo else turn["changes"]:
            now = self._snap(f"[amas] before /{'undo' if undo else 'redo'}", paths, True)
            at, to = (change["after"], change["before"])[:: 1 if undo else -1]
            differ = self._changed(at, now)
            kept += [p for p in change["paths"] if p in differ or blocked(self.root / p)]
            self._restore(now, to, set(change["paths"]) - set(kept))
        return kept

    def _restore(self, now: str, source: str, paths: set[str]) -> None:
        """Write `paths` as they are in the snapshot `source`, keeping each file's permissions and
        the folders they stand in (git would make a 0600 file 0644, and remove an empty folder)."""
        # the paths that differ from `source`, with their status (the others are right already)
        status = {p: s for p, s in self._changed(now, source).items() if p in paths}
        modes = {p: os.lstat(self.root / p).st_mode for p, s in status.items() if s == "M"}
        for path in (p for p, s in status.items() if s == "D"):
            (self.root / path).unlink()
        if back := [f":(literal){p}" for p, s in status.items() if s != "D"]:
            self.git("restore", "--worktree", f"--source={source}", *FROM_STDIN, stdin=back)
        # git sets the x bit alone (by the umask above, the owner's); a symlink has no mode of its own
        for path, mode in modes.items():
            if not (target := self.root / path).is_symlink():
                os.chmod(target, mode & ~0o111 | 0o111 * os.access(target, os.X_OK))

    def history(self, n: int = 20) -> list[tuple[str, str, str]]:
        """The newest n turns that /undo would take back: time, request, files."""
        turns = self.load()["undo"][::-1][:n] if self.dir else []
        return [(t["time"], t["request"][:40], files(t)) for t in turns]

    def load(self) -> dict:
        with suppress(OSError, ValueError):  # no turns yet, or an unreadable file
            return json.loads((self.dir / "turns.json").read_text())
        return {"undo": [], "redo": []}

    def store(self, state: dict) -> None:
        """Save the turns whole or not at all (a new file renamed into place); pack the snapshots."""
        (self.dir / "turns.new").write_text(json.dumps(state))
        os.replace(self.dir / "turns.new", self.dir / "turns.json")
        # every snapshot stays (each is the next one's parent): git packs them once loose objects
        # pass its gc.auto (6700), in the foreground, under the lock, as no session writes meanwhile
        self.git("-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")


def blocked(path: Path) -> bool:
    """Whether a file stands where a folder above `path` was: writing `path` would replace it
    (git does), even one no snapshot holds (ignored, or over words.yaml's `big` bytes)."""
    return any(folder.is_file() for folder in path.parents)


def files(turn: dict, kept: list[str] = ()) -> str:
    """The files a turn changed, the first few named, less those `kept` as the user changed them."""
    names = sorted({p for change in turn["changes"] for p in change["paths"]} - set(kept))
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if names[5:] else "")
