#include "nn/fusion_plan.h"

namespace sb {
namespace {

bool kind_at(const std::vector<LayerSpec>& c, size_t i, LayerKind kind) { return i < c.size() && c[i].kind == kind; }

// The fused kernels' channel condition (bn_fused_supports): 8 channels per 16-byte load in NHWC.
bool fused_takes_channels(const LayerSpec& bn, Layout layout) { return layout != Layout::NHWC || bn.in % 8 == 0; }

// Why the fused kernels do not take a batch-norm run (empty: they do). `plain`: neither dropout nor add.
std::string why_not_fused(const LayerSpec& bn, bool plain, const FusionAvailability& available) {
  if (!available.fused_kernels) return "fused kernels off";
  if (plain && !available.fuse_plain_bn_relu) return "plain bn+relu not fused";
  if (!fused_takes_channels(bn, available.layout))
    return std::to_string(bn.in) + " channels (NHWC needs a multiple of 8)";
  return "";
}

// Whether child i is a Residual followed by a ReLU whose main branch ends in a batch norm that will take the
// add and that ReLU.
bool residual_takes_relu(const std::vector<LayerSpec>& c, size_t i, const FusionAvailability& available) {
  if (!kind_at(c, i, LayerKind::Residual) || !kind_at(c, i + 1, LayerKind::ReLU) || c[i].children.empty()) return false;
  const LayerSpec& main = c[i].children[0];
  if (main.kind != LayerKind::Sequential || main.children.empty()) return false;
  const LayerSpec& last = main.children.back();
  return last.kind == LayerKind::BatchNorm2d && why_not_fused(last, false, available).empty();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The small-network pattern starting at child i, if any: its path and how many children it covers.
struct LayerPattern {
  FusionPath path = FusionPath::Separate;
  size_t run = 1;
  const char* what = "";
};

LayerPattern layer_pattern(const std::vector<LayerSpec>& c, size_t i, bool network_input) {
  LayerPattern p;
  if (i == 0 && network_input && kind_at(c, i, LayerKind::Conv2d) && c[i].kernel == 3 &&
      c[i].in <= kFirstConvMaxInputChannels && layer_kernels_take_channels(c[i].out)) {
    p.path = FusionPath::FirstConv;
    p.run = kind_at(c, i + 1, LayerKind::ReLU) ? 2 : 1;
    p.what = "first-conv kernel";
    return p;
  }
  if (kind_at(c, i, LayerKind::Conv2d) && kind_at(c, i + 1, LayerKind::ReLU) && c[i].bias &&
      layer_kernels_take_channels(c[i].out)) {
    const bool pool = kind_at(c, i + 2, LayerKind::MaxPool2d) && c[i + 2].kernel == 2 && c[i + 2].stride == 2 &&
                      c[i + 2].pad == 0;
    const bool with_dropout = kind_at(c, i + 3, LayerKind::Dropout);
    if (pool && kind_at(c, i + (with_dropout ? 4 : 3), LayerKind::Flatten)) {
      p.path = FusionPath::ConvReluPool;
      p.run = with_dropout ? 5 : 4;
      p.what = "cudnn conv, bias+relu+pool+dropout kernel";
      return p;
    }
  }
  if (kind_at(c, i, LayerKind::Linear) && kind_at(c, i + 1, LayerKind::ReLU)) {
    p.path = FusionPath::LinearRelu;
    p.run = kind_at(c, i + 2, LayerKind::Dropout) ? 3 : 2;
    p.what = "gemm epilogue relu, dropout in place";
  }
  return p;
}

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
    case FusionPath::ReluInPrevious: return "applied by the previous layer";
    case FusionPath::ResidualThenRelu: return "residual with the following relu";
    case FusionPath::FirstConv: return "first-conv kernels";
    case FusionPath::ConvReluPool: return "conv + pool kernels";
    case FusionPath::LinearRelu: return "linear epilogue";
  }
  return "?";
}

namespace {

// The folded batch-norm pieces of one kind: how many lines end in `folded`, and the pairs of those that end in
// `passed` (no engine), for the summary "<what>: N of M <where> (own pass: a, b)".
struct FoldTally {
  FoldTally(const char* folded_record, const char* passed_record) : folded(folded_record), passed(passed_record) {}
  const char* folded;
  const char* passed;
  int in_graph = 0, own_pass = 0;
  std::string pairs;
  bool take(const std::string& line) {
    if (ends_with(line, folded)) {
      ++in_graph;
      return true;
    }
    if (!ends_with(line, passed)) return false;
    pairs += (pairs.empty() ? "" : ", ") + line.substr(0, line.size() - std::string(passed).size());
    ++own_pass;
    return true;
  }
  void append(std::string& summary, const std::string& what, const std::string& where) const {
    if (in_graph + own_pass == 0) return;
    summary += (summary.empty() ? "" : "; ") + what + ": " + std::to_string(in_graph) + " of " +
               std::to_string(in_graph + own_pass) + " " + where;
    if (own_pass > 0) summary += " (own pass: " + pairs + ")";
  }
};

}  // namespace

std::string fusion_summary(const std::string& report) {
  const std::string fused = kFusedKernelsRecord, layers = kLayerKernelsRecord;
  int planned_fused = 0, planned_other = 0, fell_back = 0;
  FoldTally statistics(kStatisticsInConvRecord, kStatisticsPassRecord);
  FoldTally backward(kBackwardInDgradRecord, kBackwardPassRecord);
  FoldTally apply(kApplyInPrologueRecord, kApplyPassRecord);
  std::string others, layer_runs;
  size_t begin = 0;
  while (begin < report.size()) {
    size_t end = report.find('\n', begin);
    if (end == std::string::npos) end = report.size();
    const std::string line = report.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty() || statistics.take(line) || backward.take(line) || apply.take(line)) continue;
    if (ends_with(line, layers)) {
      layer_runs += (layer_runs.empty() ? "" : "; ") + line.substr(0, line.size() - layers.size());
      continue;
    }
    if (ends_with(line, fused)) {
      ++planned_fused;
      continue;
    }
    if (line.find(kRefusedByFusedKernels) != std::string::npos) ++fell_back;
    else ++planned_other;
    others += (others.empty() ? "" : "; ") + line;
  }
  const int runs = planned_fused + planned_other;
  std::string summary;
  if (runs > 0) {
    summary = "batch norm: " + std::to_string(planned_fused - fell_back) + " of " + std::to_string(runs) +
              " runs on the fused kernels";
    if (!others.empty()) summary += "; " + others;
  }
  if (!layer_runs.empty()) summary += (summary.empty() ? "" : "; ") + std::string("fused layers: ") + layer_runs;
  statistics.append(summary, "batch-norm statistics", "in the convolution's epilogue");
  apply.append(summary, "batch-norm applies", "in the convolution's prologue");
  backward.append(summary, "batch-norm backward reductions", "in the dgrad");
  return summary;
}

