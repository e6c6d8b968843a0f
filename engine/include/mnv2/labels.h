// Class names and turning logits into ranked predictions.
#pragma once

#include <string>
#include <vector>

namespace mnv2 {

// The ImageNet class names shipped with the program: 1000 classes, or 1001 with "background" first.
// Other counts get "class N" names.
std::vector<std::string> builtin_labels(int num_classes);

// Where the class names for a model with `num_classes` come from, in words: the labels file the user gave
// (`labels_file`, as --labels does), else the built-in list builtin_labels() picks. The rule is
// builtin_labels()'s; this only says it.
std::string labels_source(int num_classes, const std::string& labels_file = "");

// One label per line; throws Error naming the file if it cannot be read or is empty.
std::vector<std::string> read_labels_file(const std::string& path);

struct Prediction {
  int index = 0;
  std::string label;
  double prob = 0.0;  // softmax probability
  double logit = 0.0;
};

// Softmax over `count` logits (in double), then the k most probable, ties by lower index.
std::vector<Prediction> top_k(const float* logits, int count, int k, const std::vector<std::string>& labels);

}  // namespace mnv2
