"""Op bundles: the outputs of one op as one verified cache entry, and what `out/` already holds.

An op's outputs (tiling object, aclnn C sources and header, kernel binaries and their JSONs, in
every package and SoC) are a function of its *op key*: the sha256 of

  * our code (`fingerprint.code_files`: opbuild's modules, templates, schemas and C headers), and
    the toolchain's identity and version (the compile steps' OPBUILD_KEY);
  * every planned step of the op: its kind, targets and sources (relative to the project) and
    its signature (the command line, macros, SoC, ...);
  * the content of every file the steps read: the spec, the kernel and tiling sources, every file
    in the op's directory, and every header they `#include` (found the way SCons's C scanner finds
    them; headers the include path does not resolve are the toolchain's, covered by its version).

The key is a `fingerprint.Key`: files named relative to the project, hashed by content, so a
checkout at another path computes the same key. With it, at declaration time each op is one of

  * **current**: `<out>/.opbuild/ops.json` says its outputs were made from this key and every
    one of them has the stat recorded then: nothing of the op is declared to SCons;
  * **restored**: OPBUILD_CACHE_DIR holds its bundle `<XX>/<key>.opbundle` (with the `.sha256`
    beside it, verified on read like every entry): its files are written, nothing is declared;
  * **built**: its steps go to SCons (whose per-file cache may still serve them); after a complete
    build its outputs are packed into a bundle for the next checkout.

With OPS=, the ops not selected are keyed too: those still current stay in their packages as
built (**kept**); those built earlier but changed since are left out (**dropped**, and said so).
The files the record lists for a dropped op, and for a recorded op no longer under ops/
(**removed**), are deleted (`remove_outputs`: only those, only under `out/`), so the packages and
`opbuild pack` hold the current set of ops only.

Why: at hundreds of ops SCons's per-node work dominates a build whose every compile is cached
(thousands of nodes to sign, fetch and record). A bundle turns an op's ~16 steps into one read,
one hash and its files written; SCons only sees the steps that combine the ops of a package.

Safety: a bundle is used only if its sha256 matches; its paths must stay under `out/`; the steps
of an op whose files SCons did not write itself all run (AlwaysBuild) when SCons builds that op,
so SCons's own records (.sconsign) can never vouch for a file restored from elsewhere. Nothing is
deleted first: until a step succeeds, the package keeps the file it had (a failed build leaves a
working package).
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from opbuild.atomic import atomic_write
from opbuild.builder import cache
from opbuild.builder.plan import OpPlan
from opbuild.builder.stores import LAYERS, LocalStore, SharedStore
from opbuild.fingerprint import ContentHashes, FileStat, Key, file_stat
from opbuild.portable import portable_path

FORMAT = 1
MAGIC = b"OPBUNDLE1\n"
SUFFIX = cache.BUNDLE_SUFFIX
INSTALLED_FILE = Path(".opbuild") / "ops.json"
"""Relative to the build's output directory."""

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*(?:include|import)[ \t]*(<|")([^>"]+)[>"]', re.M)


class BundleError(Exception):
    """A bundle that cannot be used (malformed, or naming paths outside the output directory)."""


class InputHasher(ContentHashes):
    """Content hashes and #include lists of input files, each computed once per build."""

    def __init__(self) -> None:
        super().__init__()
        self._includes: dict[str, list[tuple[bool, str]]] = {}
        self._scans: dict[tuple, frozenset[str]] = {}

    def includes(self, path: str) -> list[tuple[bool, str]]:
        """(quoted, name) of each #include / #import line of a C file."""
        found = self._includes.get(path)
        if found is None:
            try:
                with open(path, "rb") as f:
                    text = f.read()
            except OSError:
                text = b""
            found = [(m.group(1) == b'"', m.group(2).decode(errors="replace")) for m in _INCLUDE.finditer(text)]
            self._includes[path] = found
        return found

    def scan(self, source: str, include_dirs: list[str], root: Path, produced: set[str]) -> set[str]:
        """Every existing file `source` includes, directly or not, resolved like SCons's C scanner:
        "x" in the including file's directory first, <x> in the include path first. Files another
        step of the op writes (generated headers) are not followed: their content follows from
        the spec and the generator, both in the key."""
        memo = (source, tuple(include_dirs))
        if memo in self._scans:
            return set(self._scans[memo])
        dirs = [d if os.path.isabs(d) else str(root / d) for d in include_dirs]
        found: set[str] = set()
        stack = [source]
        while stack:
            current = stack.pop()
            here = os.path.dirname(current)
            for quoted, name in self.includes(current):
                search = [here, *dirs] if quoted else [*dirs, here]
                for d in search:
                    candidate = os.path.normpath(os.path.join(d, name))
                    if candidate in produced:
                        break
                    if os.path.isfile(candidate):
                        if candidate not in found:
                            found.add(candidate)
                            stack.append(candidate)
                        break
        self._scans[memo] = frozenset(found)
        return found


def common_key(base: dict) -> str:
    """The part of every op key that is not the op's: our code and the toolchain."""
    return Key("op-common").text(str(FORMAT)).code().json(base).hexdigest()


def op_inputs(plan: OpPlan, root: Path, hasher: InputHasher, global_inputs: set[str]) -> list[str]:
    """Every file the op's steps read that no step of the op writes (see the module docstring)."""
    produced = set(plan.targets())
    inputs: set[str] = set()
    for step in plan.steps:
        leaves = [s for s in step.sources if s not in produced and s not in global_inputs]
        inputs.update(leaves)
        if step.scan_includes is not None:
            for source in leaves:
                inputs |= hasher.scan(source, step.scan_includes, root, produced)
    try:
        with os.scandir(plan.spec.op_dir) as entries:
            inputs.update(e.path for e in entries if e.is_file() and not e.name.startswith("."))
    except OSError:
        pass
    return sorted(inputs)


def op_key(plan: OpPlan, inputs: list[str], root: Path, common: str, hasher: InputHasher) -> str:
    def rel(path: str) -> str:  # the plan's paths are absolute and normalised; keys never name them
        return portable_path(path, root)

    key = Key("op", hasher).text(common, plan.spec.op)
    for step in plan.steps:
        key.json([step.kind, [rel(t) for t in step.targets], [rel(s) for s in step.sources],
                  step.overrides["OPBUILD_SIG"], step.stored])
    for path in inputs:
        key.file(path, root)
    return key.hexdigest()


def input_digests(inputs: list[str], root: Path, hasher: InputHasher) -> dict[str, str]:
    """{name relative to the project: content digest} of an op's inputs (kept in the ops record, so
    EXPLAIN=1 can name the input whose change made the op's key differ)."""
    return {portable_path(path, root): hasher.digest(path) for path in inputs}


# ---- the bundle file ---------------------------------------------------------------------------------

def bundle_store(cache_dir: str | Path) -> SharedStore:
    return SharedStore(str(cache_dir), "bundles")


def bundle_path(cache_dir: str | Path, key: str) -> str:
    return bundle_store(cache_dir).path(key)


def pack(op: str, key: str, files: list[str], out: Path) -> bytes:
    """MAGIC, one JSON line (op, key, each file's path relative to `out`, mode and size), then the
    files' bytes in that order."""
    entries, blobs = [], []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        entries.append({"path": os.path.relpath(path, out), "mode": os.stat(path).st_mode & 0o777, "size": len(data)})
        blobs.append(data)
    header = json.dumps({"op": op, "key": key, "files": entries}, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([MAGIC, header, b"\n", *blobs])


def bundle_problem(data: bytes, key: str) -> str | None:
    """Why a cache entry is not a well-formed bundle of `key` (None when it is)."""
    try:
        unpack(data, Path("/nonexistent/out"), key)
    except BundleError as exc:
        return f"malformed op bundle: {exc}"
    return None


def verify_cache(root: Path, remove: bool = True) -> list[tuple[Path, str]]:
    """`opbuild cache verify`: cache.verify with each op bundle's structure checked too."""
    return cache.verify(root, remove, check_bundle=bundle_problem)


def unpack(data: bytes, out: Path, key: str) -> list[tuple[Path, int, memoryview]]:
    """(absolute path under `out`, mode, bytes) of each file of a bundle; BundleError if the bundle
    is malformed, for another key, or names a path outside `out`."""
    if not data.startswith(MAGIC):
        raise BundleError("not an op bundle (bad magic)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        entries = header["files"]
        if header["key"] != key:
            raise BundleError(f"bundle of key {header['key'][:12]}..., not {key[:12]}...")
    except (ValueError, KeyError, TypeError) as exc:
        raise BundleError(f"unreadable header: {exc}") from None
    view, offset, files = memoryview(data), end + 1, []
    top = os.path.abspath(out)
    for entry in entries:
        try:
            rel, mode, size = str(entry["path"]), int(entry["mode"]), int(entry["size"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"bad file entry {entry!r}: {exc}") from None
        target = os.path.abspath(os.path.join(top, rel))
        if os.path.isabs(rel) or not target.startswith(top + os.sep):
            raise BundleError(f"file {rel!r} is outside the output directory")
        if size < 0 or offset + size > len(data):
            raise BundleError(f"file {rel!r} is truncated")
        files.append((Path(target), mode & 0o777, view[offset:offset + size]))
        offset += size
    if offset != len(data):
        raise BundleError(f"{len(data) - offset} bytes after the last file")
    return files


def store(cache_dir: str, plan: OpPlan, key: str, out: Path) -> bool:
    """Pack the op's outputs into its bundle (unless the cache has it). False if a file is missing."""
    store = bundle_store(cache_dir)
    if store.has(key):
        return True
    try:
        data = pack(plan.spec.op, key, plan.stored_files(), out)
    except FileNotFoundError:
        return False
    store.put(key, data, target=plan.spec.op)
    return True


def restore(cache_dir: str, key: str, op: str, out: Path, expected: list[str]) -> list[str] | None:
    """Write the op's files from its bundle; their paths, or None when the cache has no usable
    bundle (a corrupt one is reported on stderr, logged, removed: the op is then built)."""
    return restore_from(cache_dir, key, op, out, expected)[0]


def restore_from(cache_dir: str, key: str, op: str, out: Path, expected: list[str]) -> tuple[list[str] | None, str]:
    """`restore`, and the tier the bundle came from ("local", "remote"; "" when not restored)."""
    store = bundle_store(cache_dir)
    path = store.path(key)
    found = store.fetch(path, target=op)
    if found is None:
        return None, ""
    data = found.data
    try:
        files = unpack(data, out, key)
        if sorted(str(p) for p, _, _ in files) != sorted(expected):
            raise BundleError("its files are not the op's outputs")
    except BundleError as exc:
        store.reject(path, op, str(exc))
        return None, ""
    try:
        for target, mode, blob in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, blob, mode | 0o200)
    except OSError as exc:  # out/ not writable, disk full: the op is built (and says why if it fails too)
        sys.stderr.write(f"opbuild: cache: cannot restore {op} from {path}: {exc}; building the op\n")
        return None, ""
    return [str(p) for p, _, _ in files], found.tier


# ---- what out/ holds -----------------------------------------------------------------------------------

@dataclass
class Installed:
    key: str
    origin: str
    """"build" (SCons wrote the files, and its .sconsign describes them) or "bundle"."""
    files: tuple[FileStat, ...]
    common: str = ""
    """The common key (our code, the toolchain) the op's key was made with."""
    inputs: dict[str, str] = field(default_factory=dict)
    """{input named relative to the project: its content digest} when the key was made."""


class InstalledOps:
    """`<out>/.opbuild/ops.json` (the ops record): per op, the key its outputs were made from, who
    wrote them (SCons, or a bundle restore), their stat, and what the key was made of (to say
    why an op is rebuilt). Plain JSON in the build's local store: readable by any later opbuild
    (an unreadable record makes every op's outputs suspect: they would all be deleted and built)."""

    def __init__(self, out: Path) -> None:
        self.store = LocalStore(out / INSTALLED_FILE.parent, "ops")
        self.path = Path(self.store.path(INSTALLED_FILE.name))
        self.ops: dict[str, Installed] = {}
        self.package_files: list[str] = []
        """The files the steps combining the ops wrote (libraries, configs, op info of each package)
        in the last complete build: those a later build no longer makes are removed
        (scons_tool.declare_build, with `remove_outputs`)."""
        try:
            data = json.loads(self.store.get(INSTALLED_FILE.name) or b"{}")
            if data.get("format") == FORMAT:
                self.ops = {op: Installed(e["key"], e["origin"], tuple(tuple(s) for s in e["files"]),
                                          e.get("common", ""), dict(e.get("inputs", {})))
                            for op, e in data["ops"].items()}
                self.package_files = [str(f) for f in data.get("package_files", [])]
        except Exception:  # noqa: BLE001 - missing or unreadable: nothing is known to be current
            self.ops = {}

    def is_current(self, op: str, key: str, files: list[str]) -> bool:
        entry = self.ops.get(op)
        if entry is None or entry.key != key or [s[0] for s in entry.files] != files:
            return False
        return all(file_stat(s[0]) == s for s in entry.files)

    def built_by_scons(self, op: str) -> bool:
        entry = self.ops.get(op)
        return entry is not None and entry.origin == "build"

    def set(self, op: str, key: str, origin: str, files: list[str], common: str = "",
            inputs: dict[str, str] | None = None) -> bool:
        stats = [file_stat(f) for f in files]
        present = [s for s in stats if s is not None]
        if len(present) != len(stats):
            self.ops.pop(op, None)
            return False
        self.ops[op] = Installed(key, origin, tuple(present), common, dict(inputs or {}))
        return True

    def forget(self, op: str) -> None:
        self.ops.pop(op, None)

    def unfinished(self, op: str) -> None:
        """The op is being built: not current any more (its key is cleared), but its origin is
        kept, so that files SCons wrote stay vouched for by SCons after a failed build."""
        entry = self.ops.get(op)
        if entry is not None:
            self.ops[op] = Installed("", entry.origin, entry.files, entry.common, entry.inputs)

    def why_not_current(self, op: str, key: str, common: str, inputs: dict[str, str]) -> tuple[str, str]:
        """(reason, layer) an op is not current: what differs between its recorded key and `key`."""
        entry = self.ops.get(op)
        if entry is None or not entry.key:
            return ("not built yet" if entry is None else "its last build did not finish"), "ops"
        if entry.key == key:
            return "its outputs in out/ changed", "ops"
        if entry.common and entry.common != common:
            return "opbuild's code or the toolchain changed", "fingerprint"
        changed = [n for n in sorted(inputs) if n in entry.inputs and entry.inputs[n] != inputs[n]]
        added = [n for n in sorted(inputs) if n not in entry.inputs]
        removed = [n for n in sorted(entry.inputs) if n not in inputs]
        parts = ([f"{', '.join(changed)} changed"] if changed else []) + \
                ([f"{', '.join(added)} new"] if added and entry.inputs else []) + \
                ([f"{', '.join(removed)} removed"] if removed else [])
        return ("; ".join(parts) if parts else "its steps or options changed"), "fingerprint"

    def save(self) -> None:
        data = {"format": FORMAT, "ops": {op: {"key": e.key, "origin": e.origin, "files": [list(s) for s in e.files],
                                               "common": e.common, "inputs": e.inputs}
                                          for op, e in sorted(self.ops.items())},
                "package_files": sorted(self.package_files)}
        self.store.put(INSTALLED_FILE.name, json.dumps(data, separators=(",", ":"), allow_nan=False, sort_keys=True).encode())


# ---- deciding, per op, what the build does with it -------------------------------------------------------

@dataclass
class Decision:
    """What a build does with each op (see the module docstring), and the records it keeps."""

    installed: InstalledOps
    out: Path
    keys: dict[str, str]
    inputs: dict[str, list[str]]
    to_build: list[OpPlan]
    """Declared to SCons."""
    restored: list[tuple[OpPlan, str]]
    """Written from their bundles (with their keys)."""
    current: list[OpPlan]
    """Selected, and their outputs in out/ are current: nothing to do."""
    kept: list[OpPlan]
    """Not selected (OPS=) but current: they stay in their packages as built."""
    dropped: list[str]
    """Not selected, built before, no longer current: left out of the packages (and their files
    removed from out/)."""
    rebuild: list[OpPlan] = field(default_factory=list)
    """Of `to_build`, those whose files SCons did not write: every step of theirs runs."""
    common: str = ""
    digests: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per op, its inputs' content digests (recorded with the op, for the next build's reasons)."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """Per op: what the build does with it and which layer decided (EXPLAIN=1)."""
    from_remote: set[str] = field(default_factory=set)
    """Of `restored`, the ops whose bundle came from the remote tier (OPBUILD_CACHE_URL)."""
    removed: list[str] = field(default_factory=list)
    """Ops built before that are no longer under ops/: their recorded outputs were deleted."""

    def undeclared(self) -> tuple[set[str], set[str], set[str]]:
        """Input files, output files and op directories of every op not in the SCons graph."""
        inputs: set[str] = set()
        outputs: set[str] = set()
        dirs: set[str] = set()
        for plan in [*self.current, *self.kept, *(p for p, _ in self.restored)]:
            inputs.update(self.inputs[plan.spec.op])
            outputs.update(plan.stored_files())
            dirs.add(str(plan.spec.op_dir))
        return inputs, outputs, dirs

    def record_built(self, built: list[OpPlan], cache_dir: str | None) -> None:
        """After the build: `built` (every target of theirs built or up to date) are current, and
        their bundles go to `cache_dir`; the other ops SCons had are forgotten."""
        done = {plan.spec.op for plan in built}
        rebuilt = {plan.spec.op for plan in self.rebuild}
        for plan in self.to_build:
            op = plan.spec.op
            if op not in done:  # failed or interrupted: built again next time, from what it has
                if op in rebuilt:
                    self.installed.forget(op)  # (files SCons did not write may remain)
                else:
                    self.installed.unfinished(op)
            elif self.installed.set(op, self.keys[op], "build", plan.stored_files(), self.common,
                                    self.digests.get(op)) and cache_dir:
                try:
                    store(cache_dir, plan, self.keys[op], self.out)
                except OSError as exc:
                    sys.stderr.write(f"opbuild: cache: cannot store the bundle of {op}: {exc}\n")
        self.installed.save()


def decide(plans: list[OpPlan], others: list[OpPlan], root: Path, out: Path, base_key: dict, global_outputs: set[str],
           cache_dir: str | None, jobs: int) -> Decision:
    """Key every op; restore the selected ones whose outputs are not current from their bundles
    when the cache has them; remove the outputs SCons did not write of those left to build."""
    installed = InstalledOps(out)
    common = common_key(base_key)
    hasher = InputHasher()
    keys: dict[str, str] = {}
    inputs: dict[str, list[str]] = {}
    digests: dict[str, dict[str, str]] = {}
    for plan in [*plans, *others]:
        op = plan.spec.op
        inputs[op] = op_inputs(plan, root, hasher, global_outputs)
        keys[op] = op_key(plan, inputs[op], root, common, hasher)
        digests[op] = input_digests(inputs[op], root, hasher)
    verdicts: dict[str, str] = {}
    current = [p for p in plans if installed.is_current(p.spec.op, keys[p.spec.op], p.stored_files())]
    current_ops = {p.spec.op for p in current}
    for plan in current:
        verdicts[plan.spec.op] = f"up to date ({LAYERS['ops']})"
    wanted = [p for p in plans if p.spec.op not in current_ops]
    why = {p.spec.op: installed.why_not_current(p.spec.op, keys[p.spec.op], common, digests[p.spec.op]) for p in wanted}
    found = restore_all(cache_dir, wanted, keys, out, jobs)
    restored, to_build, rebuild = [], [], []
    from_remote: set[str] = set()
    for plan in wanted:
        op, stored = plan.spec.op, plan.stored_files()
        reason, layer = why[op]
        if found.get(op):
            installed.set(op, keys[op], "bundle", stored, common, digests[op])
            restored.append((plan, keys[op]))
            if found[op] == "remote":
                from_remote.add(op)
            verdicts[op] = f"restored ({LAYERS['bundles']}{', remote' if found[op] == 'remote' else ''}); " \
                           f"out/ was not current: {reason} ({LAYERS[layer]})"
            continue
        bundle = f"; no bundle in the {LAYERS['bundles']}" if cache_dir else ""
        verdicts[op] = f"rebuilt: {reason} ({LAYERS[layer]}){bundle}; its steps: as SCons decides ({LAYERS['scons']})"
        if installed.built_by_scons(op):
            installed.unfinished(op)
        else:
            # Files SCons did not write (restored, or left by an interrupted restore): its
            # .sconsign may describe other content, so every step of the op runs (not deleted
            # first: a running app keeps them until their replacements are built).
            installed.forget(op)
            rebuild.append(plan)
        to_build.append(plan)
    kept = [p for p in others if installed.is_current(p.spec.op, keys[p.spec.op], p.stored_files())]
    kept_ops = {p.spec.op for p in kept}
    dropped = sorted(p.spec.op for p in others if p.spec.op not in kept_ops and p.spec.op in installed.ops)
    for plan in kept:
        verdicts[plan.spec.op] = f"not selected (OPS=), kept as built ({LAYERS['ops']})"
    for plan in others:
        if plan.spec.op in dropped:
            reason, layer = installed.why_not_current(plan.spec.op, keys[plan.spec.op], common, digests[plan.spec.op])
            verdicts[plan.spec.op] = f"not selected (OPS=), left out: {reason} ({LAYERS[layer]})"
    present = {p.spec.op for p in [*plans, *others]}
    removed = sorted(op for op in installed.ops if op not in present)
    # Ops left out of the packages (removed from ops/, or OPS= and changed since built): the files
    # the build wrote for them go, so the packages (and `opbuild pack`) hold only the current set.
    wanted_files = {f for p in [*plans, *others] if p.spec.op not in dropped for f in p.stored_files()}
    for op in [*removed, *dropped]:
        remove_outputs([s[0] for s in installed.ops[op].files if s[0] not in wanted_files], out)
        installed.forget(op)
    installed.save()
    return Decision(installed, out, keys, inputs, to_build, restored, current, kept, dropped, rebuild,
                    common, digests, verdicts, from_remote, removed)


def remove_outputs(files: list[str], out: Path) -> list[str]:
    """Delete `files` (what the build recorded writing), only those under `out`, and the
    directories that leaves empty (up to `out`); the paths deleted. A file already gone is fine."""
    root = os.path.realpath(out)
    deleted: list[str] = []
    dirs: set[str] = set()
    for name in files:
        path = os.path.abspath(name)
        if not os.path.realpath(os.path.dirname(path)).startswith(root + os.sep):
            continue  # (never outside the output directory, whatever a record says)
        try:
            os.unlink(path)
        except (FileNotFoundError, IsADirectoryError):
            continue  # (already gone; a directory is never a recorded output)
        deleted.append(path)
        dirs.add(os.path.dirname(path))
    for d in sorted(dirs, key=len, reverse=True):
        while d.startswith(root + os.sep):
            try:
                os.rmdir(d)
            except OSError:
                break  # not empty (or gone): stop going up
            d = os.path.dirname(d)
    return deleted


def restore_all(cache_dir: str | None, plans: list[OpPlan], keys: dict[str, str], out: Path, jobs: int) -> dict[str, str]:
    """Restore each op's bundle, if the cache has it; {op: the tier it came from, "" when not
    restored} ("local": OPBUILD_CACHE_DIR, "remote": OPBUILD_CACHE_URL). Writing files is mostly
    waiting on the file system (creating a file took 0.03-0.5 ms on the same ext4 from one run to
    the next), so several ops are restored at once: at least 8, whatever -j says."""
    from concurrent.futures import ThreadPoolExecutor

    if not cache_dir or not plans:
        return {}

    def one(plan: OpPlan) -> tuple[str, str]:
        op = plan.spec.op
        return op, restore_from(cache_dir, keys[op], op, out, plan.stored_files())[1]

    with ThreadPoolExecutor(max_workers=min(32, max(8, jobs))) as pool:
        return dict(pool.map(one, plans))
