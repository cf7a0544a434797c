# Packaging of `rota`: the pure-Python package python/rota/ plus the native module CMake builds.
"""pip install ./python (docs/python-native.md).

The extension rota._native is not compiled here: it is the module CMake builds with the rest of
Rota (target rota_native, <build>/python/rota/_native.<abi>.so). This script finds it in the build
directory ROTA_BUILD_DIR (default: <repo>/build), runs `cmake --build` for it when it is missing
(configuring the directory first when it has no CMakeCache.txt), and copies it into the package.

No pyproject.toml on purpose: with one, pip builds in an isolated environment and downloads
setuptools and wheel, which fails offline (Debian 12 has no PyPI here). Without it pip uses the
setuptools and wheel of the interpreter (python3-setuptools, python3-wheel; visible in a venv
made with --system-site-packages), so `.venv/bin/pip install ./python` works with no network.
Build files go to a temporary directory, not into the source tree, removed when setup.py exits.
"""
import atexit
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(HERE)


def rota_version():
    """The project version of the top-level CMakeLists.txt (`project(rota VERSION x.y.z ...)`)."""
    with open(os.path.join(REPO, "CMakeLists.txt"), encoding="utf-8") as cmake:
        match = re.search(r"project\(rota\s+VERSION\s+([0-9.]+)", cmake.read())
    if not match:
        raise RuntimeError("rota: no project(rota VERSION ...) in " + REPO + "/CMakeLists.txt")
    return match.group(1)


def build_dir():
    return os.path.abspath(os.environ.get("ROTA_BUILD_DIR") or os.path.join(REPO, "build"))


def built_module(build):
    """The module CMake built for this interpreter's ABI, or None."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    path = os.path.join(build, "python", "rota", "_native" + suffix)
    return path if os.path.isfile(path) else None


def build_module(build):
    """Configures `build` if needed (Release, Ninja when available) and builds rota_native."""
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        command = ["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                   "-DROTA_BUILD_PYTHON=ON", "-DPython_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja"):
            command += ["-G", "Ninja"]
        print("rota: configuring", build, flush=True)
        subprocess.check_call(command)
    print("rota: building the native module in", build, flush=True)
    subprocess.check_call(["cmake", "--build", build, "--target", "rota_native"])


def check_interpreter(build):
    """Refuses a Python other than the one `build` was configured for (CMakeCache's
    Python_EXECUTABLE): the module may not load there, and its NumPy and PyTorch are not Debian's
    (a pyenv python3 shadowing /usr/bin/python3 would send pip to the network for them)."""
    cache = os.path.join(build, "CMakeCache.txt")
    if not os.path.isfile(cache):
        return
    with open(cache, encoding="utf-8", errors="replace") as f:
        match = re.search(r"^Python_EXECUTABLE:FILEPATH=(.*)$", f.read(), re.M)
    if not match:
        return
    configured = os.path.realpath(match.group(1).strip())
    running = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    if configured != running:
        raise RuntimeError(
            "rota: the native module in %s is built for %s, but this install runs %s; make the "
            "virtual environment with that interpreter: %s -m venv --system-site-packages .venv "
            "(docs/python.md), or configure the build for this one (cmake -DPython_EXECUTABLE=%s)"
            % (build, match.group(1).strip(), running, match.group(1).strip(), running))


class CopyNativeModule(build_ext):
    """Puts the CMake-built rota._native where setuptools packages extensions."""

    def build_extension(self, ext):
        build = build_dir()
        check_interpreter(build)
        module = built_module(build)
        if module is None:
            build_module(build)
            module = built_module(build)
        if module is None:
            others = glob.glob(os.path.join(build, "python", "rota", "_native*"))
            raise RuntimeError(
                "rota: no _native%s in %s/python/rota after building (found: %s); the build "
                "directory was configured for another Python than %s (cmake -DPython_EXECUTABLE)"
                % (sysconfig.get_config_var("EXT_SUFFIX"), build, others or "nothing",
                   sys.executable))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(module, target)


SCRATCH = tempfile.mkdtemp(prefix="rota-setup-")
# pip runs setup.py once per build step (metadata, wheel), each in its own process.
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

setup(
    name="rota",
    version=rota_version(),
    description="Rota: linear-attention transformer LMs on CPUs (native bindings and rota.torch)",
    python_requires=">=3.8",
    packages=find_packages(HERE, include=["rota", "rota.*"]),
    package_dir={"": "."},
    ext_modules=[Extension("rota._native", sources=[])],
    cmdclass={"build_ext": CopyNativeModule},
    install_requires=["numpy"],  # from Debian (python3-numpy); rota.torch also needs torch
    zip_safe=False,
    options={"build": {"build_base": os.path.join(SCRATCH, "build")},
             "egg_info": {"egg_base": SCRATCH}},
)
