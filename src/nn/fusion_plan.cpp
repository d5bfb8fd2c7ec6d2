#include "nn/fusion_plan.h"

namespace sb {
namespace {

bool kind_at(const std::vector<LayerSpec>& c, size_t i, LayerKind kind) { return i < c.size() && c[i].kind == kind; }

// The fused kernels' channel condition (bn_fused_supports): 8 channels per 16-byte load in NHWC.
bool fused_takes_channels(const LayerSpec& bn, Layout layout) { return layout != Layout::NHWC || bn.in % 8 == 0; }

std::string names(const std::vector<LayerSpec>& c, size_t from, size_t count) {
  std::string s;
  for (size_t i = from; i < from + count; ++i) s += (i > from ? " + " : "") + c[i].name;
  return s;
}

}  // namespace

const char* fusion_path_name(FusionPath path) {
  switch (path) {
    case FusionPath::Separate: return "separate";
    case FusionPath::FusedHead: return "fused";
    case FusionPath::FusedMember: return "in fused run";
    case FusionPath::CudnnBnRelu: return "cudnn bn+relu";
    case FusionPath::ReluInPrevious: return "in cudnn bn+relu";
  }
  return "?";
}

FusionPlan plan_fusion(const std::vector<LayerSpec>& children, const FusionAvailability& available,
                       bool ends_residual_main) {
  FusionPlan plan;
  plan.steps.resize(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    if (!kind_at(children, i, LayerKind::BatchNorm2d) || !kind_at(children, i + 1, LayerKind::ReLU)) continue;
    const bool with_dropout = kind_at(children, i + 2, LayerKind::Dropout);
    const bool at_end = ends_residual_main && i + (with_dropout ? 3 : 2) == children.size();
    std::string why_not_fused;
    if (!available.fused_kernels) why_not_fused = "fused kernels off";
    else if (!with_dropout && !at_end && !available.fuse_plain_bn_relu) why_not_fused = "plain bn+relu not fused";
    else if (!fused_takes_channels(children[i], available.layout))
      why_not_fused = std::to_string(children[i].in) + " channels (NHWC needs a multiple of 8)";
    if (why_not_fused.empty()) {
      const size_t run = with_dropout ? 3 : 2;
      FusionStep& head = plan.steps[i];
      head.path = FusionPath::FusedHead;
      head.run = run;
      head.adds_residual = at_end;
      for (size_t k = 1; k < run; ++k) plan.steps[i + k].path = FusionPath::FusedMember;
      plan.record += names(children, i, run) + (head.adds_residual ? " + residual add" : "") + ": fused kernels\n";
      i += run - 1;
    } else if (available.cudnn_bn_relu) {
      plan.steps[i].path = FusionPath::CudnnBnRelu;
      plan.steps[i + 1].path = FusionPath::ReluInPrevious;
      plan.record += names(children, i, 2) + ": cudnn bn+relu graph (" + why_not_fused + ")\n";
      i += 1;
    } else {
      plan.record += names(children, i, 2) + ": separate layers (" + why_not_fused + ", no cudnn bn+relu)\n";
      i += 1;
    }
  }
  return plan;
}

}  // namespace sb
