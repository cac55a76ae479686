"""Which specs a build works on, loaded and fully checked before anything is declared.

Loading and checking a spec (`opbuild.validate.validate_op`, the very checks of `opbuild
validate`: YAML with marks, JSON schema, semantics, C symbols, aclnn names, the simplified-key
consistency check) costs a few milliseconds; for hundreds of ops that would
dominate a no-op `scons ops`. So checked specs are cached in `<out>/.opbuild/specs.pickle`,
each keyed by the stat (size, mtime, ctime, inode) of every file it was read from (the files of
its op directory and the sources it names) and by the stat of our code (`fingerprint.code_files`).
A spec whose files changed, or that was written too recently for its mtime to be trusted, is
loaded again. Both spec caches go through the one cache interface (stores.py): the stat cache is
an entry of the build's local store, the shared one entries of OPBUILD_CACHE_DIR by content key. Only valid specs are cached, and the cache is written only after the
whole selection passed, so a broken spec leaves nothing under `out/`.

The checks between the ops (`spec.project_checks.project_problems`, those of `opbuild validate`
too: an op defined twice, clashing names, overlapping ONNX plugins) run on every spec, cached
or not, each time: about 0.1 ms per op (they read the ops' C sources).
"""

from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

from opbuild import nonfinite
from opbuild.builder.stores import LAYERS, LocalStore, SharedStore
from opbuild.fingerprint import FileStat, Key, code_files, stats
from opbuild.spec import SpecError, find_specs
from opbuild.spec.model import OpSpec
from opbuild.spec.project_checks import project_problems
from opbuild.spec.serialize import spec_from_dict, spec_to_dict
from opbuild.validate import validate_op

CACHE_FORMAT = 1
CACHE_FILE = Path(".opbuild") / "specs.pickle"
"""The spec cache, relative to the build's output directory."""

RACY_SECONDS = 2.0
"""A file modified less than this before the cache is written may change again within the same
mtime tick; its spec is not cached (it is loaded again next time)."""

class SelectionError(Exception):
    """The specs cannot be built: invalid, unknown op names, or keys that disagree with binaries."""


Stamp = tuple[FileStat, ...]


def _spec_files(spec_file: Path, spec: OpSpec | None = None) -> list[str]:
    """Every file a spec's validity may depend on: its op directory's files, and the sources it
    names (which may live elsewhere)."""
    d = spec_file.parent
    try:
        files = {os.path.join(d, e.name) for e in os.scandir(d) if e.is_file()}
    except OSError:
        files = set()
    files.add(str(spec_file))
    if spec is not None:
        files.update(str(spec.op_dir / s.source) for s in spec.sources)
        if spec.key_rule.py_module:
            files.add(str(spec.op_dir / f"{spec.key_rule.py_module}.py"))
        if spec.is_ascendc:  # its checked spec holds what its sources say (the tiling class in op_host/*.h ...)
            for source in spec.sources:
                folder = (spec.op_dir / source.source).parent
                try:
                    files.update(str(f) for f in folder.rglob("*") if f.is_file())
                except OSError:
                    pass
    return sorted(files)


@dataclass
class _Entry:
    files: list[str]
    stamp: Stamp
    spec: OpSpec


