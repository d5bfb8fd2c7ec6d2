"""bench/kernel_groups.py: every kernel scalebench defines has its kind of work, and the libraries' are told apart."""
import glob
import os
import re
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import kernel_groups  # noqa: E402
from kernel_groups import BATCH_NORM, CONVOLUTION, INPUT, OTHER, SUPPORT, group_of  # noqa: E402

# A __global__ function's name, after launch bounds of up to two levels of parentheses.
GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\s*)?(\w+)\s*\(")


def defined_kernels():
    sources = []
    for folder in ("kernels", "src"):
        for ext in ("cu", "cuh"):
            sources += glob.glob(os.path.join(ROOT, folder, "**", f"*.{ext}"), recursive=True)
    names = set()
    for path in sources:
        with open(path, encoding="utf-8") as f:
            names.update(GLOBAL.findall(f.read()))
    return names


class KernelGroups(unittest.TestCase):
    def test_the_table_names_every_kernel_once(self):
        defined = defined_kernels()
        self.assertGreater(len(defined), 40, "the sources' kernels were not found")
        listed = [n for names in kernel_groups.BY_GROUP.values() for n in names]
        self.assertEqual(len(listed), len(set(listed)), "a kernel in two groups")
        self.assertEqual(sorted(defined - set(listed)), [],
                         "kernels without a group: add them to bench/kernel_groups.py")
        self.assertEqual(sorted(set(listed) - defined), [], "groups name kernels no source defines")

    def test_trace_names(self):
        cases = {
            "void sb::kernels::(anonymous namespace)::backward_nhwc_kernel<__half; int; "
            "(sb::kernels::(anonymous namespace)::Keep)0; true; false; false>(int; int; int; int; ": BATCH_NORM,
            "sb::kernels::(anonymous namespace)::memset_node_kernel(void*; unsigned long)": SUPPORT,
            "void sb::kernels::(anonymous namespace)::gather_quads_kernel<__half>(sb::kernels::GatherBatchArgs)": INPUT,
            "sm90_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64": CONVOLUTION,
            "void xmma__5x_cudnn::gemm::warp_specialized_kernel_gmma_utmaldg<xmma__5x_cudnn::implicit_gemm::fprop::"
            "Warp_specialized_gmma_fprop_bn_stat_kernel_traits": CONVOLUTION,
            "nvjet_sm90_hsh_64x64_64x13_1x2_h_bz_splitK_NTT": CONVOLUTION,
            "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolution": CONVOLUTION,
            "void nhwcAddPaddingKernel<__half; __half; float; true>(int; int)": CONVOLUTION,
            "void cublasLt::splitKreduce_kernel<32; 16; int; float>": CONVOLUTION,
            "void other_library::map_kernel<float>(float*)": OTHER,  # our base names count only under sb::
            "unknown": OTHER,
        }
        for name, group in cases.items():
            self.assertEqual(group_of("kernel", name), group, name)
        self.assertEqual(group_of("memcpy", "4096 bytes"), SUPPORT)
        self.assertEqual(group_of("memset", "sb::kernels::apply_nhwc_kernel"), SUPPORT)


if __name__ == "__main__":
    unittest.main()
