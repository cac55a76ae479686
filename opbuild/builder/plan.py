"""The build plan: every step of `scons ops` as plain data, before SCons sees any of it.

A step is a kind (which action runs it), its targets and sources (absolute paths: a source that
is another step's target names the same SCons node), a label for the progress line, and the
variables the action reads (`overrides`). The plan is split the way outputs depend on inputs:

* `OpPlan`: the steps of one op (generated sources, tiling object, one kernel binary per
  binary × SoC × package, kernel JSONs, aclnn C sources and header). They read only the op's
  own files, so an op whose inputs did not change needs none of them (see `bundles`);
* the package steps (tiling library, binary_info_config.json, ops-info, the Python and C aclnn
  APIs, version.info): they combine every op of a package and always go to SCons.

Nothing here imports SCons; `scons_tool.declare_build` turns the plan into nodes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from opbuild import codegen
from opbuild.abi import package_layout as layout
from opbuild.abi.ascendc_bridge import ASCENDC_CORE_DIR, CORE_NAME, CORE_SOURCE
from opbuild.portable import portable_text
from opbuild.spec.model import OpSpec

VARLISTS: dict[str, tuple[str, ...]] = {
    "stamp": (),
    "gen_sources": ("OPBUILD_OP",),
    "compile": ("OPBUILD_CMD", "OPBUILD_KEY", "OPBUILD_PRODUCES"),
    "kernel_json": ("OPBUILD_OP", "OPBUILD_SOC", "OPBUILD_TOOLCHAIN", "OPBUILD_SUBPACKAGE"),
    "tiling_lib": ("OPBUILD_OPS",),
    "op_proto": ("OPBUILD_OPS", "OPBUILD_WHERE"),
    "binary_info": ("OPBUILD_OPS", "OPBUILD_SOC", "OPBUILD_TOOLCHAIN"),
    "ops_info": ("OPBUILD_OPS", "OPBUILD_SOC"),
    "python_api": ("OPBUILD_OPS", "OPBUILD_PKG_ROOT"),
    "onnx_plugins": ("OPBUILD_OPS",),
    "aclnn_sources": ("OPBUILD_OP",),
    "copy": (),
    "text": ("OPBUILD_TEXT",),
    "symlink": ("OPBUILD_LINK_TO",),
}
"""Per kind of step, the variables whose values shape its output (its signature)."""

COMPILED = frozenset({"compile"})
"""Kinds of step whose outputs go to the shared cache (the others are cheap to run again)."""


def signature(kind: str, overrides: dict) -> str:
    """OPBUILD_SIG: the sha256 of the values of the kind's varlist. SCons substitutes every
    varlist variable whenever it computes a step's signature; one short plain string is far
    cheaper to substitute than a command line of 20 words."""
    values = [overrides.get(name, "") for name in VARLISTS[kind]]
    # opbuild's install locations (-I of its headers, -L of the acl library) as tokens: the
    # signature is the shared cache's key, the same from any checkout (opbuild/portable.py).
    return hashlib.sha256(portable_text(json.dumps(values, separators=(",", ":"))).encode()).hexdigest()


def _absolute(path) -> str:
    """`path` as an absolute normalised string (the plan's paths are mostly that already)."""
    text = os.fspath(path)
    if text.startswith(os.sep) and "/." not in text and "//" not in text:
        return text
    return os.path.abspath(text)


@dataclass
class PlannedStep:
    """One step: a command with one or more targets."""

    kind: str
    targets: list[str]
    sources: list[str]
    label: str
    overrides: dict[str, Any]
    scan_includes: list[str] | None = None
    """Compile steps: the include path their sources are scanned with for #include lines."""
    stored: bool = True
    """False for files only the op's own later steps read (kernel objects, generated C sources):
    not part of the op's outputs (not kept in its bundle)."""


@dataclass
class OpPlan:
    """Every step of one op, in every package it goes into."""

    spec: OpSpec
    steps: list[PlannedStep] = field(default_factory=list)
    tiling_object: str = ""
    compute_object: str = ""
    """engine aicpu: the compute object linked into the package's libcust_aicpu_kernels.so."""
    aclnn_source: str = ""

    def targets(self) -> list[str]:
        return [t for s in self.steps for t in s.targets]

    def stored_files(self) -> list[str]:
        """The op's outputs: what the package steps read and what goes into the package."""
        return [t for s in self.steps if s.stored for t in s.targets]

    def compile_steps(self) -> int:
        return sum(1 for s in self.steps if s.kind in COMPILED)


@dataclass
class PackagePlan:
    """One package (custom vendor or built-in) and the steps that combine its ops."""

    kind: str
    root: Path
    where: str
    specs: list[OpSpec]
    steps: list[PlannedStep] = field(default_factory=list)


class Planner:
    """Plans the steps of a build (see the module docstring).

    `cache_key(**extra)` is the OPBUILD_KEY of compile steps: what a compile's cache entry is
    keyed by besides its command and inputs (toolchain identity and version, generator)."""

    def __init__(self, options, stamp: str, native_include: Path, cache_key: Callable[..., str]) -> None:
        self.options = options
        self.tc = options.toolchain
        self.root = options.root
        self._root_prefix = str(options.root).rstrip(os.sep) + os.sep
        self.out = options.out
        self.work = options.out / "build" / options.vendor
        self.stamp = stamp
        self.native_include = native_include
        self.ascendc_include = [str(native_include / "ascendc"), str(native_include)]
        """Where Ascend C sources find kernel_operator.h and the host headers, then opbuild's C headers."""
        self.ascendc_core = str(self.out / ASCENDC_CORE_DIR / "ascendc_host_core.o")
        """The Ascend C host bridge core's object (plan_global), linked into each Ascend C op's blob."""
        self.cache_key = cache_key
        self._steps: list[PlannedStep] = []
        self._spec_files: set[str] = set()

    def spec_file(self, spec: OpSpec) -> str:
        """The file standing for the spec's content in the graph: op.yaml, or for an Ascend C op
        (whose checked spec also holds what its sources say: the tiling class, the tiling keys)
        `<op_snake>.spec.json` under the build directory, the serialized lowered spec, rewritten
        only when it changes."""
        if not spec.is_ascendc:
            return str(spec.spec_path)
        path = self.work / "gen" / spec.snake / f"{spec.snake}.spec.json"
        if str(path) not in self._spec_files:
            from opbuild.codegen.files import write_if_changed
            from opbuild.nonfinite import dumps
            from opbuild.spec.serialize import spec_to_dict

            write_if_changed(path, dumps(spec_to_dict(spec), indent=1, sort_keys=True) + "\n")
            self._spec_files.add(str(path))
        return str(path)

    def rel(self, path) -> str:
        """Paths on command lines stay relative to the project (two checkouts share cache entries)."""
        text = os.fspath(path)
        if text.startswith(self._root_prefix) and "/." not in text and "//" not in text:  # plain: no normalising
            return text[len(self._root_prefix):]
        return os.path.relpath(text, self.root)

    def step(self, kind: str, targets, sources, label: str, scan_includes: list[str] | None = None,
             stored: bool = True, **overrides) -> list[str]:
        if kind in COMPILED and "OPBUILD_KEY" not in overrides:
            overrides["OPBUILD_KEY"] = self.cache_key()
        overrides["OPBUILD_SIG"] = signature(kind, overrides)
        target_paths = [_absolute(t) for t in targets]
        self._steps.append(PlannedStep(kind, target_paths, [_absolute(s) for s in sources], label,
                                       overrides, scan_includes, stored))
        return target_paths

    def _take(self) -> list[PlannedStep]:
        steps, self._steps = self._steps, []
        return steps

    # ---- the steps of one op ---------------------------------------------------------------------

    def packages(self, specs: list[OpSpec]) -> list[PackagePlan]:
        """The packages the specs go into (a package with no op is left out)."""
        vendor = self.out / "opp" / "vendors" / self.options.vendor
        found = [PackagePlan("custom", vendor, f"vendors/{self.options.vendor}", [s for s in specs if "custom" in s.packages]),
                 PackagePlan("built-in", self.out / "opp" / layout.BUILTIN_DIR, layout.BUILTIN_DIR,
                             [s for s in specs if "built-in" in s.packages])]
        return [p for p in found if p.specs]

    def socs_of(self, spec: OpSpec) -> list[str]:
        return [s for s in spec.socs if self.options.socs is None or s in self.options.socs]

    @staticmethod
    def subpackage(package: PackagePlan, spec: OpSpec) -> str | None:
        return None if package.kind == "custom" else layout.subpackage_of(spec.domain)

    def plan_op(self, spec: OpSpec, packages: list[PackagePlan]) -> OpPlan:
        if spec.is_aicpu:
            return self.plan_aicpu_op(spec, packages)
        tc, rel, step = self.tc, self.rel, self.step
        plan = OpPlan(spec)
        if spec.is_ascendc:
            header, shim, make_kernel = self.plan_ascendc_host(plan)
            includes = [*self.ascendc_include, rel(self.work / "gen" / spec.snake)]
        else:
            header, shim, make_kernel = self.plan_c_tiling(plan)
            includes = [str(self.native_include), rel(self.work / "gen" / spec.snake)]
        kernel_src = str(spec.op_dir / spec.kernel_ref.source)
        # An object compiled once for every binary whose compile of it is the same command (one
        # kernel object for a binary's SoCs and packages when the kernel reads nothing of the SoC):
        # the command with its output path left out -> the object's path.
        compiled: dict[tuple[str, ...], str] = {}
        for package in packages:
            if spec not in package.specs:
                continue
            sub, where, pkg_root = self.subpackage(package, spec), package.where, package.root
            for soc in self.socs_of(spec):
                bins = []
                for binary in spec.binaries:
                    target = pkg_root / layout.kernel_binary(soc, spec.snake, binary.name, tc.binary_suffix, sub)
                    macros = codegen.binary_macros(spec, binary)
                    kstep = make_kernel(binary, soc, [rel(kernel_src), rel(shim)], rel(target), macros, includes,
                                        rel(self.work / "kernels" / package.kind / soc / spec.snake / binary.name))
                    extra = [step("text", [self.root / path], [], f"GEN {Path(path).name} ({soc}, {where})",
                                  stored=False, OPBUILD_TEXT=text)[0] for path, text in kstep.inputs.items()]
                    key = self.cache_key(soc=soc, macros=macros)
                    objects, link = [], list(kstep.command)
                    for o in kstep.objects:  # `-c` compiles (distributable), then the link below
                        src = kernel_src if o.source == rel(kernel_src) else shim
                        same = tuple("$OUTPUT" if word == o.object else word for word in o.command)
                        if same in compiled:  # compiled for another binary already: linked from there
                            link = [rel(compiled[same]) if word == o.object else word for word in link]
                            objects.append(compiled[same])
                            continue
                        objects += step("compile", [self.root / o.object], [src, header],
                                        f"CC {'kernel' if src == kernel_src else 'launch'} {binary.name} ({soc}, {where})",
                                        stored=False, OPBUILD_CMD=tuple(o.command), OPBUILD_KEY=self.cache_key(macros=macros),
                                        OPBUILD_DISTRIBUTE=1, scan_includes=includes,
                                        OPBUILD_WHAT=f"op {spec.op}, binary {binary.name} ({soc}): compiling {o.source}")
                        compiled[same] = objects[-1]
                    inputs = objects if objects else [kernel_src, shim, header]
                    bins += step("compile", [target], [*inputs, *extra],
                                 f"{'LINK' if objects else 'CC'} kernel {binary.name} ({soc}, {where})",
                                 OPBUILD_CMD=tuple(link), OPBUILD_PRODUCES=kstep.produces or "", OPBUILD_KEY=key,
                                 OPBUILD_WHAT=f"op {spec.op}, binary {binary.name} ({soc}): "
                                              + (f"linking {rel(target)}" if objects else f"compiling kernel {rel(kernel_src)}"),
                                 scan_includes=None if objects else includes)
                jsons = [pkg_root / layout.kernel_json(soc, spec.snake, b.name, sub) for b in spec.binaries]
                step("kernel_json", [*jsons, pkg_root / layout.op_kernel_config(soc, spec.snake, sub)],
                     [self.spec_file(spec), self.stamp, *bins], f"GEN {spec.op} kernel JSONs ({soc}, {where})",
                     OPBUILD_OP=spec.op, OPBUILD_SOC=soc, OPBUILD_TOOLCHAIN=tc.name,
                     OPBUILD_PKG_ROOT=str(pkg_root), OPBUILD_SUBPACKAGE=sub or "")
        self.aclnn_api(plan, packages)
        plan.steps = self._take()
        return plan

    def plan_c_tiling(self, plan: OpPlan):
        """A C-API op's generated tiling header and launch shim, and its tiling object. Returns
        (header, shim, how a kernel binary is made)."""
        spec, tc, rel, step = plan.spec, self.tc, self.rel, self.step
        gen_dir = self.work / "gen" / spec.snake
        header, shim = step("gen_sources", [gen_dir / f"{spec.snake}_tiling.h", gen_dir / f"{spec.snake}_launch.c"],
                            [self.spec_file(spec), self.stamp], f"GEN {spec.op} sources", stored=False, OPBUILD_OP=spec.op)
        includes = [str(self.native_include), rel(gen_dir)]
        obj = self.work / "obj" / f"{spec.snake}_tiling.o"
        tiling_src = spec.op_dir / spec.tiling_ref.source
        plan.tiling_object, = step("compile", [obj], [tiling_src, header], f"CC tiling {spec.op}",
                                   OPBUILD_CMD=tuple(tc.tiling_object_command(rel(tiling_src), rel(obj), includes)),
                                   OPBUILD_DISTRIBUTE=1, scan_includes=includes,
                                   OPBUILD_WHAT=f"op {spec.op}: compiling tiling source {rel(tiling_src)}")

        def make_kernel(binary, soc, sources, target, macros, include_dirs, work_dir):
            return tc.kernel_step(spec, binary, soc, sources, target, macros, include_dirs, work_dir)

        return header, shim, make_kernel

    def plan_ascendc_host(self, plan: OpPlan):
        """An Ascend C op (opbuild/ascendc): its generated kernel tiling header, C++ launch shim and
        host bridge; the op_host source and the bridge compiled, linked into one relocatable
        object and its hidden symbols made local (so two ops' host code, each with its own OpDef
        registry and perhaps a tiling class of the same name, share the tiling library) -- the
        op's tiling object.
        Returns (header, shim, how a kernel binary is made)."""
        spec, tc, rel, step = plan.spec, self.tc, self.rel, self.step
        gen_dir = self.work / "gen" / spec.snake
        header, shim, bridge = step(
            "gen_sources", [gen_dir / codegen.ascendc_tiling_header_name(spec), gen_dir / codegen.ascendc_launch_shim_name(spec),
                            gen_dir / codegen.host_bridge_name(spec)],
            [self.spec_file(spec), self.stamp], f"GEN {spec.op} sources", stored=False, OPBUILD_OP=spec.op)
        host_src = spec.op_dir / spec.tiling_ref.source
        objects = []
        for source, name, what in ((host_src, "host", f"host source {rel(host_src)}"), (bridge, "bridge", "host bridge")):
            obj = self.work / "obj" / f"{spec.snake}_{name}.o"
            command = tc.ascendc_host_object_command(rel(source), rel(obj), self.ascendc_include, bridge=name == "bridge")
            objects += step("compile", [obj], [source], f"CXX {name} {spec.op}", stored=False, OPBUILD_CMD=tuple(command),
                            OPBUILD_DISTRIBUTE=1, scan_includes=self.ascendc_include, OPBUILD_REUSE=int(name == "host"),
                            OPBUILD_WHAT=f"op {spec.op}: compiling its {what}")
        objects.append(self.ascendc_core)
        blob = self.work / "obj" / f"{spec.snake}_host_blob.o"
        blob, = step("compile", [blob], objects, f"LD -r host {spec.op}", stored=False,
                     OPBUILD_CMD=tuple(tc.host_blob_command([rel(o) for o in objects], rel(blob))),
                     OPBUILD_WHAT=f"op {spec.op}: linking its host objects into one")
        obj = self.work / "obj" / f"{spec.snake}_tiling.o"
        plan.tiling_object, = step("compile", [obj], [blob], f"LOCALIZE host {spec.op}",
                                   OPBUILD_CMD=tuple(tc.localize_command(rel(blob), rel(obj))),
                                   OPBUILD_WHAT=f"op {spec.op}: making its host object's hidden symbols local")
        forced = rel(header)

        def make_kernel(binary, soc, sources, target, macros, include_dirs, work_dir):
            return tc.ascendc_kernel_step(spec, binary, soc, sources, target, macros, include_dirs, work_dir, forced)

        return header, shim, make_kernel

    def aclnn_api(self, plan: OpPlan, packages: list[PackagePlan]) -> None:
        """The op's aclnn C sources, and its header in every package it goes into."""
        spec, step = plan.spec, self.step
        gen_dir = self.work / "gen" / spec.snake
        aclnn_h, plan.aclnn_source = step("aclnn_sources", [gen_dir / f"aclnn_{spec.snake}.h", gen_dir / f"aclnn_{spec.snake}.c"],
                                          [self.spec_file(spec), self.stamp], f"GEN {spec.op} aclnn C API", OPBUILD_OP=spec.op)
        for package in packages:
            if spec in package.specs:
                step("copy", [package.root / "op_api" / "include" / f"aclnn_{spec.snake}.h"], [aclnn_h],
                     f"GEN op_api/include/aclnn_{spec.snake}.h ({package.where})")

    def plan_aicpu_op(self, spec: OpSpec, packages: list[PackagePlan]) -> OpPlan:
        """An AI CPU op: its compute object (linked into the package's libcust_aicpu_kernels.so
        by `plan_package`) and its aclnn API; no kernel binaries, no tiling."""
        rel = self.rel
        plan = OpPlan(spec)
        source = spec.op_dir / spec.compute_ref.source
        obj = self.work / "obj" / f"{spec.snake}_compute.o"
        includes = [str(self.native_include)]
        plan.compute_object, = self.step(
            "compile", [obj], [source], f"CC compute {spec.op}",
            OPBUILD_CMD=tuple(self.tc.aicpu_object_command(rel(source), rel(obj), includes)), OPBUILD_DISTRIBUTE=1,
            OPBUILD_WHAT=f"op {spec.op}: compiling compute source {rel(source)}", scan_includes=includes)
        self.aclnn_api(plan, packages)
        plan.steps = self._take()
        return plan

    # ---- the steps that combine a package's ops ------------------------------------------------------

    def plan_package(self, package: PackagePlan, ops: dict[str, OpPlan], acl_lib: str) -> None:
        op_proto = self._plan_op_proto(package, ops)
        self.plan_aicpu_lib(package, [ops[s.op] for s in package.specs if s.is_aicpu])
        aicore = [s for s in package.specs if not s.is_aicpu]
        if aicore:
            self.plan_aicore_package(package, aicore, ops, op_proto)
        self.plan_package_api(package, ops, acl_lib)
        package.steps = self._take()

    def plan_aicpu_lib(self, package: PackagePlan, plans: list[OpPlan]) -> None:
        """libcust_aicpu_kernels.so (every AI CPU op's compute object and the generated registry)
        and the AI CPU op info, cust_aicpu_kernel.json."""
        if not plans:
            return
        rel, step, where = self.rel, self.step, package.where
        specs = [p.spec for p in plans]
        names = tuple(s.op for s in specs)
        registry_src, = step("text", [self.work / "gen" / package.kind / "aicpu_kernels.c"], [],
                             f"GEN aicpu_kernels.c ({where})", stored=False,
                             OPBUILD_TEXT=codegen.render_aicpu_registry(specs))
        registry_obj = self.work / "obj" / package.kind / "aicpu_kernels.o"
        includes = [str(self.native_include)]
        registry, = step("compile", [registry_obj], [registry_src], f"CC aicpu_kernels.c ({where})",
                         OPBUILD_CMD=tuple(self.tc.aicpu_object_command(rel(registry_src), rel(registry_obj), includes)),
                         OPBUILD_WHAT=f"compiling the AI CPU kernel registry of {where}", scan_includes=includes)
        objects = [registry, *(p.compute_object for p in plans)]
        target = package.root / layout.aicpu_kernel_lib()
        step("compile", [target], objects, f"LINK {layout.AICPU_KERNELS_LIB} ({where})",
             OPBUILD_CMD=tuple(self.tc.aicpu_link_command([rel(o) for o in objects], rel(target))),
             OPBUILD_WHAT=f"linking {layout.AICPU_KERNELS_LIB} of {where} (AI CPU ops: {', '.join(names)})")
        step("text", [package.root / layout.aicpu_op_info()], [], f"GEN {layout.AICPU_OP_INFO} ({where})",
             OPBUILD_TEXT=codegen.render_aicpu_op_info(specs))

    def plan_aicore_package(self, package: PackagePlan, specs: list[OpSpec], ops: dict[str, OpPlan],
                            op_proto: str) -> None:
        """The tiling library, binary_info_config.json and ops-info of the package's AI Core ops.
        `op_proto`: the compiled op_proto object (every op's inference), linked in too."""
        tc, rel, step, pkg_root, where = self.tc, self.rel, self.step, package.root, package.where
        socs_used = sorted({soc for spec in specs for soc in self.socs_of(spec)})
        # The generated inference functions go into the tiling library too (as CANN's op_host
        # code registers InferShape in both): an .om packs that one library.
        tiling_objects = [ops[spec.op].tiling_object for spec in specs] + [op_proto]
        tiling_lib = pkg_root / layout.tiling_lib()
        # The tiling library is linked outside the package, then checked (every tiling function and
        # C key callback the specs name, run against the declared binaries) and only then copied
        # in: a library that fails the checks never replaces the one a running app loads, and the
        # package's configs (which depend on the installed library) keep describing that one.
        staged = self.work / "lib" / package.kind / tiling_lib.name
        cxx = any(s.is_ascendc for s in specs)
        linked = step("compile", [staged], tiling_objects, f"LINK libcust_opmaster_rt2.0.so ({where})",
                      OPBUILD_CMD=tuple(tc.tiling_link_command([rel(o) for o in tiling_objects], rel(staged), cxx=cxx)),
                      OPBUILD_WHAT=f"linking the tiling library of {where}")
        lib = step("tiling_lib", [tiling_lib], [*linked, *(self.spec_file(s) for s in specs), self.stamp],
                   f"CHECK libcust_opmaster_rt2.0.so ({where})", OPBUILD_OPS=tuple(s.op for s in specs))
        link = pkg_root / layout.optiling_link()
        step("symlink", [link], lib, f"LINK liboptiling.so ({where})",
             OPBUILD_LINK_TO=os.path.relpath(tiling_lib, link.parent))

        for soc in socs_used:
            soc_specs = [s for s in specs if soc in s.socs]
            for sub in sorted({self.subpackage(package, s) or "" for s in soc_specs}):
                group = [s for s in soc_specs if (self.subpackage(package, s) or "") == sub]
                name = f"{sub}/binary_info_config.json" if sub else "binary_info_config.json"
                step("binary_info", [pkg_root / layout.binary_info_config(soc, sub or None)],
                     [*(self.spec_file(s) for s in group), self.stamp, *lib], f"GEN {name} ({soc}, {where})",
                     OPBUILD_OPS=tuple(s.op for s in group), OPBUILD_SOC=soc, OPBUILD_TOOLCHAIN=tc.name)
            step("ops_info", [pkg_root / layout.ops_info(soc)], [*(self.spec_file(s) for s in soc_specs), self.stamp],
                 f"GEN aic-{soc}-ops-info.json ({where})", OPBUILD_OPS=tuple(s.op for s in soc_specs), OPBUILD_SOC=soc)


    def plan_package_api(self, package: PackagePlan, ops: dict[str, OpPlan], acl_lib: str) -> None:
        """The package's Python and C aclnn APIs and version.info."""
        from opbuild.abi.native_libs import opapi_command
        from opbuild.codegen.python_api import PYTHON_MODULE, keyrule_path

        tc, rel, step, pkg_root, where = self.tc, self.rel, self.step, package.root, package.where
        python_dir = pkg_root / layout.python_api_dir()
        py_targets = [python_dir / PYTHON_MODULE]
        py_sources: list[str | Path] = [*(self.spec_file(s) for s in package.specs), self.stamp]
        for spec in package.specs:
            keyrule = keyrule_path(spec)
            if keyrule is not None:
                py_targets.append(python_dir / keyrule)
                py_sources.append(spec.op_dir / f"{spec.key_rule.py_module}.py")
        step("python_api", py_targets, py_sources, f"GEN op_api/python/aclnn_ops.py ({where})",
             OPBUILD_OPS=tuple(s.op for s in package.specs), OPBUILD_PKG_ROOT=str(pkg_root))

        step("onnx_plugins", [pkg_root / layout.onnx_plugins()], [*(self.spec_file(s) for s in package.specs), self.stamp],
             f"GEN {layout.onnx_plugins()} ({where})", OPBUILD_OPS=tuple(s.op for s in package.specs))

        # aclnn C API: the libraries exporting aclnn<Op>GetWorkspaceSize / aclnn<Op>.
        if package.kind == "custom":
            libraries = {layout.CUSTOM_OPAPI_LIB: package.specs}
        else:
            libraries = {layout.OPAPI_LIB: [s for s in package.specs if not s.domain]}
            for domain in layout.DOMAINS:
                members = [s for s in package.specs if s.domain == domain]
                if members:
                    libraries[layout.domain_opapi_lib(domain)] = members
        include_dir = pkg_root / "op_api" / "include"
        for lib_name, members in libraries.items():
            target = pkg_root / layout.opapi_lib_dir() / lib_name
            sources = [ops[s.op].aclnn_source for s in members]
            if not members:  # libopapi.so exists even with no domain-less op: it anchors ResetCacheThreadLocal
                sources = step("text", [self.work / "gen" / "opapi_anchor.c"], [], "GEN opapi_anchor.c",
                               OPBUILD_TEXT="/* libopapi.so: built-in ops without a domain (none here). It still\n"
                                            " * exports ResetCacheThreadLocal through its dependency on the acl\n"
                                            " * library: reference it so the linker keeps that dependency. */\n"
                                            "extern void ResetCacheThreadLocal(void);\n"
                                            "void (*opbuild_opapi_anchor(void))(void) { return ResetCacheThreadLocal; }\n")
            cmd = opapi_command([rel(n) for n in sources], rel(target), [rel(include_dir)], cc=tc.cc_command())
            step("compile", [target], [*sources, acl_lib], f"LINK {lib_name} ({where})", OPBUILD_CMD=tuple(cmd),
                 OPBUILD_WHAT=f"linking {lib_name} of {where}")

        step("text", [pkg_root / layout.VERSION_INFO], [], f"GEN version.info ({where})",
             OPBUILD_TEXT=codegen.render_version_info(tc.version()))

    def _plan_op_proto(self, package: PackagePlan, ops: dict[str, OpPlan]) -> str:
        """op_proto/inc/op_proto.h and libcust_opsproto_rt2.0.so: the generated inference
        functions, linked with the tiling objects of the ops whose spec names a C infer-shape
        function (the library calls it). Returns the compiled op_proto object."""
        tc, rel, step, pkg_root, where = self.tc, self.rel, self.step, package.root, package.where
        header = pkg_root / layout.op_proto_header()
        source, _ = step("op_proto", [self.work / "gen" / package.kind / "op_proto.c", header],
                              [*(self.spec_file(s) for s in package.specs), self.stamp], f"GEN op_proto/inc/op_proto.h ({where})",
                              OPBUILD_OPS=tuple(s.op for s in package.specs), OPBUILD_WHERE=where)
        includes = [str(self.native_include)]
        obj = self.work / "obj" / package.kind / "op_proto.o"
        obj, = step("compile", [obj], [source], f"CC op_proto.c ({where})", stored=False,
                    OPBUILD_CMD=tuple(tc.tiling_object_command(rel(source), rel(obj), includes)), scan_includes=includes,
                    OPBUILD_WHAT=f"compiling the op_proto library of {where}")
        with_function = [s for s in package.specs
                         if any(p.shape is not None and p.shape.kind == "function" for p in s.outputs)]
        wrapped = [ops[s.op].tiling_object for s in with_function]
        lib = pkg_root / layout.op_proto_lib()
        cxx = any(s.is_ascendc for s in with_function)
        step("compile", [lib], [obj, *wrapped], f"LINK {lib.name} ({where})",
             OPBUILD_CMD=tuple(tc.tiling_link_command([rel(o) for o in (obj, *wrapped)], rel(lib), cxx=cxx)),
             OPBUILD_WHAT=f"linking the op_proto library of {where}")
        return obj

    def plan_global(self, ascendc: bool = False) -> list[PlannedStep]:
        """Steps outside any package: the generator stamp, vendors/config.ini and, when the build
        has Ascend C ops (`ascendc`), the bridge core every one of their host blobs links
        (opbuild_ascendc/host_bridge.h: the same object for all, compiled once)."""
        self.step("stamp", [self.stamp], [str(p) for p in codegen.GENERATOR_FILES], "GEN generator.stamp")
        self.step("text", [self.out / "opp" / "vendors" / "config.ini"], [], "GEN vendors/config.ini",
                  OPBUILD_TEXT=codegen.render_vendors_config([self.options.vendor]))
        if ascendc:
            source, = self.step("text", [self.out / ASCENDC_CORE_DIR / f"{CORE_NAME}.cpp"], [], f"GEN {CORE_NAME}.cpp",
                                stored=False, OPBUILD_TEXT=CORE_SOURCE)
            command = self.tc.ascendc_host_object_command(self.rel(source), self.rel(self.ascendc_core),
                                                          self.ascendc_include, bridge=True)
            self.step("compile", [self.ascendc_core], [source], "CXX Ascend C host bridge core", stored=False,
                      OPBUILD_CMD=tuple(command), OPBUILD_DISTRIBUTE=1, scan_includes=self.ascendc_include,
                      OPBUILD_REUSE=1, OPBUILD_WHAT="compiling the Ascend C host bridge core")
        return self._take()
