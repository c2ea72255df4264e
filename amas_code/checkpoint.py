"""Git checkpoints that never lose the user's work: each holds only the file the agent wrote, built
with plumbing so the user's index and files stay untouched; undo puts back the exact bytes and index
entry the file had before the agent wrote it, then moves the branch back one commit."""

import json
import os
import tempfile
import time
from contextlib import suppress
from functools import partialmethod
from pathlib import Path

from git import GitCommandError, InvalidGitRepositoryError, NoSuchPathError, Repo

from amas_code.config import WORDS

NO_REPO = "Checkpoints are off: this is not a git repository. Run `git init` to enable /undo."
RAW = {"stdout_as_string": False, "strip_newline_in_stdout": False}
# A snapshot leaves out files over this size (a 60 MB dump would be copied into .git before every
# command); the stacks keep this many records (each is an argument of the keep ref's update-index).
BIG, MAX_RECORDS = 10_000_000, 300


class Refused(Exception):
    """An undo or redo that would risk someone's work; nothing was changed."""


class Checkpoint:
    def __init__(self, root: str = ".", enabled: bool = True):
        self.repo = None  # not a repository, a bare one (no work tree), or checkpoints turned off
        with suppress(InvalidGitRepositoryError, NoSuchPathError):
            repo = Repo(root, search_parent_directories=True)
            self.repo = repo if enabled and not repo.bare else None
        if self.repo:
            self.root = Path(self.repo.working_tree_dir).resolve()
            self.state_file = Path(self.repo.git_dir, "amas", "checkpoints.json")
            self.state_file.parent.mkdir(exist_ok=True)
            self.own = {"GIT_INDEX_FILE": str(self.state_file.with_name("index"))}  # snapshots'
            known = self.repo.config_reader().get_value("user", "email", "")
            self.filemode = self.repo.config_reader().get_value("core", "filemode", True)
            # commits need an author: words.yaml's, when git has none
            self.repo.git.update_environment(**({} if known else WORDS["identity"]))

    def git(self, *args: str, **kwargs) -> str:
        return self.repo.git.execute(["git", "--literal-pathspecs", *args], **kwargs)

    def before(self, path: Path) -> dict:
        """What undo needs from before the agent writes `path`: {} when there is no repository or
        it is outside the work tree; {"lost": why} when no checkpoint can ever hold it (git ignores
        it, or it belongs to another repository); {"unsaved": why} when git cannot keep it now (a
        merge is under way); else its bytes and index entry."""
        if not self.repo:
            return {}
        try:
            rel = Path(os.path.realpath(path)).relative_to(self.root).as_posix()
            inner = [p for p in Path(rel).parents if p.parts and (self.root / p / ".git").exists()]
            lost = f"{inner[-1]} is a repository of its own" if inner else ""  # a submodule, say
            if lost or self.repo.ignored(rel):  # a commit would publish what the user keeps out
                return {"lost": lost or f"git ignores {rel}"}
            # a lock is met by save(), which then refuses the change
            why = self.busy(WORDS["under_way"])
            before = {"before": self._hash(self.root / rel, write=True), "index": self._index(rel)}
            return {"unsaved": why} if why else {"path": rel, **before}
        except (ValueError, GitCommandError):  # outside the work tree, or inside a submodule
            return {}

    def busy(self, names: tuple | list = ("index.lock", *WORDS["under_way"])) -> str:
        """Why git's state must not be moved now (a merge, rebase, ... or a lock: another git command,
        or Amas, is writing the index; or conflicts, which `git stash pop` leaves with no
        MERGE_HEAD), or ''."""
        found = [f".git/{name} exists" for name in names if Path(self.repo.git_dir, name).exists()]
        found += ["the index has conflicts"] if self.git("ls-files", "--unmerged") else []
        return f"{found[0]}: {WORDS['why']}" if found else ""

    def save(self, before: dict, new: Path, message: str) -> None:
        """Commit the file `new` as the agent's change to before["path"], before it is moved into
        place; when git cannot, `new` is removed and Refused raised: the change is not made."""
        path, head, message = before["path"], self._head(), f"[amas] {message}"
        try:
            after = self._hash(new, write=True)
            disk = "100755" if os.access(new, os.X_OK) else "100644"
            kept = (before["index"] or [disk])[0]  # git's own, when git does not trust the disk
            entry = [kept if kept == "120000" or not self.filemode else disk]
            entry += [self.git("hash-object", "-w", f"--path={path}", "--", str(new))]
            tree, parent = self._tree(head, {path: entry}), ["-p", head] if head else []
            commit = self.git("commit-tree", tree, *parent, "-m", message)
            self._move(commit, head, path, entry)
        except GitCommandError as e:  # a change git cannot record is not made
            new.unlink()
            raise Refused(f"not applied: git refused the checkpoint ({e.stderr.strip()[:200]})")
        record = {**before, "commit": commit, "parent": head, "after": after, "entry": entry}
        self._push({**record, "message": message})

    def snapshot(self) -> str:
        """A commit of the whole work tree as it is now: tracked and untracked files, but not
        ignored ones, nested repositories (git cannot add one with no commit) nor new files over
        BIG bytes. Built through an index of our own (.git/amas/index), so the user's index and
        files stay untouched. '' with no repository; Refused when git cannot make one."""
        if not self.repo:
            return ""
        try:  # pathspecs with magic (no --literal-pathspecs): the big files, each literally
            new = self.git("ls-files", "-z", "-o", "--exclude-standard", env=self.own).split("\0")
            sizes = {n: os.lstat(self.root / n).st_size for n in new}  # a nested repository: `dir/`
            big = [f":(exclude,literal){n}" for n, s in sizes.items() if s > BIG or n[-1:] == "/"]
            self.repo.git.execute(["git", "add", "-A", "--", ".", *big], env=self.own)
            tree = self.git("write-tree", env=self.own)
            return self.git("commit-tree", tree, "-m", "amas snapshot")
        except GitCommandError as e:
            raise Refused(f"git could not take a snapshot ({e.stderr.strip()[:200]})") from None

    def record(self, before: str, message: str) -> None:
        """After a shell command: what it changed since the snapshot `before`, kept for undo (a
        command that changed no file leaves no record)."""
        after = self.snapshot()
        if paths := self._changed(before, after):
            self._push({"commit": after, "parent": before, "paths": paths, "message": message})

    def _changed(self, a: str, b: str, *paths: str) -> list[str]:
        """The files that differ between two snapshots (or checkpoints), among `paths` if given."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b, "--", *paths)
        return [name for name in out.split("\0") if name]

    def _push(self, record: dict) -> None:
        """A new record on the undo stack (the oldest dropped past MAX_RECORDS); redo is emptied."""
        state = self.load()
        state["undo"] = [*state["undo"], {**record, "time": time.strftime("%F %T")}][-MAX_RECORDS:]
        self.store({**state, "redo": []})

    def history(self, n: int = 20) -> list[tuple[str, str, str]]:
        stack = self.load()["undo"] if self.repo else []
        return [(r["commit"][:7], r["time"], r["message"]) for r in stack[::-1][:n]]

    def _repeat(self, n: int | str = 0, *, undo: bool) -> str:
        """Undo or redo n checkpoints; redo without n, as many as the last undo took back."""
        if not self.repo or self.busy():
            raise Refused(f"{self.busy()}; finish it, then try again." if self.repo else NO_REPO)
        n = n or (1 if undo else self.load().get("last", 1))
        if not str(n).isdecimal() or not int(n):
            raise Refused(f"Expected a number of checkpoints, not {n!r}.")
        done, verb = [], "Undid" if undo else "Redid"
        for _ in range(int(n)):
            try:
                done.append(self._step(undo))
            except Refused as e:
                raise Refused(f"{verb} {len(done)} of {n}, then stopped: {e}" if done else str(e))
        if undo:
            self.store({**self.load(), "last": int(n)})
        return f"{verb} {'; '.join(done)}."

    undo = partialmethod(_repeat, undo=True)
    redo = partialmethod(_repeat, undo=False)

    def _step(self, undo: bool) -> str:
        state = self.load()
        stack, other = (state["undo"], state["redo"]) if undo else (state["redo"], state["undo"])
        if not stack:
            raise Refused(f"Nothing to {'undo' if undo else 'redo'} on this branch.")
        rec = stack[-1]
        (self._files if "paths" in rec else self._file)(rec, undo)
        other.append(stack.pop())
        self.store(state)
        return f"{rec['commit'][:7]} {rec.get('path', rec['message'])}"

    def _files(self, rec: dict, undo: bool) -> None:
        """Put back what a shell command changed, from the snapshot before it (to redo: after it),
        when each file still holds what the command (or the undo) left; HEAD and index stay."""
        at, to = (rec["commit"], rec["parent"]) if undo else (rec["parent"], rec["commit"])
        if changed := self._changed(at, self.snapshot(), *rec["paths"]):
            raise Refused(f"{changed[0]} was changed after that command; kept, nothing undone.")
        self.git("restore", f"--source={to}", "--worktree", "--", *rec["paths"], env=self.own)

    def _file(self, rec: dict, undo: bool) -> None:
        """Put back one file the agent wrote: its bytes and index entry, then the branch."""
        at, to = (rec["commit"], rec["parent"]) if undo else (rec["parent"], rec["commit"])
        self._check(rec, at, undo)
        blob, entry = (rec["before"], rec["index"]) if undo else (rec["after"], rec["entry"])
        target, data = self.root / rec["path"], blob and self.git("cat-file", "blob", blob, **RAW)
        try:  # git first: if it fails, nothing has changed
            self._move(to, at, rec["path"], entry)
        except GitCommandError as e:  # a commit raced in, or a stale .git/refs/heads/*.lock
            raise Refused(f"git refused to move the branch: {e.stderr.strip()[:200]}") from None
        if blob:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        else:
            target.unlink(missing_ok=True)

    def _check(self, rec: dict, at: str | None, undo: bool) -> None:
        head, short = self._head(), rec["commit"][:7]
        if head != at:
            raise Refused(f"HEAD moved since {short} (to {(head or '-')[:7]}); it stays as is.")
        if self._hash(self.root / rec["path"]) != (rec["after"] if undo else rec["before"]):
            raise Refused(f"{rec['path']} was changed after {short}; kept as is, nothing undone.")

    def _head(self) -> str | None:
        """HEAD's commit, from a git process of its own: GitPython's long-lived `cat-file`, which
        Ctrl-C kills along with the command it interrupts, would leave us blind to HEAD."""
        return self.git("rev-parse", "-q", "--verify", "HEAD", with_exceptions=False) or None

    def _move(self, new: str | None, old: str | None, path: str, entry: list | None) -> None:
        """Set path's index entry, then move the branch from old to new: git checks old, so a racing
        commit is never lost. The index first, as it is the step that meets a lock; when git then
        refuses the move, the entry is put back as it was, and the error goes up."""
        move = ["HEAD", new, old or "0" * 40] if new else ["-d", "HEAD", old]
        kept = self._index(path)
        self._update_index({path: entry})
        try:
            self.git("update-ref", *move)
        except GitCommandError:
            self._update_index({path: kept})
            raise

    def _hash(self, path: Path, write: bool = False) -> str | None:
        """The blob of the file's exact bytes (no autocrlf, filters or ident); None: no file."""
        command = ["hash-object", *(["-w"] if write else []), "--no-filters", "--", str(path)]
        return self.git(*command) if path.is_file() else None

    def _index(self, path: str) -> list | None:
        return self.git("ls-files", "-s", "-z", "--", path).split()[:2] or None

    def _update_index(self, entries: dict, env: dict | None = None) -> None:
        """Set index entries from {path: [mode, sha] or None (remove it)} in one git call; as
        arguments, so any name works (the stacks are capped, so they fit in ARG_MAX)."""
        sets = [a for p, e in entries.items() if e for a in ("--cacheinfo", f"{e[0]},{e[1]},{p}")]
        gone = [p for p, e in entries.items() if not e]
        self.git("update-index", "--add", *sets, "--force-remove", "--", *gone, env=env)

    def _tree(self, base: str | None, entries: dict) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp, "index"))}
            self.git("read-tree", base or "--empty", env=env)
            self._update_index(entries, env)
            return self.git("write-tree", env=env)

    def load(self) -> dict:
        with suppress(OSError, ValueError):  # no checkpoints yet, or an unreadable file
            return json.loads(self.state_file.read_text())
        return {"undo": [], "redo": []}

    def store(self, state: dict) -> None:
        """Save the stacks, and a ref that keeps their objects alive through `git gc`: the bytes and
        the staged entries undo and redo put back. One ref per worktree (`refs/amas/keep-.git`, or
        `-NAME` for a linked one), since each has its own stacks and gc in one must keep the other's."""
        self.state_file.write_text(json.dumps(state, indent=1))
        records = state["undo"] + state["redo"]
        blobs = {r.get(k) for r in records for k in ("before", "after")} - {None}
        blobs |= {r["index"][1] for r in records if r.get("index")}  # what the user had staged
        tree = self._tree(None, {sha: ["100644", sha] for sha in blobs})
        snapshots = {r[k] for r in records if "paths" in r for k in ("commit", "parent")}
        parents = [a for c in {r["commit"] for r in state["redo"]} | snapshots for a in ("-p", c)]
        keep = self.git("commit-tree", tree, *parents, "-m", "amas undo data")
        self.git("update-ref", f"refs/amas/keep-{Path(self.repo.git_dir).name}", keep)
