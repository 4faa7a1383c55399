"""bench/nvshmem/build_perftests.sh refuses what it cannot build from with one line on stderr and
exit 2, naming what is missing: no arguments, a directory that is not NVSHMEM's source tree, a test
the tree does not have, an NVSHMEM_HOME without NVSHMEM's header or libraries. (Building the tests
needs NVSHMEM, nvcc and a GPU's architecture: that runs on the GPU machine, docs/nvshmem.md.)
usage: build_perftests_test.py REPOSITORY_ROOT"""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(sys.argv.pop(1))
SCRIPT = ROOT / "bench" / "nvshmem" / "build_perftests.sh"


def run(*args, env=None):
    p = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **(env or {})})
    return p.returncode, p.stdout, p.stderr


class BuildPerftestsRefusesBadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.t = Path(self.tmp.name)
        # The layout of NVSHMEM's source tree, as far as the script looks at it.
        (self.t / "src/perftest/common").mkdir(parents=True)
        (self.t / "src/perftest/device/pt-to-pt").mkdir(parents=True)
        (self.t / "src/perftest/common/utils.cu").write_text("")
        (self.t / "src/perftest/device/pt-to-pt/shmem_put_latency.cu").write_text("")
        (self.t / "nvshmem/include").mkdir(parents=True)

    def tearDown(self):
        self.tmp.cleanup()

    def assert_refused(self, result, *words):
        rc, out, err = result
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("build_perftests.sh: "), err)
        for w in words:
            self.assertIn(w, err)

    def test_no_arguments(self):
        self.assert_refused(run(), "usage")

    def test_not_a_source_tree(self):
        self.assert_refused(run(self.t / "nowhere", self.t / "out"), "perftest/common/utils.cu", "nowhere")

    def test_unknown_test(self):
        self.assert_refused(run(self.t / "src", self.t / "out", "shmem_put_latency", "shmem_nothing"),
                            "shmem_nothing.cu")

    def test_nvshmem_home_without_nvshmem(self):
        self.assert_refused(run(self.t / "src", self.t / "out", "shmem_put_latency",
                                env={"NVSHMEM_HOME": str(self.t / "nvshmem")}), "include/nvshmem.h")
        (self.t / "nvshmem/include/nvshmem.h").write_text("")
        self.assert_refused(run(self.t / "src", self.t / "out", "shmem_put_latency",
                                env={"NVSHMEM_HOME": str(self.t / "nvshmem")}), "lib/libnvshmem_device.a")
        self.assertFalse((self.t / "out").exists(), "nothing is created before the inputs are checked")


if __name__ == "__main__":
    unittest.main()