bool ends_in_log_softmax(const LayerSpec& root) {
  return root.kind == LayerKind::Sequential && root.children.size() > 1 &&
         root.children.back().kind == LayerKind::LogSoftmax;
}

std::string log_softmax_in_loss_record(const LayerSpec& layer) {
  return layer.name + ": softmax cross-entropy in the loss kernel" + kLayerKernelsRecord + "\n";
}

bool layer_kernels_take_channels(int64_t channels) {
  return channels >= 1 && channels <= 256 && (channels & (channels - 1)) == 0;
}

namespace {
// A batch norm with no ReLU after it: the fused kernels' run of one, taking the Residual's add where it
// ends the main branch, unless they refuse it.
void plan_lone_batch_norm(FusionPlan& plan, const std::vector<LayerSpec>& children, size_t i, const FusionAvailability& available,
                          bool ends_residual_main, bool relu_after_residual) {
  const bool at_end = ends_residual_main && i + 1 == children.size();
  const std::string why = why_not_fused(children[i], !at_end, available);
  if (!why.empty()) {
    plan.record += children[i].name + ": separate layer (" + why + ")\n";
    return;
  }
  FusionStep& head = plan.steps[i];
  head.path = FusionPath::FusedHead;
  head.adds_residual = at_end;
  head.relu_after_add = at_end && relu_after_residual;
  plan.record += children[i].name + (head.adds_residual ? " + residual add" : "") + (head.relu_after_add ? " + relu" : "") +
                 kFusedKernelsRecord + "\n";
}

// Whether the fused run takes the MaxPool2d after its batch norm and ReLU: NHWC windows that overlap or are
// padded (a ResNet's stem), whose positions the run keeps; a pool that ends a Residual's main branch stays
// a layer (the add follows it).
bool run_takes_pool(const std::vector<LayerSpec>& children, size_t pool, const FusionAvailability& available,
                    bool ends_residual_main) {
  if (!available.pool_in_run || available.layout != Layout::NHWC || !kind_at(children, pool, LayerKind::MaxPool2d))
    return false;
  const LayerSpec& p = children[pool];
  return (p.kernel != p.stride || p.pad != 0) && !(ends_residual_main && pool + 1 == children.size());
}

// A batch norm and its ReLU (and a Dropout or a max pool after them): the fused kernels' run, else cuDNN's
// bn+relu graph, else separate layers. Returns how many children the plan covered.
size_t plan_batch_norm_relu(FusionPlan& plan, const std::vector<LayerSpec>& children, size_t i,
                            const FusionAvailability& available, bool ends_residual_main) {
  const bool with_dropout = kind_at(children, i + 2, LayerKind::Dropout);
  const bool with_pool = run_takes_pool(children, i + 2, available, ends_residual_main);
  const bool at_end = ends_residual_main && i + (with_dropout ? 3 : 2) == children.size();
  const std::string why_not = why_not_fused(children[i], !with_dropout && !at_end, available);
  if (why_not.empty()) {
    const size_t run = with_dropout || with_pool ? 3 : 2;
    FusionStep& head = plan.steps[i];
    head.path = FusionPath::FusedHead;
    head.run = run;
    head.adds_residual = at_end;
    for (size_t k = 1; k < run; ++k) plan.steps[i + k].path = FusionPath::FusedMember;
    plan.record += names(children, i, run) + (head.adds_residual ? " + residual add" : "") + kFusedKernelsRecord + "\n";
    return run;
  }
  if (available.cudnn_bn_relu) {
    plan.steps[i].path = FusionPath::CudnnBnRelu;
    plan.steps[i + 1].path = FusionPath::ReluInPrevious;
    plan.record += names(children, i, 2) + ": cudnn bn+relu graph (" + why_not + ")\n";
  } else {
    plan.record += names(children, i, 2) + ": separate layers (" + why_not + ", no cudnn bn+relu)\n";
  }
  return 2;
}

// The layer kernels' patterns, on the children that no batch-norm run took.
void plan_layer_kernels(FusionPlan& plan, const std::vector<LayerSpec>& children, bool network_input) {
  for (size_t i = 0; i < children.size(); ++i) {
    const LayerPattern p = layer_pattern(children, i, network_input);
    if (p.path == FusionPath::Separate) continue;
    bool free = true;  // not already in a batch-norm run
    for (size_t k = 0; k < p.run; ++k) free = free && plan.steps[i + k].path == FusionPath::Separate;
    if (!free) continue;
    plan.steps[i].path = p.path;
    plan.steps[i].run = p.run;
    for (size_t k = 1; k < p.run; ++k) plan.steps[i + k].path = FusionPath::FusedMember;
    plan.record += names(children, i, p.run) + ": " + p.what + kLayerKernelsRecord + "\n";
    i += p.run - 1;
  }
}
}  // namespace

FusionPlan plan_fusion(const std::vector<LayerSpec>& children, const FusionAvailability& available,
                       bool ends_residual_main, bool network_input, bool relu_after_residual) {
  FusionPlan plan;
  plan.steps.resize(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    if (residual_takes_relu(children, i, available)) {
      plan.steps[i].path = FusionPath::ResidualThenRelu;
      plan.steps[i + 1].path = FusionPath::ReluInPrevious;
      i += 1;
      continue;
    }
    if (!kind_at(children, i, LayerKind::BatchNorm2d)) continue;
    if (!kind_at(children, i + 1, LayerKind::ReLU)) plan_lone_batch_norm(plan, children, i, available, ends_residual_main, relu_after_residual);
    else i += plan_batch_norm_relu(plan, children, i, available, ends_residual_main) - 1;
  }
  if (available.layer_kernels) plan_layer_kernels(plan, children, network_input);
  return plan;
}

}  // namespace sb
