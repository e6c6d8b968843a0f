// The cpu backend's step plan (see onednn_plan.h).
#include "backends/cpu/onednn_plan.h"

namespace mnv2::cpu {
namespace {

bool is_clip(const Layer& l) { return l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU; }

}  // namespace

std::vector<FusedGroup> plan_groups(const Model& model) {
  const int n = static_cast<int>(model.layers.size());
  // How many times each layer's output is read (an add of a value with itself reads it twice).
  std::vector<int> readers(static_cast<size_t>(n), 0);
  for (const Layer& l : model.layers)
    for (int j : l.inputs)
      if (j >= 0 && j < n) ++readers[static_cast<size_t>(j)];
  auto layer = [&](int i) -> const Layer& { return model.layers[static_cast<size_t>(i)]; };
  // Whether layer `next` exists and reads `last` only, and nothing else reads `last`.
  auto sole_reader = [&](int last, int next) {
    return next < n && readers[static_cast<size_t>(last)] == 1 &&
           (layer(next).inputs.size() == 1 ? layer(next).inputs[0] == last
                                           : (layer(next).inputs[0] == last) != (layer(next).inputs[1] == last));
  };

  std::vector<FusedGroup> groups;
  for (int i = 0; i < n;) {
    FusedGroup g;
    g.layers = {i};
    if (layer(i).kind == LayerKind::Conv2d) {
      int last = i;
      if (sole_reader(last, last + 1) && is_clip(layer(last + 1)) && layer(last + 1).inputs.size() == 1) {
        g.clip = ++last;
        g.layers.push_back(last);
      }
      if (sole_reader(last, last + 1) && layer(last + 1).kind == LayerKind::ResidualAdd &&
          layer(last + 1).inputs.size() == 2) {
        const Layer& add = layer(last + 1);
        const int other = add.inputs[0] == last ? add.inputs[1] : add.inputs[0];
        // The other operand must be computed before this step runs: an earlier layer or the network input.
        if (other < i) {
          g.add = ++last;
          g.residual = other;
          g.layers.push_back(last);
          if (sole_reader(last, last + 1) && is_clip(layer(last + 1)) && layer(last + 1).inputs.size() == 1) {
            g.clip_after_add = ++last;
            g.layers.push_back(last);
          }
        }
      }
    }
    i = g.output() + 1;
    groups.push_back(std::move(g));
  }
  return groups;
}

std::string group_name(const Model& model, const FusedGroup& group) {
  std::string name;
  for (int l : group.layers)
    name += (name.empty() ? "" : " + ") + std::string(to_string(model.layers[static_cast<size_t>(l)].kind)) + " " +
            std::to_string(l);
  return name;
}

}  // namespace mnv2::cpu
