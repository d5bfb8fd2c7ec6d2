"""A small stand-in for the part of Spack's package API that packaging/spack's package.py uses, so that
CI can import the package and evaluate it without Spack: the directives (version, variant, depends_on,
conflicts, when) record what they declare on the class, and Spec answers satisfies() for the
"+name", "~name" and "name=value" terms the package writes.

install() puts the modules spack.package, spack_repo.builtin.build_systems.cmake and .cuda into
sys.modules; load_package(path) then imports a package.py under them."""
import importlib.util
import sys
import types

_pending = []  # directives of the class body being executed
_when_stack = []  # conditions of the enclosing `with when(...)` blocks


def _condition(when):
    terms = [t for c in _when_stack + [when or ""] for t in c.split()]
    return " ".join(terms) or None


def _record(kind, **fields):
    _pending.append(dict(kind=kind, **fields))


def version(name, **source):
    _record("version", name=name, source=source)


def variant(name, default=None, description="", values=None, when=None, **_):
    _record("variant", name=name, default=default, values=values, when=_condition(when))


def depends_on(spec, type=("build", "link"), when=None):
    types_ = (type,) if isinstance(type, str) else tuple(type)
    _record("depends_on", spec=spec, name=spec.split()[0].split("@")[0].split("~")[0].split("+")[0],
            type=types_, when=_condition(when))


def conflicts(spec, when=None, msg=None):
    _record("conflicts", spec=spec, when=_condition(when), msg=msg)


class when:
    """`with when("+cuda"):` adds its condition to the directives inside it."""

    def __init__(self, condition):
        self.condition = condition

    def __enter__(self):
        _when_stack.append(self.condition)

    def __exit__(self, *exc):
        _when_stack.pop()


def any_combination_of(*values):
    return tuple(values)


class Variant:
    def __init__(self, value):
        self.value = value


class Prefix(str):
    """An install prefix: `prefix.bin.nvcc` is the path prefix/bin/nvcc, as in Spack."""

    def __getattr__(self, name):
        return Prefix(f"{self}/{name}")


class Dependency:
    def __init__(self, name):
        self.name = name
        self.prefix = Prefix(f"/spack/opt/{name}")
        self.mpicxx = self.prefix.bin.mpicxx


class Spec:
    """A concrete spec: variants by name (bools, or tuples of strings for multi-valued variants)."""

    def __init__(self, **variants):
        self.variants = {k: Variant(v) for k, v in variants.items()}

    def _term(self, term):
        if term.startswith(("+", "~")):
            v = self.variants.get(term[1:])
            return v is not None and v.value is (term[0] == "+")
        if "=" in term:
            name, value = term.split("=", 1)
            v = self.variants.get(name)
            if v is None:
                return False
            have = v.value if isinstance(v.value, tuple) else (str(v.value),)
            return all(x in have for x in value.split(","))
        raise ValueError(f"spack stub: cannot evaluate '{term}'")

    def satisfies(self, condition):
        return all(self._term(t) for t in condition.split())

    def __getitem__(self, name):
        return Dependency(name)


class PackageBase:
    """Collects the directives of each class body, after those of its bases."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        inherited = []
        for base in reversed(cls.__mro__[1:]):
            for d in base.__dict__.get("directives", []):
                if d not in inherited:
                    inherited.append(d)
        cls.directives = inherited + list(_pending)
        _pending.clear()

    def __init__(self, spec, run_tests=False):
        self.spec = spec
        self.run_tests = run_tests

    @classmethod
    def declared(cls, kind):
        return [d for d in cls.directives if d["kind"] == kind]

    def active(self, kind):
        """The directives of `kind` whose condition this package's spec satisfies."""
        return [d for d in self.declared(kind) if not d.get("when") or self.spec.satisfies(d["when"])]


class CMakePackage(PackageBase):
    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value)
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.variants[variant].value)


class CudaPackage(PackageBase):
    cuda_arch_values = ("70", "75", "80", "86", "89", "90", "90a", "100", "120")
    variant("cuda", default=False, description="Build with CUDA")
    variant("cuda_arch", values=any_combination_of(*cuda_arch_values), when="+cuda")
    depends_on("cuda", when="+cuda")


def install():
    public = {n: v for n, v in globals().items()
              if n in ("version", "variant", "depends_on", "conflicts", "when", "any_combination_of",
                       "PackageBase")}
    modules = {
        "spack": {}, "spack.package": public, "spack_repo": {}, "spack_repo.builtin": {},
        "spack_repo.builtin.build_systems": {},
        "spack_repo.builtin.build_systems.cmake": {"CMakePackage": CMakePackage},
        "spack_repo.builtin.build_systems.cuda": {"CudaPackage": CudaPackage},
    }
    for name, contents in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(contents)
        module.__all__ = list(contents)
        sys.modules[name] = module


def load_package(path, module_name="spack_stub_package"):
    install()
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