class SpecCache:
    """Checked specs from the last build, keyed by absolute spec path (see the module docstring)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.store = LocalStore(path.parent, "specs") if path is not None else None
        self.checker = stats(code_files())
        self.entries: dict[str, _Entry] = {}
        self.dirty = False
        if path is None or self.store is None:
            return
        try:
            data = pickle.loads(self.store.get(path.name) or b"")
            if data.get("format") == CACHE_FORMAT and data.get("checker") == self.checker:
                self.entries = data["entries"]
        except Exception:  # noqa: BLE001 - a missing or unreadable cache is just empty
            self.entries = {}

    def get(self, spec_file: Path) -> OpSpec | None:
        entry = self.entries.get(str(spec_file))
        if entry is None:
            return None
        files = sorted(set(entry.files) | set(_spec_files(spec_file)))
        if files != entry.files or stats(files) != entry.stamp:
            return None
        return entry.spec

    def put(self, spec_file: Path, spec: OpSpec) -> None:
        files = _spec_files(spec_file, spec)
        stamp = stats(files)
        if stamp is None:
            return
        newest = max(s[2] for s in stamp) / 1e9
        if newest > time.time() - RACY_SECONDS:  # could change again unseen within one mtime tick
            self.entries.pop(str(spec_file), None)
        else:
            self.entries[str(spec_file)] = _Entry(files, stamp, spec)
        self.dirty = True

    def keep_only(self, spec_files: list[Path]) -> None:
        """Forget specs that are no longer there."""
        wanted = {str(f) for f in spec_files}
        for name in [n for n in self.entries if n not in wanted]:
            del self.entries[name]
            self.dirty = True

    def save(self) -> None:
        if self.path is None or self.store is None or not self.dirty:
            return
        data = {"format": CACHE_FORMAT, "checker": self.checker, "entries": self.entries}
        self.store.put(self.path.name, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))


class SharedSpecs:
    """Checked specs in the shared build cache (OPBUILD_CACHE_DIR), keyed by content, so a clean
    checkout loads the specs some build already checked without checking them again (the stat
    cache above lives in `out/`, which a clean checkout does not have).

    Key (`fingerprint.Key`): our code, the op directory's name and the name and content of every
    file in it. Entry `<XX>/<key>.opspec`: the spec as `spec_to_dict` JSON,
    stored and verified like every cache entry (a corrupt one is reported, removed, and the spec
    checked). Only specs whose sources all live in their op directory are stored: nothing outside
    the key can change their validity. Marks (file:line of each field) are not kept; no check
    after loading reports them."""

    def __init__(self, cache_dir: str, readonly: bool = False) -> None:
        self.store = SharedStore(cache_dir, "shared_specs", readonly=readonly)
        self.readonly = readonly
        self.checker = Key("opspec").text(str(CACHE_FORMAT)).code()

    def _key(self, spec_file: Path) -> str | None:
        key = self.checker.copy().text(spec_file.parent.name, spec_file.name)
        for name in _spec_files(spec_file):
            if not os.access(name, os.R_OK):
                return None
            key.file(name, spec_file.parent)
        return key.hexdigest()

    def get(self, spec_file: Path) -> OpSpec | None:
        key = self._key(spec_file)
        if key is None:
            return None
        data = self.store.get(key, target=str(spec_file))
        if data is None:
            return None
        try:
            return spec_from_dict(json.loads(data), spec_path=spec_file)
        except (ValueError, KeyError, TypeError) as exc:
            self.store.reject(self.store.path(key), str(spec_file), f"unreadable: {exc}")
        return None

    def put(self, spec: OpSpec) -> None:
        if self.readonly or set(_spec_files(spec.spec_path, spec)) != set(_spec_files(spec.spec_path)):
            return  # (a source outside the op directory: its validity would not be covered by the key)
        key = self._key(spec.spec_path)
        if key is None or self.store.has(key):
            return
        try:
            self.store.put(key, nonfinite.dumps(spec_to_dict(spec), sort_keys=True).encode(), target=spec.op)
        except OSError:
            pass  # a read-only or full cache: the spec is simply checked next time


def _shown(file: Path) -> Path:
    """A spec path as problems name it: relative to the working directory (the project root
    under SCons) when inside it, as `opbuild validate ops/` run there names it."""
    try:
        return file.relative_to(Path.cwd())
    except ValueError:
        return file


def _load_all(files: list[Path], cache: SpecCache, shared: SharedSpecs | None = None,
              layers: dict[str, str] | None = None) -> list[OpSpec]:
    """Every spec, from the caches where still valid; SelectionError listing every problem.
    `layers` gets, per op, where its checked spec came from (EXPLAIN=1)."""
    specs: list[OpSpec] = []
    fresh: list[OpSpec] = []
    reused: list[OpSpec] = []
    problems = []
    layers = {} if layers is None else layers
    for file in files:
        spec, layer = cache.get(file), LAYERS["specs"]
        if spec is None and shared is not None:
            spec, layer = shared.get(file), LAYERS["shared_specs"]
            if spec is not None:
                reused.append(spec)
        if spec is None:  # the checks of `opbuild validate`, exactly (one source of truth)
            spec, found = validate_op(_shown(file))
            problems += found
            if spec is None:
                continue
            fresh.append(spec)
            layer = "checked now"
        layers[spec.op] = layer
        specs.append(spec)
    problems += project_problems(specs)  # between the ops: opbuild validate's checks too
    if problems:
        raise SelectionError(str(SpecError(problems)))
    for spec in [*fresh, *reused]:
        cache.put(spec.spec_path, spec)
    if shared is not None:
        for spec in fresh:
            shared.put(spec)
    cache.keep_only(files)
    return specs


@dataclass
class Selection:
    """The specs a build works on."""

    specs: list[OpSpec]
    """The ops to build (OPS=, or every op)."""
    others: list[OpSpec]
    """Every other valid spec under ops/: with OPS=, an op left out that was built earlier and is
    still current stays in its packages as it was built (scons_tool.declare_build)."""
    layers: dict[str, str] = field(default_factory=dict)
    """Per op, where its checked spec came from: a spec cache's layer name, or "checked now"."""


def select_specs(ops_dir: Path, wanted: str = "", cache: SpecCache | None = None,
                 shared: SharedSpecs | None = None) -> Selection:
    """Load every spec under `ops_dir`, select those named in `wanted` (comma-separated op types
    or directory names; empty = all), and check their simplified-key rules where that needs no
    compiled code. Raises SelectionError with every problem found.

    With `cache`, checked specs are reused from it and added to it; the caller saves it (once
    nothing else can fail: a failed build writes nothing). With `shared`, specs are also reused
    from the shared build cache by content, and the ones checked here are stored there.
    """
    if not ops_dir.is_dir():
        raise SelectionError(f"error: no ops directory at {ops_dir}")
    files = [f.absolute() for f in find_specs([ops_dir])]
    layers: dict[str, str] = {}
    specs = _load_all(files, cache if cache is not None else SpecCache(None), shared, layers)
    others: list[OpSpec] = []
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    if names:
        by_name = {s.op: s for s in specs} | {s.snake: s for s in specs}
        missing = [n for n in names if n not in by_name]
        if missing:
            known = ", ".join(sorted(s.op for s in specs))
            raise SelectionError(f"error: OPS names unknown op(s) {', '.join(missing)}; ops under {ops_dir}: {known}")
        chosen = {by_name[n].op for n in names}
        specs, others = [s for s in specs if s.op in chosen], [s for s in specs if s.op not in chosen]
    if not specs:
        raise SelectionError(f"error: no op specs found under {ops_dir}")
    return Selection(specs, others, layers)
