# A Spack package for sigmatrace (docs/install.md). The project has no public release to fetch yet,
# so it is built from a checkout: `spack repo add packaging/spack` (a repository of one package; see
# repo.yaml), then, in the checkout, `spack dev-build sigmatrace@main` (add `+softnic` for the emulated
# NIC). Not run here: no Spack was available where it was written; its syntax is checked in CI.
from spack.package import *


class Sigmatrace(CMakePackage):
    """Operation-level profiler for RDMA communication: verbs, mlx5, GPU-initiated RDMA (doorbells
    rung by GPU threads), UCX, libfabric, MPI, NVTX and NCCL, without recompiling the program."""

    version("main")

    variant("softnic", default=False, description="Install softnic, the emulated RDMA NIC the tests and demos run on")

    depends_on("cmake@3.22:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("cli11", type="build")
    depends_on("nlohmann-json", type="build")
    depends_on("zstd")
    depends_on("lz4")
    depends_on("zlib-api")
    depends_on("libdeflate")
    depends_on("sqlite")
    depends_on("python@3:", type="build")  # the manual page is made from the built command's help
    depends_on("rdma-core", when="+softnic", type="build")  # softnic builds against verbs' headers

    def cmake_args(self):
        return [self.define("CMAKE_BUILD_TYPE", "Release")]

    @run_after("install")
    def install_softnic(self):
        if self.spec.satisfies("+softnic"):
            with working_dir(self.build_directory):
                cmake("--install", ".", "--prefix", self.prefix, "--component", "softnic")
