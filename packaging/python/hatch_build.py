"""Puts the prebuilt static tumbler binary into the wheel and tags the wheel for its platform.

The binary is built once, by scripts/static-build.sh; this hook never compiles anything.
TUMBLER_BINARY names it. The wheel is tagged py3-none-<platform>: the Python code works on
any Python 3, the binary on any Linux of its architecture (static: no glibc or musl
version requirement, hence both the manylinux and the musllinux tag).
"""

import os
import platform

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        binary = os.environ.get("TUMBLER_BINARY")
        if not binary or not os.path.isfile(binary):
            raise RuntimeError(
                "set TUMBLER_BINARY to the static tumbler binary "
                "(bash scripts/static-build.sh builds it and prints its path)"
            )
        build_data["force_include"][binary] = "tumbler/bin/tumbler"
        build_data["pure_python"] = False
        arch = os.environ.get("TUMBLER_WHEEL_ARCH", platform.machine())
        plat = os.environ.get(
            "TUMBLER_WHEEL_PLATFORM",
            f"manylinux_2_17_{arch}.manylinux2014_{arch}.musllinux_1_1_{arch}",
        )
        build_data["tag"] = f"py3-none-{plat}"
