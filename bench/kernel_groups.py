"""The kind of work each GPU kernel of a training step does, by its name in a kernel trace.

scalebench's own kernels (namespace sb::) are named in KERNEL_GROUPS by their base name;
tests/analysis/test_kernel_groups.py keeps that table equal to the __global__ functions of kernels/ and src/.
The libraries' kernels are told by the patterns of LIBRARY_PATTERNS. Anything else is "other".
"""
import re

CONVOLUTION = "convolutions and matrix products"
BATCH_NORM = "batch norm"
POOLING = "pooling"
ELEMENTWISE = "element-wise, dropout and bias"
LOSS = "loss"
OPTIMIZER = "optimizer and loss scale"
INPUT = "input batches"
SUPPORT = "memsets, copies and timestamps"
OTHER = "other"

# Each group's kernels, as their source files define them.
BY_GROUP = {
    CONVOLUTION: [  # small_conv.cu, k_slice_sum.cu
        "first_conv_backward_kernel", "first_conv_backward_tiles_kernel", "first_conv_forward_nchw_kernel",
        "first_conv_forward_nhwc_kernel", "sum_k_slices_kernel"],
    BATCH_NORM: [  # bn_fused.cu, bn_given_sums.cu, batchnorm.cu; bn_pool.cu: a stem's batch norm with its max pool
        "apply_nchw_kernel", "apply_nhwc_kernel", "backward_nchw_kernel", "backward_nhwc_kernel", "combine_kernel",
        "pair_backward_nhwc_kernel", "stats_nchw_kernel", "stats_nhwc_kernel", "backward_sums_kernel",
        "finalize_sums_kernel", "apply_maxpool_nhwc_kernel", "coefficients_kernel", "inverse_std_kernel"],
    POOLING: [  # pooling.cu, pool_dropout.cu
        "avgpool_backward_kernel", "avgpool_forward_kernel", "global_avgpool_backward_kernel",
        "global_avgpool_backward_vector_kernel",
        "global_avgpool_nchw_kernel", "global_avgpool_nhwc_kernel", "maxpool_backward_kernel", "maxpool_forward_kernel",
        "maxpool_nhwc_positions_backward_kernel", "maxpool_nhwc_positions_forward_kernel",
        "maxpool_tiled_nhwc_backward_kernel", "maxpool_tiled_nhwc_forward_kernel", "pool_dropout_backward_nchw_kernel",
        "pool_dropout_backward_nhwc_kernel", "pool_dropout_forward_nchw_kernel", "pool_dropout_forward_nhwc_kernel"],
    ELEMENTWISE: [  # elementwise.cu, dropout.cu, relu_dropout.cu, partial_sums.cu
        "bias_add_kernel", "bias_backward_nchw_kernel", "bias_finish_kernel", "bias_partial_nhwc_kernel", "map_kernel",
        "transpose_kernel", "transpose_thin_kernel", "dropout_contiguous_kernel", "dropout_nhwc_any_kernel",
        "dropout_nhwc_w4_kernel", "relu_dropout_backward_kernel", "sum_partial_rows_kernel"],
    LOSS: ["log_softmax_backward_kernel", "log_softmax_forward_kernel", "nll_loss_kernel",
           "softmax_cross_entropy_kernel"],
    OPTIMIZER: ["fused_optimizer_kernel", "check_finite_kernel", "unscale_and_check_kernel",
                "update_loss_scale_kernel"],
    INPUT: ["gather_batch_kernel", "gather_quads_kernel", "resized_crop_kernel"],
    SUPPORT: ["memset_node_kernel", "memset_words_kernel", "record_timestamp_kernel", "fill_uniform_kernel"],
}
KERNEL_GROUPS = {name: group for group, names in BY_GROUP.items() for name in names}

# cuDNN's and cuBLAS's kernels (their CUTLASS, XMMA and nvJet families, cuDNN's padding and layout passes),
# then nvJPEG's.
LIBRARY_PATTERNS = [
    (re.compile(r"xmma|cutlass|nvjet|cublas|cudnn|gemm|Padding|ToNhwc|ToNchw", re.IGNORECASE), CONVOLUTION),
    (re.compile(r"jpeg", re.IGNORECASE), INPUT),
]

GROUP_ORDER = [CONVOLUTION, BATCH_NORM, POOLING, ELEMENTWISE, LOSS, OPTIMIZER, INPUT, SUPPORT, OTHER]


def qualified_name(name):
    """sb::kernels::apply_nhwc_kernel from 'void sb::kernels::(anonymous namespace)::apply_nhwc_kernel<__half>(int)'."""
    plain = name.strip().removeprefix("void ").replace("(anonymous namespace)::", "")
    return re.split(r"[<(]", plain, maxsplit=1)[0].strip()


def group_of(kind, name):
    """The group of one trace record: its kind (kernel, memcpy, memset) and its name."""
    if kind != "kernel":
        return SUPPORT
    qualified = qualified_name(name)
    ours = KERNEL_GROUPS.get(qualified.split("::")[-1]) if qualified.startswith("sb::") else None
    if ours:
        return ours
    for pattern, group in LIBRARY_PATTERNS:
        if pattern.search(name):
            return group
    return OTHER
