// ONNX file -> engine graph. Parses with the official ONNX protobuf classes, reads external data (from
// inside the model's folder only), runs the ONNX library's checker where the file is not newer than the
// library, then walks the nodes in order, turning compute ops into Layers and folding everything else
// (BatchNorm, bias Adds, Gemm alpha/beta, Casts, shape helper sub-graphs) away. Every refusal names the
// file and, for a node, the node and its op, because users feed this arbitrary exports.
#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/input_files.h"
#include "mnv2/model.h"
#include "model/onnx_external_data.h"
#include "util/sha256.h"

namespace mnv2 {

namespace {

// Bounds on numbers read from a file, so that nothing is sized by an absurd value.
constexpr int64_t kMaxSide = 65536;                 // spatial side, kernel, stride, pad, dilation
constexpr int64_t kMaxChannels = 1 << 20;           // channels / features of one tensor
constexpr int64_t kMaxElements = int64_t{1} << 31;  // values in one initializer
constexpr int kDefaultSide = 224;                   // input size assumed when the file leaves H/W open
// Layers in one graph. MobileNetV2 has 99 and ResNet-152 about 500 in these terms; the bound keeps every
// per-layer pass (block naming is quadratic in the worst case) fast on a hostile graph of 100k tiny nodes.
constexpr size_t kMaxLayers = 4096;
// The versions this importer reads: IR 3 (ONNX 1.0) to 11 (ONNX 1.18), and the operator sets of the ops it
// converts as far as they have been checked (opset 23, ONNX 1.18; PyTorch 2.11 exports opset 18..23).
constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 11;
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 23;
// Values in a shape tensor computed at load time (Shape/Gather/Concat/...): a chain of Concats could
// otherwise double a list per node.
constexpr size_t kMaxShapeValues = 1024;

const float kInf = std::numeric_limits<float>::infinity();

// Double to float without undefined behaviour: a plain cast of a double beyond float's range is undefined
// in C++; here it becomes +-inf (what the hardware gives), and NaN stays NaN.
float to_float(double d) {
  if (std::isnan(d)) return std::numeric_limits<float>::quiet_NaN();
  if (d > std::numeric_limits<float>::max()) return kInf;
  if (d < -std::numeric_limits<float>::max()) return -kInf;
  return static_cast<float>(d);
}

// Error messages are printed as one line after "error: "; names from the file (and the ONNX checker's
// messages) may hold line breaks or terminal control characters; each run of them becomes one space.
std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool in_run = false;
  for (char c : s) {
    const bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (!control)
      out += c;
    else if (!in_run)
      out += ' ';
    in_run = control;
  }
  return out;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// A node-level refusal; the conversion loop adds "PATH: node 'NAME' (OP): ".
class Refusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An int64 element of a shape computation. Shapes of real tensors contain the batch size, which is not
// known at load time; it is carried symbolically so that Shape->Gather->Concat->Reshape can be checked.
enum class Sym : uint8_t { Known, Batch, Unknown };
struct SymInt {
  int64_t v = 0;
  Sym sym = Sym::Known;
};

struct Const {
  std::vector<int64_t> dims;
  bool is_float = true;
  std::vector<float> f;   // is_float
  std::vector<SymInt> i;  // !is_float
  size_t size() const { return is_float ? f.size() : i.size(); }
};

// What the importer knows about a tensor computed from the image.
struct TensorInfo {
  int layer = kNetworkInput;  // producing layer
  int rank = 4;               // 4: N x C x H x W map; 2: N x features (after Flatten / Linear)
  int64_t c = 0;              // channels (rank 4) or features (rank 2)
  int64_t h = 1, w = 1;       // at the declared input size (224 when the file leaves it open)
  bool after_softmax = false;
};

struct Value {
  bool is_const = false;
  TensorInfo t;
  Const k;
};

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string sym_str(const std::vector<SymInt>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += i ? ", " : "";
    s += v[i].sym == Sym::Batch ? "N" : v[i].sym == Sym::Unknown ? "?" : std::to_string(v[i].v);
  }
  return s + "]";
}

std::string data_type_name(int32_t t) {
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
  return "type " + std::to_string(t);
}

// Little-endian decoding independent of the host's byte order.
uint64_t load_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int b = bytes - 1; b >= 0; --b) v = (v << 8) | p[b];
  return v;
}

// IEEE half (binary16) bits to float: exact, subnormals, infinities and NaN included.
float half_to_float(uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  float f = 0.0f;
  if (exponent == 0) {
    f = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal: mantissa x 2^-24
  } else if (exponent == 31) {
    f = mantissa == 0 ? kInf : std::numeric_limits<float>::quiet_NaN();
  } else {
    f = std::bit_cast<float>(((exponent + 112) << 23) | (mantissa << 13));  // rebias 15 -> 127
  }
  return negative ? -f : f;
}

// bfloat16 bits are a float's upper half.
float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// The float16 value nearest to f (ties to even; beyond the largest half, infinity), as a float.
float round_to_half(float f) {
  if (!std::isfinite(f) || f == 0.0f) return f;
  const float a = std::fabs(f);
  float r = 0.0f;
  if (a >= 65520.0f) {
    r = kInf;  // 65504 is the largest half; from 65520 on, round-to-nearest goes to infinity
  } else {
    int e = 0;
    (void)std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    // Spacing of halves around a: 2^(e-11) for normal halves (exponent >= -14), 2^-24 below.
    const int quantum = std::max(e - 11, -24);
    r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum)), quantum);
  }
  return f < 0 ? -r : r;
}

// The bfloat16 value nearest to f (ties to even), as a float.
float round_to_bfloat16(float f) {
  if (std::isnan(f)) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(bits & 0xffff0000u);
}

// Bytes per element of the types decode_tensor reads; 0 for the others.
size_t element_size(int32_t type) {
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
      return 8;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

Const decode_tensor(const onnx::TensorProto& t, const std::string& name) {
  const std::string what = "tensor '" + name + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw Refusal(what +
                  " keeps its data in an external file that was not read (external data is read for the "
                  "main graph's initializers and node attributes only)");
  if (t.has_segment()) throw Refusal(what + " is segmented; segmented tensors are not supported");
  Const k;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw Refusal(what + " has a negative dimension " + std::to_string(d));
    if (d != 0 && numel > kMaxElements / d) throw Refusal(what + " is too large");
    numel *= d;
    k.dims.push_back(d);
  }
  const size_t n = static_cast<size_t>(numel);
  const std::string& raw = t.raw_data();
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  auto check_raw = [&](size_t elem) {
    if (raw.size() % elem != 0 || raw.size() / elem != n)
      throw Refusal(what + " has " + std::to_string(raw.size()) + " bytes of data; its shape " + dims_str(k.dims) +
                    " needs " + std::to_string(numel) + " values of " + std::to_string(elem) + " bytes");
  };
  // Some writers set raw_data to empty bytes beside the typed field that holds the values (a FLOAT16 tensor's
  // int32_data, one 16-bit pattern per int32): the values are where the data is, whichever field that is.
  auto from_raw = [&](int typed_count) { return t.has_raw_data() && !(raw.empty() && typed_count > 0); };
  auto check_count = [&](int count) {
    if (count < 0 || static_cast<size_t>(count) != n)
      throw Refusal(what + " has " + std::to_string(count) + " values; its shape " + dims_str(k.dims) + " needs " +
                    std::to_string(numel));
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (from_raw(t.float_data_size())) {
        check_raw(4);
        k.f.resize(n);
        for (size_t i = 0; i < n; ++i) k.f[i] = std::bit_cast<float>(static_cast<uint32_t>(load_le(bytes + 4 * i, 4)));
      } else {
        check_count(t.float_data_size());
        k.f.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto::DOUBLE:
      if (from_raw(t.double_data_size())) {
        check_raw(8);
        k.f.resize(n);
        for (size_t i = 0; i < n; ++i) k.f[i] = to_float(std::bit_cast<double>(load_le(bytes + 8 * i, 8)));
      } else {
        check_count(t.double_data_size());
        for (double d : t.double_data()) k.f.push_back(to_float(d));
      }
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // Weights stored in 16 bits become float32 here; int32_data holds one 16-bit pattern per value.
      const bool half = t.data_type() == onnx::TensorProto::FLOAT16;
      auto convert = [half](uint32_t bits) {
        return half ? half_to_float(static_cast<uint16_t>(bits)) : bfloat16_to_float(static_cast<uint16_t>(bits));
      };
      if (from_raw(t.int32_data_size())) {
        check_raw(2);
        k.f.resize(n);
        for (size_t i = 0; i < n; ++i) k.f[i] = convert(static_cast<uint32_t>(load_le(bytes + 2 * i, 2)));
      } else {
        check_count(t.int32_data_size());
        for (int32_t v : t.int32_data()) {
          if (v < 0 || v > 0xffff) throw Refusal(what + " holds " + std::to_string(v) + ", not a 16-bit pattern");
          k.f.push_back(convert(static_cast<uint32_t>(v)));
        }
      }
      break;
    }
    case onnx::TensorProto::INT64:
      k.is_float = false;
      if (from_raw(t.int64_data_size())) {
        check_raw(8);
        k.i.resize(n);
        for (size_t i = 0; i < n; ++i) k.i[i].v = static_cast<int64_t>(load_le(bytes + 8 * i, 8));
      } else {
        check_count(t.int64_data_size());
        for (int64_t v : t.int64_data()) k.i.push_back({v, Sym::Known});
      }
      break;
    case onnx::TensorProto::INT32:
      k.is_float = false;
      if (from_raw(t.int32_data_size())) {
        check_raw(4);
        k.i.resize(n);
        for (size_t i = 0; i < n; ++i)
          k.i[i].v = static_cast<int32_t>(static_cast<uint32_t>(load_le(bytes + 4 * i, 4)));
      } else {
        check_count(t.int32_data_size());
        for (int32_t v : t.int32_data()) k.i.push_back({v, Sym::Known});
      }
      break;
    default:
      throw Refusal(what + " has data type " + data_type_name(t.data_type()) +
                    "; only FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64 and INT32 tensors are supported");
  }
  return k;
}

std::string node_label(const onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return n.name();
  if (n.output_size() > 0 && !n.output(0).empty()) return n.output(0);
  return "#" + std::to_string(index);
}

// The default-domain operator set the model imports (the last entry if it repeats); 0 if none.
int64_t default_opset(const onnx::ModelProto& proto) {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto& o : proto.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  return opset;
}

bool has_external_data(const onnx::TensorProto& t) { return t.data_location() == onnx::TensorProto::EXTERNAL; }

// Why a tensor's declared shape is unusable (a negative dimension, more values than any weight may have),
// or "" if it is fine. Checked before anything multiplies the dimensions or sizes a buffer by them.
std::string shape_problem(const onnx::TensorProto& t) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) return "has a negative dimension in its shape " + dims_str(dims);
    if (d != 0 && numel > kMaxElements / d)
      return "declares the shape " + dims_str(dims) + ", more than " + std::to_string(kMaxElements) +
             " values; the tensor is too large";
    numel *= d;
  }
  return "";
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Locale-independent number parsing (a Qt GUI sets LC_NUMERIC from the environment).
bool parse_float(const std::string& text, float& out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  const char* first = s.data();
  if (*first == '+') ++first;
  auto [p, ec] = std::from_chars(first, s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

bool parse_int(const std::string& text, int& out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

void parse_preprocess(const std::string& path, const std::map<std::string, std::string>& meta, Preprocess& pre) {
  auto bad = [&](const std::string& key, const std::string& value, const std::string& want) {
    return Error(path + ": metadata '" + key + "' = '" + value + "': expected " + want);
  };
  for (const auto& [key, value] : meta) {
    if (key == "preprocess.color") {
      std::string v = trim(value);
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::toupper(ch); });
      if (v != "RGB" && v != "BGR") throw bad(key, value, "RGB or BGR");
      pre.color = v;
    } else if (key == "preprocess.resize" || key == "preprocess.crop") {
      int v = 0;
      // The image bound (mnv2/image.h), which preprocess() holds too: a larger side is the model's fault, said here.
      if (!parse_int(value, v) || v <= 0 || v > kMaxImageSide)
        throw bad(key, value, "a whole number of pixels in 1.." + std::to_string(kMaxImageSide));
      (key == "preprocess.resize" ? pre.resize : pre.crop) = v;
    } else if (key == "preprocess.mean" || key == "preprocess.std") {
      std::array<float, 3> v{};
      std::stringstream ss(value);
      std::string item;
      size_t count = 0;
      bool ok = true;
      while (std::getline(ss, item, ',')) {
        if (count < 3 && !parse_float(item, v[count])) ok = false;
        ++count;
      }
      if (!ok || count != 3) throw bad(key, value, "three comma-separated numbers (R,G,B)");
      // The bounds keep the network input finite (mnv2/model.h); values outside them are the model's fault.
      if (key == "preprocess.std") {
        for (float x : v)
          if (!(x >= kMinPreprocessStd && x <= kMaxPreprocessStd))
            throw bad(key, value, "three positive numbers (R,G,B) in 1e-06..1e+06");
        pre.std = v;
      } else {
        for (float x : v)
          if (!(std::fabs(x) <= kMaxAbsPreprocessMean)) throw bad(key, value, "three numbers (R,G,B) in -1e+06..1e+06");
        pre.mean = v;
      }
    }
  }
  // Checked once every key is read (either may be given alone; the other keeps its default).
  if (pre.crop > pre.resize) {
    const auto given = [&](const char* key, int v) {
      auto it = meta.find(key);
      return std::string(key) + (it == meta.end() ? " (default) = " + std::to_string(v) : " = '" + it->second + "'");
    };
    throw Error(path + ": metadata " + given("preprocess.crop", pre.crop) + " is larger than " +
                given("preprocess.resize", pre.resize) + ": the centred crop must fit in the resized image");
  }
}

class Importer {
 public:
  Importer(const std::string& path, const onnx::ModelProto& proto) : path_(path), proto_(proto), g_(proto.graph()) {}

  Model run();

 private:
  [[noreturn]] void fail_file(const std::string& why) const { throw Error(path_ + ": " + why); }

  std::string resolve(const std::string& name) const;
  void count_uses();
  void read_input();
  void convert(const onnx::NodeProto& n);

  // Inputs of the node being converted.
  bool has_input(const onnx::NodeProto& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  const Value& value(const onnx::NodeProto& n, int i);
  const TensorInfo& tensor_input(const onnx::NodeProto& n, int i);
  Const const_input(const onnx::NodeProto& n, int i, const std::string& role);
  // NaN and Inf values load: the layer they end up in is marked (note_nonfinite) and warned about.
  Const float_input(const onnx::NodeProto& n, int i, const std::string& role);
  float scalar_input(const onnx::NodeProto& n, int i, const std::string& role);
  std::vector<int64_t> int_list_input(const onnx::NodeProto& n, int i, const std::string& role);

  // Attributes of the node being converted.
  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name,
                                   onnx::AttributeProto::AttributeType type);
  int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t dflt);
  float attr_float(const onnx::NodeProto& n, const char* name, float dflt);
  std::string attr_string(const onnx::NodeProto& n, const char* name, const std::string& dflt);
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name, std::vector<int64_t> dflt);

  void set_output(const onnx::NodeProto& n, int i, Value v);
  void set_tensor(const onnx::NodeProto& n, TensorInfo t) {
    Value v;
    v.t = t;
    set_output(n, 0, std::move(v));
  }
  void set_const(const onnx::NodeProto& n, Const k) {
    Value v;
    v.is_const = true;
    v.k = std::move(k);
    set_output(n, 0, std::move(v));
  }
  void require_outputs(const onnx::NodeProto& n, int count);
  int add_layer(const onnx::NodeProto& n, Layer layer);
  void note_nonfinite(int layer, const std::vector<float>& values) {
    if (layer >= 0 && static_cast<size_t>(layer) < nonfinite_.size() && !all_finite(values))
      nonfinite_[static_cast<size_t>(layer)] = 1;
  }
  void warn_nonfinite_weights();
  int uses(const std::string& name) const {
    auto it = uses_.find(resolve(name));
    return it == uses_.end() ? 0 : it->second;
  }

  // Whether `name` is exactly layer `layer`'s output (not a reshaped view) and read by one node only: only
  // then may the layer's weights absorb what that node does.
  bool foldable(const std::string& name, int layer) const {
    return layer >= 0 && static_cast<size_t>(layer) < layer_output_.size() &&
           layer_output_[static_cast<size_t>(layer)] == resolve(name) && uses(name) == 1;
  }
  void folded_into(const onnx::NodeProto& n, const TensorInfo& x) {
    layer_output_[static_cast<size_t>(x.layer)] = resolve(n.output(0));
    set_tensor(n, x);
  }

  void conv(const onnx::NodeProto& n);
  void batch_norm(const onnx::NodeProto& n);
  void clip(const onnx::NodeProto& n, bool relu);
  void add(const onnx::NodeProto& n);
  void fold_bias(const onnx::NodeProto& n, int tensor_index, const Const& k);
  void average_pool(const onnx::NodeProto& n, bool global);
  void reduce_mean(const onnx::NodeProto& n);
  void cast(const onnx::NodeProto& n);
  void flatten(const onnx::NodeProto& n);
  void reshape(const onnx::NodeProto& n);
  void squeeze(const onnx::NodeProto& n);
  void gemm(const onnx::NodeProto& n, bool matmul);
  void softmax(const onnx::NodeProto& n);
  void pass_through(const onnx::NodeProto& n, bool dropout);
  void constant(const onnx::NodeProto& n);
  void shape(const onnx::NodeProto& n);
  void gather(const onnx::NodeProto& n);
  void unsqueeze(const onnx::NodeProto& n);
  void concat(const onnx::NodeProto& n);

  const std::string& path_;
  const onnx::ModelProto& proto_;
  const onnx::GraphProto& g_;
  int64_t opset_ = 0;
  bool fixed_size_ = false;     // the file fixes H and W
  int64_t declared_batch_ = 0;  // the batch size the file fixes for its input; 0: symbolic or open
  Model model_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, std::string> alias_;  // Identity/Dropout output -> input
  std::unordered_map<std::string, int> uses_;           // consumers per resolved name
  std::vector<std::string> layer_output_;               // per layer: the name its unreshaped output goes by now
  std::vector<char> nonfinite_;                         // per layer: a weight read for it held NaN or Inf
  std::string label_;                                   // the node being converted, for warnings
  Value scratch_;                                       // a large initializer decoded for the current node only
};

std::string Importer::resolve(const std::string& name) const {
  std::string s = name;
  // Aliases only point at earlier names, so a chain is at most as long as the node list.
  for (int guard = 0; guard <= g_.node_size(); ++guard) {
    auto it = alias_.find(s);
    if (it == alias_.end()) break;
    s = it->second;
  }
  return s;
}

// A Cast to FLOAT passes float32 tensors through unchanged (the engine computes in float32).
bool is_cast_to_float(const onnx::NodeProto& n) {
  if (n.op_type() != "Cast" || !n.domain().empty()) return false;
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == "to") return a.type() == onnx::AttributeProto::INT && a.i() == onnx::TensorProto::FLOAT;
  return false;
}

void Importer::count_uses() {
  for (const onnx::NodeProto& n : g_.node()) {
    const bool alias =
        ((n.op_type() == "Identity" || n.op_type() == "Dropout") && n.domain().empty()) || is_cast_to_float(n);
    if (alias && n.input_size() >= 1 && n.output_size() >= 1 && !n.input(0).empty()) {
      alias_[n.output(0)] = resolve(n.input(0));
      continue;
    }
    for (const std::string& in : n.input())
      if (!in.empty()) ++uses_[resolve(in)];
  }
  for (const onnx::ValueInfoProto& out : g_.output()) ++uses_[resolve(out.name())];
}

void Importer::read_input() {
  std::vector<const onnx::ValueInfoProto*> inputs;
  std::string names;
  for (const onnx::ValueInfoProto& in : g_.input()) {
    if (initializers_.count(in.name())) continue;  // old exporters list weights as inputs too
    inputs.push_back(&in);
    names += (names.empty() ? "'" : ", '") + in.name() + "'";
  }
  if (inputs.size() != 1)
    fail_file("the graph has " + std::to_string(inputs.size()) + " non-weight inputs" +
              (names.empty() ? std::string() : " (" + names + ")") + "; expected exactly one image input");
  const onnx::ValueInfoProto& in = *inputs[0];
  const std::string what = "graph input '" + in.name() + "'";
  if (!in.type().has_tensor_type()) fail_file(what + " is not a tensor");
  const onnx::TypeProto_Tensor& tt = in.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::FLOAT)
    fail_file(what + " has element type " + data_type_name(tt.elem_type()) + "; expected FLOAT (float32)");
  if (!tt.has_shape() || tt.shape().dim_size() != 4)
    fail_file(
        what + " must be a 4-D N x C x H x W tensor" +
        (tt.has_shape() ? ", got rank " + std::to_string(tt.shape().dim_size()) : std::string(" (no shape given)")));
  const auto& d = tt.shape().dim();
  model_.file.input_name = in.name();
  for (const onnx::TensorShapeProto_Dimension& dim : d)
    model_.file.input_dims.push_back(dim.has_dim_value()                               ? std::to_string(dim.dim_value())
                                     : dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param()
                                                                                       : std::string("?"));
  if (d[0].has_dim_value() && d[0].dim_value() > 0 && d[0].dim_value() <= kMaxChannels)
    declared_batch_ = d[0].dim_value();
  if (!d[1].has_dim_value() || d[1].dim_value() <= 0 || d[1].dim_value() > kMaxChannels)
    fail_file(what + " must have a fixed, positive channel count (dimension 1)");
  model_.input_channels = static_cast<int>(d[1].dim_value());
  const bool h_fixed = d[2].has_dim_value() && d[2].dim_value() > 0;
  const bool w_fixed = d[3].has_dim_value() && d[3].dim_value() > 0;
  for (int i : {2, 3})
    if (d[i].has_dim_value() && (d[i].dim_value() > kMaxSide || d[i].dim_value() < 0))
      fail_file(what + " has an unusable size " + std::to_string(d[i].dim_value()) + " in dimension " +
                std::to_string(i));
  model_.input_height = h_fixed ? static_cast<int>(d[2].dim_value()) : kDefaultSide;
  model_.input_width = w_fixed ? static_cast<int>(d[3].dim_value()) : kDefaultSide;
  fixed_size_ = h_fixed && w_fixed;

  Value v;
  v.t.layer = kNetworkInput;
  v.t.rank = 4;
  v.t.c = model_.input_channels;
  v.t.h = model_.input_height;
  v.t.w = model_.input_width;
  values_[in.name()] = v;
}

const Value& Importer::value(const onnx::NodeProto& n, int i) {
  if (!has_input(n, i)) throw Refusal("input " + std::to_string(i) + " is missing");
  const std::string& name = n.input(i);
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  auto init = initializers_.find(name);
  if (init != initializers_.end()) {
    Value v;
    v.is_const = true;
    v.k = decode_tensor(*init->second, name);
    // Large weights are read once by their node; caching them would only double memory.
    if (v.k.size() > 64) {
      scratch_ = std::move(v);
      return scratch_;
    }
    return values_[name] = std::move(v);
  }
  throw Refusal("input '" + name +
                "' is not a value the importer can use (it is produced by an output it does not support)");
}

const TensorInfo& Importer::tensor_input(const onnx::NodeProto& n, int i) {
  const Value& v = value(n, i);
  if (v.is_const)
    throw Refusal("input '" + n.input(i) + "' is a constant; expected a tensor computed from the network input");
  if (v.t.after_softmax)
    throw Refusal("consumes the output of Softmax; Softmax is only supported as the network's last operation");
  return v.t;
}

Const Importer::const_input(const onnx::NodeProto& n, int i, const std::string& role) {
  if (!has_input(n, i)) throw Refusal(role + " (input " + std::to_string(i) + ") is missing");
  const Value& v = value(n, i);
  if (!v.is_const)
    throw Refusal(role + " '" + n.input(i) + "' is computed at run time; it must be an initializer or a Constant");
  return v.k;
}

Const Importer::float_input(const onnx::NodeProto& n, int i, const std::string& role) {
  Const k = const_input(n, i, role);
  if (!k.is_float) throw Refusal(role + " '" + n.input(i) + "' is not a floating-point tensor");
  return k;
}

float Importer::scalar_input(const onnx::NodeProto& n, int i, const std::string& role) {
  Const k = const_input(n, i, role);
  if (!k.is_float || k.size() != 1)
    throw Refusal(role + " '" + n.input(i) + "' must be a single float, got shape " + dims_str(k.dims));
  if (std::isnan(k.f[0])) throw Refusal(role + " '" + n.input(i) + "' is NaN");
  return k.f[0];
}

std::vector<int64_t> Importer::int_list_input(const onnx::NodeProto& n, int i, const std::string& role) {
  Const k = const_input(n, i, role);
  if (k.is_float || k.dims.size() > 1) throw Refusal(role + " '" + n.input(i) + "' must be a 1-D integer tensor");
  std::vector<int64_t> out;
  for (const SymInt& s : k.i) {
    if (s.sym != Sym::Known) throw Refusal(role + " '" + n.input(i) + "' is not known at load time");
    out.push_back(s.v);
  }
  return out;
}

const onnx::AttributeProto* Importer::attr(const onnx::NodeProto& n, const char* name,
                                           onnx::AttributeProto::AttributeType type) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() != name) continue;
    if (a.type() != type)
      throw Refusal(std::string("attribute '") + name + "' has type " +
                    onnx::AttributeProto_AttributeType_Name(a.type()) + "; expected " +
                    onnx::AttributeProto_AttributeType_Name(type));
    return &a;
  }
  return nullptr;
}

int64_t Importer::attr_int(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  const auto* a = attr(n, name, onnx::AttributeProto::INT);
  return a ? a->i() : dflt;
}
float Importer::attr_float(const onnx::NodeProto& n, const char* name, float dflt) {
  const auto* a = attr(n, name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : dflt;
}
std::string Importer::attr_string(const onnx::NodeProto& n, const char* name, const std::string& dflt) {
  const auto* a = attr(n, name, onnx::AttributeProto::STRING);
  return a ? a->s() : dflt;
}
std::vector<int64_t> Importer::attr_ints(const onnx::NodeProto& n, const char* name, std::vector<int64_t> dflt) {
  const auto* a = attr(n, name, onnx::AttributeProto::INTS);
  if (!a) return dflt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void Importer::require_outputs(const onnx::NodeProto& n, int count) {
  if (n.output_size() < count || n.output(0).empty()) throw Refusal("has no output");
  for (int i = count; i < n.output_size(); ++i)
    if (!n.output(i).empty() && uses(n.output(i)) > 0)
      throw Refusal("output " + std::to_string(i) + " ('" + n.output(i) +
                    "') is used; only the first output is supported");
}

void Importer::set_output(const onnx::NodeProto& n, int i, Value v) { values_[n.output(i)] = std::move(v); }

int Importer::add_layer(const onnx::NodeProto& n, Layer layer) {
  if (model_.layers.size() >= kMaxLayers)
    throw Refusal("the graph has more than " + std::to_string(kMaxLayers) +
                  " layers; this is not a network the engine takes");
  layer.index = static_cast<int>(model_.layers.size());
  nonfinite_.push_back(0);
  layer.source_name = !n.name().empty() ? n.name() : n.output(0);
  model_.layers.push_back(std::move(layer));
  layer_output_.push_back(resolve(n.output(0)));
  return model_.layers.back().index;
}

// The form (input and output counts, attribute names) of every operator the importer converts, per
// opset, as the ONNX specification gives it. The ONNX library's checker enforces this for the opsets it
// knows; for newer files it is skipped, and this check is what stands in for it. It runs for every file:
// an attribute the importer would not read (one of a later opset, or a misspelt one) is refused rather
// than silently ignored.
struct NodeForm {
  int min_inputs = 1, max_inputs = 1, max_outputs = 1;
  std::vector<std::string> attributes;
};

std::optional<NodeForm> node_form(const std::string& op, int64_t opset) {
  using V = std::vector<std::string>;
  constexpr int kMany = std::numeric_limits<int>::max();
  if (op == "Conv") return NodeForm{2, 3, 1, V{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}};
  if (op == "BatchNormalization") {
    V a{"epsilon", "momentum"};
    if (opset < 9) a.push_back("spatial");
    if (opset >= 14) a.push_back("training_mode");
    return NodeForm{5, 5, 5, a};
  }
  if (op == "Clip") return opset < 11 ? NodeForm{1, 1, 1, V{"min", "max"}} : NodeForm{1, 3, 1, V{}};
  if (op == "Relu" || op == "GlobalAveragePool" || op == "Identity") return NodeForm{1, 1, 1, V{}};
  if (op == "Add" || op == "MatMul") return NodeForm{2, 2, 1, V{}};
  if (op == "AveragePool") {
    V a{"auto_pad", "count_include_pad", "kernel_shape", "pads", "strides"};
    if (opset >= 10) a.push_back("ceil_mode");
    if (opset >= 19) a.push_back("dilations");
    return NodeForm{1, 1, 1, a};
  }
  if (op == "ReduceMean")
    return opset < 18 ? NodeForm{1, 1, 1, V{"axes", "keepdims"}}
                      : NodeForm{1, 2, 1, V{"keepdims", "noop_with_empty_axes"}};
  if (op == "Flatten" || op == "Softmax" || op == "Gather")
    return NodeForm{op == "Gather" ? 2 : 1, op == "Gather" ? 2 : 1, 1, V{"axis"}};
  if (op == "Reshape") return NodeForm{2, 2, 1, opset >= 14 ? V{"allowzero"} : V{}};
  if (op == "Squeeze") return opset < 13 ? NodeForm{1, 1, 1, V{"axes"}} : NodeForm{1, 2, 1, V{}};
  if (op == "Unsqueeze") return opset < 13 ? NodeForm{1, 1, 1, V{"axes"}} : NodeForm{2, 2, 1, V{}};
  if (op == "Gemm") return NodeForm{opset < 11 ? 3 : 2, 3, 1, V{"alpha", "beta", "transA", "transB"}};
  if (op == "Dropout") return opset < 12 ? NodeForm{1, 1, 2, V{"ratio"}} : NodeForm{1, 3, 2, V{"seed"}};
  if (op == "Constant") {
    V a{"value"};
    if (opset >= 11) a.push_back("sparse_value");
    if (opset >= 12)
      a.insert(a.end(), {"value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"});
    return NodeForm{0, 0, 1, a};
  }
  if (op == "Shape") return NodeForm{1, 1, 1, opset >= 15 ? V{"start", "end"} : V{}};
  if (op == "Concat") return NodeForm{1, kMany, 1, V{"axis"}};
  if (op == "Cast") return NodeForm{1, 1, 1, opset >= 19 ? V{"to", "saturate"} : V{"to"}};
  return std::nullopt;
}

void check_node_form(const onnx::NodeProto& n, int64_t opset) {
  const std::optional<NodeForm> form = node_form(n.op_type(), opset);
  if (!form) return;  // not an operator the importer converts: refused by name
  const std::string in_opset = " in opset " + std::to_string(opset);
  if (n.input_size() < form->min_inputs || n.input_size() > form->max_inputs)
    throw Refusal("has " + std::to_string(n.input_size()) + " inputs; " + n.op_type() + in_opset + " takes " +
                  (form->min_inputs == form->max_inputs
                       ? std::to_string(form->min_inputs)
                       : std::to_string(form->min_inputs) + " to " + std::to_string(form->max_inputs)));
  if (n.output_size() > form->max_outputs)
    throw Refusal("has " + std::to_string(n.output_size()) + " outputs; " + n.op_type() + in_opset + " has at most " +
                  std::to_string(form->max_outputs));
  std::set<std::string> seen;
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (!seen.insert(a.name()).second) throw Refusal("attribute '" + a.name() + "' is given twice");
    if (std::find(form->attributes.begin(), form->attributes.end(), a.name()) == form->attributes.end())
      throw Refusal("attribute '" + a.name() + "' is not an attribute of " + n.op_type() + in_opset);
  }
}

void Importer::convert(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    throw Refusal("operators from domain '" + n.domain() + "' are not supported");
  const std::string& op = n.op_type();
  check_node_form(n, opset_);
  if (op == "Conv") return conv(n);
  if (op == "BatchNormalization") return batch_norm(n);
  if (op == "Clip") return clip(n, false);
  if (op == "Relu") return clip(n, true);
  if (op == "Add") return add(n);
  if (op == "GlobalAveragePool") return average_pool(n, true);
  if (op == "AveragePool") return average_pool(n, false);
  if (op == "ReduceMean") return reduce_mean(n);
  if (op == "Cast") return cast(n);
  if (op == "Flatten") return flatten(n);
  if (op == "Reshape") return reshape(n);
  if (op == "Squeeze") return squeeze(n);
  if (op == "Gemm") return gemm(n, false);
  if (op == "MatMul") return gemm(n, true);
  if (op == "Softmax") return softmax(n);
  if (op == "Identity") return pass_through(n, false);
  if (op == "Dropout") return pass_through(n, true);
  if (op == "Constant") return constant(n);
  if (op == "Shape") return shape(n);
  if (op == "Gather") return gather(n);
  if (op == "Unsqueeze") return unsqueeze(n);
  if (op == "Concat") return concat(n);
  throw Refusal(
      "unsupported operator; this importer takes MobileNetV2-style networks (Conv, BatchNormalization, "
      "Clip, Relu, Add, GlobalAveragePool, AveragePool, ReduceMean, Flatten, Reshape, Squeeze, Gemm, MatMul, "
      "Softmax, and Identity, Cast, Dropout as pass-throughs)");
}

void Importer::conv(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  if (x.rank != 4) throw Refusal("input '" + n.input(0) + "' is 2-D; Conv needs an N x C x H x W map");
  Const w = float_input(n, 1, "weight");
  if (w.dims.size() != 4)
    throw Refusal(
        "weight '" + n.input(1) + "' has shape " + dims_str(w.dims) +
        "; expected [out_channels, in_channels/group, kernel_h, kernel_w] (only 2-D convolution is supported)");
  const int64_t group = attr_int(n, "group", 1);
  if (group < 1 || group > kMaxChannels) throw Refusal("group " + std::to_string(group) + " is out of range");
  const int64_t m = w.dims[0], cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  if (m < 1 || m > kMaxChannels || kh < 1 || kw < 1 || kh > kMaxSide || kw > kMaxSide)
    throw Refusal("weight '" + n.input(1) + "' has unusable shape " + dims_str(w.dims));
  if (cg * group != x.c)
    throw Refusal("weight '" + n.input(1) + "' has shape " + dims_str(w.dims) + " but the input has " +
                  std::to_string(x.c) + " channels and group=" + std::to_string(group) + " (dimension 1 must be " +
                  (x.c % group == 0 ? std::to_string(x.c / group) : std::string("channels/group")) + ")");
  if (m % group != 0)
    throw Refusal("weight '" + n.input(1) + "' has " + std::to_string(m) +
                  " output channels, not a multiple of group=" + std::to_string(group));
  const std::vector<int64_t> kernel = attr_ints(n, "kernel_shape", {kh, kw});
  if (kernel != std::vector<int64_t>{kh, kw})
    throw Refusal("kernel_shape " + dims_str(kernel) + " does not match weight '" + n.input(1) + "' of shape " +
                  dims_str(w.dims));
  const std::vector<int64_t> strides = attr_ints(n, "strides", {1, 1});
  const std::vector<int64_t> dil = attr_ints(n, "dilations", {1, 1});
  std::vector<int64_t> pads = attr_ints(n, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1 || strides[0] > kMaxSide || strides[1] > kMaxSide)
    throw Refusal("strides " + dims_str(strides) + " must be two positive numbers");
  if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1 || dil[0] > kMaxSide || dil[1] > kMaxSide)
    throw Refusal("dilations " + dims_str(dil) + " must be two positive numbers");
  if (pads.size() != 4) throw Refusal("pads " + dims_str(pads) + " must have four values [top, left, bottom, right]");
  for (int64_t p : pads)
    if (p < 0 || p > kMaxSide) throw Refusal("pads " + dims_str(pads) + " must be in 0.." + std::to_string(kMaxSide));

  Layer L;
  L.kind = LayerKind::Conv2d;
  L.inputs = {x.layer};
  ConvParams& p = L.conv;
  p.in_channels = static_cast<int>(x.c);
  p.out_channels = static_cast<int>(m);
  p.kernel_h = static_cast<int>(kh);
  p.kernel_w = static_cast<int>(kw);
  p.stride_h = static_cast<int>(strides[0]);
  p.stride_w = static_cast<int>(strides[1]);
  p.dilation_h = static_cast<int>(dil[0]);
  p.dilation_w = static_cast<int>(dil[1]);
  p.groups = static_cast<int>(group);

  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET") {
    if (attr(n, "pads", onnx::AttributeProto::INTS) && pads != std::vector<int64_t>{0, 0, 0, 0})
      throw Refusal("has both auto_pad=" + auto_pad + " and explicit pads");
    if (auto_pad == "VALID") {
      p.auto_pad = AutoPad::Valid;
      pads = {0, 0, 0, 0};
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // SAME depends on the map size through (size mod stride): resolved here at the declared input size
      // (224 where the file leaves it open); analyse() refuses a run size at which ONNX would pad otherwise.
      p.auto_pad = auto_pad == "SAME_UPPER" ? AutoPad::SameUpper : AutoPad::SameLower;
      const std::array<int64_t, 4> same = resolve_same_pads(p, x.h, x.w);
      for (int64_t v : same)
        if (v > kMaxSide) throw Refusal("auto_pad " + auto_pad + " needs pads beyond " + std::to_string(kMaxSide));
      pads.assign(same.begin(), same.end());
    } else {
      throw Refusal("auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    }
  }
  p.pad_top = static_cast<int>(pads[0]);
  p.pad_left = static_cast<int>(pads[1]);
  p.pad_bottom = static_cast<int>(pads[2]);
  p.pad_right = static_cast<int>(pads[3]);

  TensorInfo y = x;
  y.c = m;
  y.h = (x.h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) / strides[0] + 1;
  y.w = (x.w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) / strides[1] + 1;
  if (x.h + pads[0] + pads[2] < dil[0] * (kh - 1) + 1 || x.w + pads[1] + pads[3] < dil[1] * (kw - 1) + 1) {
    if (fixed_size_)
      throw Refusal("the " + std::to_string(x.h) + "x" + std::to_string(x.w) + " input map is smaller than the kernel");
    y.h = std::max<int64_t>(y.h, 1);
    y.w = std::max<int64_t>(y.w, 1);
  }

  L.weight = std::move(w.f);
  if (has_input(n, 2)) {
    Const b = float_input(n, 2, "bias");
    if (b.dims != std::vector<int64_t>{m})
      throw Refusal("bias '" + n.input(2) + "' has shape " + dims_str(b.dims) + "; expected [" + std::to_string(m) +
                    "]");
    L.bias = std::move(b.f);
  }
  y.layer = add_layer(n, std::move(L));
  note_nonfinite(y.layer, model_.layers.back().weight);
  note_nonfinite(y.layer, model_.layers.back().bias);
  set_tensor(n, y);
}

void Importer::batch_norm(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  if (x.layer < 0 || model_.layers[static_cast<size_t>(x.layer)].kind != LayerKind::Conv2d)
    throw Refusal("input '" + n.input(0) +
                  "' is not the output of a Conv; only BatchNormalization right after a "
                  "Conv can be folded");
  if (!foldable(n.input(0), x.layer))
    throw Refusal("the Conv output '" + n.input(0) +
                  "' is also used elsewhere (or reshaped), so the "
                  "BatchNormalization cannot be folded into it");
  if (attr_int(n, "training_mode", 0) != 0) throw Refusal("training_mode=1 is not supported");
  if (attr_int(n, "spatial", 1) != 1) throw Refusal("spatial=0 is not supported");
  const float eps = attr_float(n, "epsilon", 1e-5f);
  if (!(eps >= 0.0f) || !std::isfinite(eps)) throw Refusal("epsilon must be a non-negative number");

  Layer& conv = model_.layers[static_cast<size_t>(x.layer)];
  const int64_t c = conv.conv.out_channels;
  const char* roles[4] = {"scale", "B", "mean", "var"};
  std::vector<float> p[4];
  for (int i = 0; i < 4; ++i) {
    Const k = float_input(n, i + 1, roles[i]);
    if (k.size() != static_cast<size_t>(c) || k.dims.size() != 1)
      throw Refusal(std::string(roles[i]) + " '" + n.input(i + 1) + "' has shape " + dims_str(k.dims) + "; expected [" +
                    std::to_string(c) + "] to match the Conv's output channels");
    note_nonfinite(x.layer, k.f);
    p[i] = std::move(k.f);
  }
  const size_t per_out = conv.weight.size() / static_cast<size_t>(c);
  std::vector<float> bias = conv.bias.empty() ? std::vector<float>(static_cast<size_t>(c), 0.0f) : conv.bias;
  for (size_t o = 0; o < static_cast<size_t>(c); ++o) {
    const double denom = static_cast<double>(p[3][o]) + eps;
    // A negative variance is a broken file; NaN passes (the layer is marked) and gives NaN weights.
    if (denom <= 0.0)
      throw Refusal("var + epsilon is not positive for channel " + std::to_string(o) + " of '" + n.input(4) + "'");
    // y = scale * (conv(x) + b - mean) / sqrt(var + eps) + B, folded into the convolution.
    const double s = p[0][o] / std::sqrt(denom);
    for (size_t j = 0; j < per_out; ++j) {
      float& wv = conv.weight[o * per_out + j];
      wv = to_float(wv * s);
    }
    // A tiny variance can overflow float here; the layer is then warned about like NaN weights.
    bias[o] = to_float((static_cast<double>(bias[o]) - p[2][o]) * s + p[1][o]);
  }
  conv.bias = std::move(bias);
  folded_into(n, x);
}

void Importer::clip(const onnx::NodeProto& n, bool relu) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  float lo = 0.0f, hi = kInf;
  if (!relu) {
    lo = -kInf;
    if (opset_ < 11) {
      lo = attr_float(n, "min", -kInf);
      hi = attr_float(n, "max", kInf);
      if (std::isnan(lo) || std::isnan(hi)) throw Refusal("min/max must not be NaN");
    } else {
      if (has_input(n, 1)) lo = scalar_input(n, 1, "min");
      if (has_input(n, 2)) hi = scalar_input(n, 2, "max");
    }
    if (lo > hi) throw Refusal("min " + std::to_string(lo) + " is greater than max " + std::to_string(hi));
  }
  Layer L;
  L.kind = lo == 0.0f && hi == 6.0f ? LayerKind::ReLU6 : LayerKind::ReLU;
  L.clip_min = lo;
  L.clip_max = hi;
  L.inputs = {x.layer};
  TensorInfo y = x;
  y.layer = add_layer(n, std::move(L));
  set_tensor(n, y);
}

void Importer::add(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  if (!has_input(n, 0) || !has_input(n, 1) || n.input_size() != 2) throw Refusal("needs two inputs");
  const Value& a = value(n, 0);
  const bool a_const = a.is_const;
  const bool b_const = value(n, 1).is_const;
  if (a_const && b_const) throw Refusal("adds two constants; constant folding of this kind is not supported");
  if (a_const || b_const) {
    const int ti = a_const ? 1 : 0;
    const Const k = const_input(n, 1 - ti, "addend");
    return fold_bias(n, ti, k);
  }
  const TensorInfo x = tensor_input(n, 0);
  const TensorInfo y = tensor_input(n, 1);
  if (x.rank != y.rank || x.c != y.c || x.h != y.h || x.w != y.w)
    throw Refusal("adds tensors of different shapes (" + std::to_string(x.c) + "x" + std::to_string(x.h) + "x" +
                  std::to_string(x.w) + " and " + std::to_string(y.c) + "x" + std::to_string(y.h) + "x" +
                  std::to_string(y.w) + "); only a residual sum of equal shapes is supported");
  Layer L;
  L.kind = LayerKind::ResidualAdd;
  L.inputs = {x.layer, y.layer};
  TensorInfo out = x;
  out.layer = add_layer(n, std::move(L));
  set_tensor(n, out);
}

void Importer::fold_bias(const onnx::NodeProto& n, int ti, const Const& k) {
  const TensorInfo x = tensor_input(n, ti);
  const std::string& name = n.input(ti);
  Layer* target = x.layer >= 0 ? &model_.layers[static_cast<size_t>(x.layer)] : nullptr;
  if (!target || (target->kind != LayerKind::Linear && target->kind != LayerKind::Conv2d) || !foldable(name, x.layer))
    throw Refusal("adds a constant to '" + name +
                  "'; only a bias right after MatMul/Gemm/Conv (whose output is used "
                  "only by this Add) can be folded");
  if (!k.is_float) throw Refusal("the constant addend '" + n.input(1 - ti) + "' is not floating-point");
  const int64_t c = target->kind == LayerKind::Linear ? target->out_features : target->conv.out_channels;
  // Accepted broadcasts: a scalar, or one value per output channel/feature.
  std::vector<int64_t> d = k.dims;
  const bool scalar = k.size() == 1 && d.size() <= (target->kind == LayerKind::Linear ? 2u : 4u);
  bool per_channel = false;
  if (target->kind == LayerKind::Linear) {
    per_channel = d == std::vector<int64_t>{c} || d == std::vector<int64_t>{1, c};
  } else {
    per_channel = d == std::vector<int64_t>{c, 1, 1} || d == std::vector<int64_t>{1, c, 1, 1};
  }
  if (!scalar && !per_channel)
    throw Refusal("the constant addend '" + n.input(1 - ti) + "' has shape " + dims_str(d) +
                  "; expected one value per output channel (" + std::to_string(c) + ")");
  note_nonfinite(x.layer, k.f);
  if (target->bias.empty()) target->bias.assign(static_cast<size_t>(c), 0.0f);
  for (size_t o = 0; o < static_cast<size_t>(c); ++o) target->bias[o] += scalar ? k.f[0] : k.f[o];
  folded_into(n, x);
}

void Importer::average_pool(const onnx::NodeProto& n, bool global) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  if (x.rank != 4) throw Refusal("input '" + n.input(0) + "' is 2-D; pooling needs an N x C x H x W map");
  Layer L;
  L.kind = LayerKind::GlobalAveragePool;
  L.inputs = {x.layer};
  if (!global) {
    const std::vector<int64_t> k = attr_ints(n, "kernel_shape", {});
    if (k.size() != 2 || k[0] < 1 || k[1] < 1 || k[0] > kMaxSide || k[1] > kMaxSide)
      throw Refusal("kernel_shape " + dims_str(k) + " must be two positive numbers");
    const std::vector<int64_t> pads = attr_ints(n, "pads", {0, 0, 0, 0});
    if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
      throw Refusal("pads " + dims_str(pads) + " are not supported; only an unpadded pool over the whole map is");
    const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") throw Refusal("auto_pad " + auto_pad + " is not supported");
    const std::vector<int64_t> dil = attr_ints(n, "dilations", {1, 1});
    if (dil != std::vector<int64_t>{1, 1}) throw Refusal("dilations " + dims_str(dil) + " are not supported");
    if (fixed_size_ && (k[0] != x.h || k[1] != x.w))
      throw Refusal("kernel " + dims_str(k) + " does not cover the whole " + std::to_string(x.h) + "x" +
                    std::to_string(x.w) + " map at the declared input size; only a global average pool is supported");
    L.pool_kernel_h = static_cast<int>(k[0]);
    L.pool_kernel_w = static_cast<int>(k[1]);
  }
  TensorInfo y = x;
  y.h = y.w = 1;
  y.layer = add_layer(n, std::move(L));
  set_tensor(n, y);
}

// ReduceMean over exactly the spatial axes is a global average pool: axes as an attribute before opset 18,
// as an input from 18 on (in any order, negative counted from the end). keepdims=0 gives N x C directly.
void Importer::reduce_mean(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  std::vector<int64_t> axes;
  if (opset_ < 18) {
    axes = attr_ints(n, "axes", {});
  } else if (has_input(n, 1)) {
    axes = int_list_input(n, 1, "axes");
  }
  const int64_t keepdims = attr_int(n, "keepdims", 1);
  if (keepdims != 0 && keepdims != 1) throw Refusal("keepdims " + std::to_string(keepdims) + " must be 0 or 1");
  if (axes.empty()) {
    if (opset_ >= 18 && attr_int(n, "noop_with_empty_axes", 0) != 0) {
      set_tensor(n, x);  // no axes and noop_with_empty_axes=1: the identity
      return;
    }
    throw Refusal("reduces over every axis (no axes given); only the mean over the spatial axes [2, 3] is supported");
  }
  if (x.rank != 4)
    throw Refusal("input '" + n.input(0) + "' is 2-D; only the mean over the spatial axes of a map is supported");
  for (int64_t& a : axes) {
    if (a < -4 || a > 3) throw Refusal("axis " + std::to_string(a) + " is out of range for a 4-D tensor");
    if (a < 0) a += 4;
  }
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3})
    throw Refusal("reduces over axes " + dims_str(axes) +
                  "; only the mean over the spatial axes [2, 3] (a global average pool) is supported");
  Layer L;
  L.kind = LayerKind::GlobalAveragePool;
  L.inputs = {x.layer};
  TensorInfo y = x;
  y.h = y.w = 1;
  if (keepdims == 0) y.rank = 2;
  y.layer = add_layer(n, std::move(L));
  set_tensor(n, y);
}

// Cast: of a computed tensor only to FLOAT (the engine computes in float32, so it is a no-op); of a
// constant (an initializer stored in another type, a shape value), folded here.
void Importer::cast(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const onnx::AttributeProto* to_attr = attr(n, "to", onnx::AttributeProto::INT);
  if (!to_attr) throw Refusal("has no 'to' attribute");
  const int64_t to = to_attr->i();
  const std::string to_name = to >= std::numeric_limits<int32_t>::min() && to <= std::numeric_limits<int32_t>::max()
                                  ? data_type_name(static_cast<int32_t>(to))
                                  : "type " + std::to_string(to);
  const Value& v = value(n, 0);
  if (!v.is_const) {
    if (to != onnx::TensorProto::FLOAT)
      throw Refusal("casts the computed tensor '" + n.input(0) + "' to " + to_name +
                    "; the engine computes in float32, so only a Cast to FLOAT (a no-op) is supported");
    (void)tensor_input(n, 0);  // the same checks as any consumer (not after Softmax)
    set_output(n, 0, v);
    return;
  }
  Const k = v.k;
  switch (to) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      if (!k.is_float) {
        for (const SymInt& i : k.i) {
          if (i.sym != Sym::Known) throw Refusal("casts a shape value that is not known at load time");
          k.f.push_back(static_cast<float>(i.v));
        }
        k.i.clear();
        k.is_float = true;
      }
      // Values are kept as float32; a cast to a narrower type rounds them to what that type holds.
      if (to == onnx::TensorProto::FLOAT16)
        for (float& f : k.f) f = round_to_half(f);
      if (to == onnx::TensorProto::BFLOAT16)
        for (float& f : k.f) f = round_to_bfloat16(f);
      break;
    }
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32: {
      if (k.is_float) {
        const double limit = to == onnx::TensorProto::INT32 ? 2147483648.0 : 9223372036854775808.0;
        for (float f : k.f) {
          const double t = std::trunc(static_cast<double>(f));  // ONNX casts float to int by truncation
          if (!std::isfinite(t) || t >= limit || t < -limit)
            throw Refusal("casts " + std::to_string(f) + " to " + to_name + ", which cannot hold it");
          k.i.push_back({static_cast<int64_t>(t), Sym::Known});
        }
        k.f.clear();
        k.is_float = false;
      } else if (to == onnx::TensorProto::INT32) {
        for (const SymInt& i : k.i)
          if (i.sym == Sym::Known &&
              (i.v < std::numeric_limits<int32_t>::min() || i.v > std::numeric_limits<int32_t>::max()))
            throw Refusal("casts " + std::to_string(i.v) + " to INT32, which cannot hold it");
      }
      break;
    }
    default:
      throw Refusal("casts to " + to_name + "; only FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64 and INT32 are supported");
  }
  set_const(n, std::move(k));
}

// Flatten / Reshape / Squeeze all turn an N x C x H x W map into N x (C*H*W) here; the engine's Linear reads
// its input flattened, so none of them is a layer.
void Importer::flatten(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  TensorInfo x = tensor_input(n, 0);
  const int64_t axis = attr_int(n, "axis", 1);
  if (axis != 1 && axis != 1 - x.rank)
    throw Refusal("axis " + std::to_string(axis) + " is not supported; only axis=1 (keep the batch) is");
  x.c = x.c * x.h * x.w;
  x.h = x.w = 1;
  x.rank = 2;
  set_tensor(n, x);
}

void Importer::reshape(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  TensorInfo x = tensor_input(n, 0);
  const Const k = const_input(n, 1, "shape");
  if (k.is_float || k.size() != 2)
    throw Refusal("shape '" + n.input(1) +
                  "' must hold two integers; only a reshape to [N, -1] (flatten) is supported");
  const bool allow_zero = attr_int(n, "allowzero", 0) != 0;
  const SymInt& d0 = k.i[0];
  const SymInt& d1 = k.i[1];
  const int64_t features = x.c * x.h * x.w;
  // The batch kept as such, copied (0), or written out as the batch size the file fixes for its input
  // (PyTorch's exporter writes [2, 1280] for a model exported at batch 2); the engine runs any batch.
  const bool keeps_batch =
      d0.sym == Sym::Batch || (d0.sym == Sym::Known && ((d0.v == 0 && !allow_zero) || d0.v == 1 ||
                                                        (declared_batch_ > 0 && d0.v == declared_batch_)));
  const bool rest = d1.sym == Sym::Known && (d1.v == -1 || d1.v == features);
  const bool infer_batch = d0.sym == Sym::Known && d0.v == -1 && d1.sym == Sym::Known && d1.v == features;
  if (!((keeps_batch && rest) || infer_batch))
    throw Refusal("reshape to " + sym_str(k.i) + " is not supported; only [N, -1] (flatten to " +
                  std::to_string(features) + " features per image) is");
  x.c = features;
  x.h = x.w = 1;
  x.rank = 2;
  set_tensor(n, x);
}

void Importer::squeeze(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  TensorInfo x = tensor_input(n, 0);
  std::vector<int64_t> axes = opset_ < 13 ? attr_ints(n, "axes", {})
                                          : (has_input(n, 1) ? int_list_input(n, 1, "axes") : std::vector<int64_t>{});
  for (int64_t& a : axes)
    if (a < 0) a += x.rank;
  std::sort(axes.begin(), axes.end());
  if (x.rank != 4 || x.h != 1 || x.w != 1 || axes != std::vector<int64_t>{2, 3})
    throw Refusal("only squeezing the 1x1 spatial axes [2, 3] of a pooled map is supported");
  x.rank = 2;
  set_tensor(n, x);
}

void Importer::gemm(const onnx::NodeProto& n, bool matmul) {
  require_outputs(n, 1);
  const TensorInfo x = tensor_input(n, 0);
  if (x.rank != 2)
    throw Refusal("input '" + n.input(0) +
                  "' is an N x C x H x W map; a Flatten or Reshape to [N, -1] must come first");
  Const b = float_input(n, 1, "weight");
  if (b.dims.size() != 2 || b.dims[0] < 1 || b.dims[1] < 1)
    throw Refusal("weight '" + n.input(1) + "' has shape " + dims_str(b.dims) + "; expected a 2-D matrix");
  bool trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  if (!matmul) {
    if (attr_int(n, "transA", 0) != 0) throw Refusal("transA=1 is not supported");
    trans_b = attr_int(n, "transB", 0) != 0;
    alpha = attr_float(n, "alpha", 1.0f);
    beta = attr_float(n, "beta", 1.0f);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) throw Refusal("alpha and beta must be finite");
  }
  const int64_t in = trans_b ? b.dims[1] : b.dims[0];
  const int64_t out = trans_b ? b.dims[0] : b.dims[1];
  if (in != x.c)
    throw Refusal("weight '" + n.input(1) + "' has shape " + dims_str(b.dims) + (trans_b ? " (transB=1)" : "") +
                  " but the input has " + std::to_string(x.c) + " features");
  if (out > kMaxChannels) throw Refusal("weight '" + n.input(1) + "' has too many outputs");
  if (in > std::numeric_limits<int>::max()) throw Refusal("weight '" + n.input(1) + "' has too many inputs");

  Layer L;
  L.kind = LayerKind::Linear;
  L.inputs = {x.layer};
  L.in_features = static_cast<int>(in);
  L.out_features = static_cast<int>(out);
  L.weight.resize(static_cast<size_t>(in * out));
  // The engine keeps [out, in]; alpha is folded into the weights.
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      L.weight[static_cast<size_t>(o * in + i)] = alpha * b.f[static_cast<size_t>(trans_b ? o * in + i : i * out + o)];
  if (!matmul && has_input(n, 2)) {
    const Const c = float_input(n, 2, "C");
    const bool ok = c.size() == 1 || c.dims == std::vector<int64_t>{out} || c.dims == std::vector<int64_t>{1, out};
    if (!ok || c.dims.size() > 2)
      throw Refusal("C '" + n.input(2) + "' has shape " + dims_str(c.dims) + "; expected [" + std::to_string(out) +
                    "] or [1, " + std::to_string(out) + "]");
    L.bias.resize(static_cast<size_t>(out));
    for (size_t o = 0; o < static_cast<size_t>(out); ++o) L.bias[o] = beta * (c.size() == 1 ? c.f[0] : c.f[o]);
  }
  TensorInfo y = x;
  y.c = out;
  y.layer = add_layer(n, std::move(L));
  // Checked on the file's values: alpha and beta scale them into the layer.
  note_nonfinite(y.layer, b.f);
  if (!matmul && has_input(n, 2)) note_nonfinite(y.layer, float_input(n, 2, "C").f);
  set_tensor(n, y);
}

void Importer::softmax(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  TensorInfo x = tensor_input(n, 0);
  if (x.layer < 0) throw Refusal("Softmax of the network input is not supported");
  const int64_t axis = attr_int(n, "axis", opset_ < 13 ? 1 : -1);
  // Softmax must run over the class axis: the features of a 2-D tensor, or the channels of an N x C x 1 x 1
  // map (opset < 13 flattens from `axis` on, so axis=1 covers C x 1 x 1 there).
  const bool over_classes =
      x.rank == 2 ? (axis == 1 || axis == -1) : (x.h == 1 && x.w == 1 && (axis == 1 || axis == -3));
  if (!over_classes) throw Refusal("axis " + std::to_string(axis) + " is not the class axis");
  x.after_softmax = true;
  set_tensor(n, x);
}

void Importer::pass_through(const onnx::NodeProto& n, bool dropout) {
  if (n.output_size() < 1 || n.output(0).empty() || !has_input(n, 0)) throw Refusal("needs one input and one output");
  if (dropout) {
    if (n.output_size() > 1 && !n.output(1).empty() && uses(n.output(1)) > 0)
      throw Refusal("its mask output is used; Dropout is only supported as a pass-through at inference");
    if (has_input(n, 2)) {
      const Const t = const_input(n, 2, "training_mode");
      const bool on = t.size() == 1 && (t.is_float ? t.f[0] != 0.0f : t.i[0].v != 0);
      if (on) throw Refusal("training_mode is on; only inference (pass-through) Dropout is supported");
    }
  } else if (n.output_size() > 1) {
    throw Refusal("has more than one output");
  }
  set_output(n, 0, value(n, 0));
}

void Importer::constant(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  if (n.attribute_size() != 1) throw Refusal("must have exactly one value attribute");
  const onnx::AttributeProto& a = n.attribute(0);
  Const k;
  if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    k = decode_tensor(a.t(), n.output(0));
  } else if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
    k.f = {a.f()};
  } else if (a.name() == "value_floats" && a.type() == onnx::AttributeProto::FLOATS) {
    k.f.assign(a.floats().begin(), a.floats().end());
    k.dims = {static_cast<int64_t>(k.f.size())};
  } else if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
    k.is_float = false;
    k.i = {{a.i(), Sym::Known}};
  } else if (a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS) {
    k.is_float = false;
    for (int64_t v : a.ints()) k.i.push_back({v, Sym::Known});
    k.dims = {static_cast<int64_t>(k.i.size())};
  } else {
    throw Refusal("attribute '" + a.name() + "' of type " + onnx::AttributeProto_AttributeType_Name(a.type()) +
                  " is not supported (value, value_float(s), value_int(s) are)");
  }
  set_const(n, std::move(k));
}

void Importer::shape(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const Value& v = value(n, 0);
  std::vector<SymInt> dims;
  if (v.is_const) {
    for (int64_t d : v.k.dims) dims.push_back({d, Sym::Known});
  } else {
    const TensorInfo& t = v.t;
    dims.push_back({0, Sym::Batch});
    dims.push_back({t.c, Sym::Known});
    if (t.rank == 4) {
      // H and W are only facts when the file fixes them; otherwise they follow the image.
      const Sym hw = fixed_size_ ? Sym::Known : Sym::Unknown;
      dims.push_back({t.h, hw});
      dims.push_back({t.w, hw});
    }
  }
  const int64_t r = static_cast<int64_t>(dims.size());
  int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  Const k;
  k.is_float = false;
  k.i.assign(dims.begin() + start, dims.begin() + end);
  k.dims = {static_cast<int64_t>(k.i.size())};
  set_const(n, std::move(k));
}

void Importer::gather(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  const Const data = const_input(n, 0, "data");
  const Const idx = const_input(n, 1, "indices");
  if (data.dims.size() != 1) throw Refusal("only gathering from a 1-D shape tensor is supported");
  const int64_t axis = attr_int(n, "axis", 0);
  if (axis != 0 && axis != -1) throw Refusal("axis " + std::to_string(axis) + " is out of range for a 1-D tensor");
  if (idx.is_float || idx.dims.size() > 1) throw Refusal("indices must be an integer scalar or 1-D tensor");
  const int64_t len = static_cast<int64_t>(data.size());
  Const k;
  k.is_float = data.is_float;
  k.dims = idx.dims;
  for (const SymInt& s : idx.i) {
    if (s.sym != Sym::Known) throw Refusal("indices are not known at load time");
    const int64_t j = s.v < 0 ? s.v + len : s.v;
    if (j < 0 || j >= len)
      throw Refusal("index " + std::to_string(s.v) + " is out of range for " + std::to_string(len) + " elements");
    if (data.is_float) {
      k.f.push_back(data.f[static_cast<size_t>(j)]);
    } else {
      k.i.push_back(data.i[static_cast<size_t>(j)]);
    }
  }
  set_const(n, std::move(k));
}

void Importer::unsqueeze(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  Const k = const_input(n, 0, "data");
  std::vector<int64_t> axes = opset_ < 13 ? attr_ints(n, "axes", {}) : int_list_input(n, 1, "axes");
  const int64_t out_rank = static_cast<int64_t>(k.dims.size() + axes.size());
  if (axes.empty() || out_rank > 8) throw Refusal("axes " + dims_str(axes) + " are not supported");
  for (int64_t& a : axes) {
    if (a < -out_rank || a >= out_rank) throw Refusal("axis " + std::to_string(a) + " is out of range");
    if (a < 0) a += out_rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw Refusal("axes repeat");
  std::vector<int64_t> dims;
  size_t src = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      dims.push_back(1);
    } else {
      dims.push_back(k.dims[src++]);
    }
  }
  k.dims = std::move(dims);
  set_const(n, std::move(k));
}

void Importer::concat(const onnx::NodeProto& n) {
  require_outputs(n, 1);
  if (n.input_size() < 1) throw Refusal("has no inputs");
  const int64_t axis = attr_int(n, "axis", 0);
  if (axis != 0 && axis != -1) throw Refusal("only concatenating 1-D shape tensors (axis 0) is supported");
  Const k;
  for (int i = 0; i < n.input_size(); ++i) {
    const Value& v = value(n, i);
    if (!v.is_const)
      throw Refusal("input '" + n.input(i) +
                    "' is a computed tensor; only shape tensors known at load time can be "
                    "concatenated");
    if (v.k.dims.size() != 1) throw Refusal("input '" + n.input(i) + "' is not 1-D");
    if (i == 0) k.is_float = v.k.is_float;
    if (v.k.is_float != k.is_float) throw Refusal("inputs mix float and integer tensors");
    if (k.size() + v.k.size() > kMaxShapeValues)
      throw Refusal("the concatenation holds more than " + std::to_string(kMaxShapeValues) +
                    " values; only shape tensors are concatenated at load time");
    k.f.insert(k.f.end(), v.k.f.begin(), v.k.f.end());
    k.i.insert(k.i.end(), v.k.i.begin(), v.k.i.end());
  }
  k.dims = {static_cast<int64_t>(k.size())};
  set_const(n, std::move(k));
}

Model Importer::run() {
  opset_ = default_opset(proto_);
  model_.file.ir_version = proto_.ir_version();
  model_.file.opset = opset_;
  model_.file.producer_name = one_line(proto_.producer_name());
  model_.file.producer_version = one_line(proto_.producer_version());

  for (const onnx::TensorProto& t : g_.initializer()) initializers_[t.name()] = &t;
  count_uses();
  read_input();

  for (int i = 0; i < g_.node_size(); ++i) {
    const onnx::NodeProto& n = g_.node(i);
    label_ = node_label(n, i);
    try {
      convert(n);
    } catch (const Refusal& r) {
      throw Error(path_ + ": node '" + node_label(n, i) + "' (" + n.op_type() + "): " + r.what());
    }
  }

  if (g_.output_size() != 1)
    fail_file("the graph has " + std::to_string(g_.output_size()) + " outputs; expected exactly one (the logits)");
  const std::string& out_name = g_.output(0).name();
  auto it = values_.find(out_name);
  if (it == values_.end() || it->second.is_const)
    fail_file("graph output '" + out_name + "' is not computed by the network");
  const TensorInfo& out = it->second.t;
  if (model_.layers.empty() || out.layer < 0) fail_file("the graph has no layers the engine can run");
  if (out.layer != static_cast<int>(model_.layers.size()) - 1)
    fail_file("graph output '" + out_name + "' is not the last layer's output (layer " + std::to_string(out.layer) +
              " of " + std::to_string(model_.layers.size()) + "); side branches are not supported");
  model_.has_softmax = out.after_softmax;
  const Layer& last = model_.layers.back();
  model_.num_classes = last.kind == LayerKind::Linear ? last.out_features : static_cast<int>(out.c * out.h * out.w);

  for (const onnx::StringStringEntryProto& e : proto_.metadata_props()) model_.metadata[e.key()] = e.value();
  parse_preprocess(path_, model_.metadata, model_.preprocess);

  assign_blocks_and_names(model_);
  warn_nonfinite_weights();

  // A file that fixes its input size must run at it; one that leaves it open is checked when it runs.
  if (fixed_size_) {
    try {
      analyse(model_, 1, model_.input_height, model_.input_width);
    } catch (const Error& e) {
      fail_file("the network cannot run at its declared input size: " + std::string(e.what()));
    }
  }
  return std::move(model_);
}

// Weights with NaN or Inf load, so that such a model can still be inspected and timed, but every output
// says its numbers mean nothing. Folding can also overflow finite file values into Inf.
void Importer::warn_nonfinite_weights() {
  for (const Layer& l : model_.layers) {
    const size_t i = static_cast<size_t>(l.index);
    if (nonfinite_[i] || !all_finite(l.weight) || !all_finite(l.bias))
      model_.warnings.push_back("weights of layer " + std::to_string(l.index) + " (" + l.name + ", ONNX node '" +
                                one_line(l.source_name) + "') contain NaN/Inf values: outputs are not meaningful");
  }
}

std::string read_whole_file(const std::string& path) { return read_input_file(path, inputs::kModel); }

void check_versions(const std::string& path, const onnx::ModelProto& proto) {
  if (!proto.has_ir_version()) throw Error(path + ": not a valid ONNX model (no IR version)");
  const int64_t ir = proto.ir_version();
  if (ir < kMinIrVersion || ir > kMaxIrVersion)
    throw Error(path + ": ONNX IR version " + std::to_string(ir) +
                " is not supported; this importer reads IR versions " + std::to_string(kMinIrVersion) + " to " +
                std::to_string(kMaxIrVersion));
  const int64_t opset = default_opset(proto);
  if (opset == 0) throw Error(path + ": the model imports no default ONNX operator set (ai.onnx)");
  if (opset < kMinOpset || opset > kMaxOpset)
    throw Error(path + ": ai.onnx opset " + std::to_string(opset) + " is not supported; this importer reads opsets " +
                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
}

// Why the ONNX library's checker cannot judge this model: an IR version or an imported operator set newer
// than the library knows (its checker would refuse the file, or judge new ops by old schemas). "" if it can.
std::string checker_skip_reason(const onnx::ModelProto& proto) {
  std::string why;
  auto add = [&](const std::string& s) { why += (why.empty() ? "" : ", ") + s; };
  const int64_t library_ir = onnx::Version::IR_VERSION;
  if (proto.ir_version() > library_ir)
    add("IR version " + std::to_string(proto.ir_version()) + " > " + std::to_string(library_ir));
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto& o : proto.opset_import()) {
    const std::string domain = o.domain() == "ai.onnx" ? std::string() : o.domain();
    auto it = known.find(domain);
    if (it == known.end()) continue;  // a domain the library has no schemas for: its nodes are refused anyway
    if (o.version() > it->second.second)
      add((domain.empty() ? std::string("ai.onnx") : domain) + " opset " + std::to_string(o.version()) + " > " +
          std::to_string(it->second.second));
  }
  return why;
}

bool has_inline_data(const onnx::TensorProto& t) {
  return t.has_raw_data() || t.float_data_size() > 0 || t.int32_data_size() > 0 || t.string_data_size() > 0 ||
         t.int64_data_size() > 0 || t.double_data_size() > 0 || t.uint64_data_size() > 0;
}

// Tensors the importer never reads as data: in subgraphs (If/Loop/Scan bodies), sparse tensors, local
// functions, training information. External data there is refused (the library's checker would look such
// files up itself, outside our rules); shapes are checked like any other, since the checker multiplies
// dimensions without an overflow check.
void check_unread_tensor(const std::string& path, const onnx::TensorProto& t, const std::string& where) {
  if (has_external_data(t))
    throw Error(path + ": " + where +
                " keeps its data in an external file; external data is only read for the main graph's "
                "initializers and node attributes");
  if (const std::string why = shape_problem(t); !why.empty()) throw Error(path + ": " + where + " " + why);
}
void check_unread_graph(const std::string& path, const onnx::GraphProto& g, const std::string& where);
void check_unread_sparse(const std::string& path, const onnx::SparseTensorProto& t, const std::string& where) {
  check_unread_tensor(path, t.values(), where + " (values)");
  check_unread_tensor(path, t.indices(), where + " (indices)");
}
void check_unread_attributes(const std::string& path, const onnx::NodeProto& n, const std::string& where,
                             bool tensors_too) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    const std::string in = where + ": attribute '" + a.name() + "'";
    if (tensors_too && a.has_t()) check_unread_tensor(path, a.t(), in);
    if (tensors_too)
      for (const onnx::TensorProto& t : a.tensors()) check_unread_tensor(path, t, in);
    if (a.has_sparse_tensor()) check_unread_sparse(path, a.sparse_tensor(), in);
    for (const onnx::SparseTensorProto& t : a.sparse_tensors()) check_unread_sparse(path, t, in);
    if (a.has_g()) check_unread_graph(path, a.g(), in);
    for (const onnx::GraphProto& sub : a.graphs()) check_unread_graph(path, sub, in);
  }
}
void check_unread_graph(const std::string& path, const onnx::GraphProto& g, const std::string& where) {
  for (const onnx::TensorProto& t : g.initializer())
    check_unread_tensor(path, t, where + ": initializer '" + t.name() + "'");
  for (const onnx::SparseTensorProto& t : g.sparse_initializer())
    check_unread_sparse(path, t, where + ": sparse initializer '" + t.values().name() + "'");
  for (int i = 0; i < g.node_size(); ++i)
    check_unread_attributes(path, g.node(i), where + ": node '" + node_label(g.node(i), i) + "'", true);
}

// Reads every external tensor of the main graph (initializers, node attribute tensors such as Constant
// values) into the model itself, so that the checker and the importer see an ordinary in-file model; the
// reader takes each file's checksum as it opens it.
class ExternalData {
 public:
  ExternalData(const std::string& path, const OnnxLoadOptions& options) : path_(path), options_(options) {}

  void load(onnx::TensorProto& t, const std::string& what) {
    try {
      if (has_inline_data(t)) throw detail::ExternalDataRefusal("is stored externally but also holds data in the file");
      const size_t elem = element_size(t.data_type());
      if (elem == 0)
        throw detail::ExternalDataRefusal("has data type " + data_type_name(t.data_type()) +
                                          ", which is not read from external data (FLOAT, FLOAT16, BFLOAT16, "
                                          "DOUBLE, INT64 and INT32 are)");
      uint64_t numel = 1;
      for (int64_t d : t.dims()) numel *= static_cast<uint64_t>(d);  // shape_problem() bounded them already
      const detail::ExternalRef ref = detail::parse_external_ref(t);
      if (!reader_) {
        std::string folder = options_.external_data_dir;
        if (folder.empty()) folder = std::filesystem::path(path_).parent_path().string();
        reader_.emplace(folder, static_cast<uint64_t>(std::max<int64_t>(0, options_.max_external_bytes)));
      }
      std::string bytes = reader_->read(ref, numel * elem);
      t.clear_external_data();
      t.set_data_location(onnx::TensorProto::DEFAULT);
      t.set_raw_data(std::move(bytes));
    } catch (const detail::ExternalDataRefusal& e) {
      throw Error(path_ + ": " + what + ": " + e.what());
    }
  }

  void record(ModelFileInfo& info) const {
    if (!reader_) return;
    info.external_files = reader_->files();
    info.external_bytes = static_cast<int64_t>(reader_->total_bytes());
  }

 private:
  const std::string& path_;
  const OnnxLoadOptions& options_;
  std::optional<detail::ExternalDataReader> reader_;  // made on the first external tensor
};

Model load_onnx_file(const std::string& path, const OnnxLoadOptions& options) {
  const std::string bytes = read_whole_file(path);
  if (bytes.empty()) throw Error(path + ": empty file");

  onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(path + ": not a valid ONNX model (truncated or corrupt protobuf)");
  if (!proto.has_graph()) throw Error(path + ": not a valid ONNX model (no graph)");
  check_versions(path, proto);

  // First, before any file is looked at (the main graph's external data included): tensors the importer
  // never reads (subgraphs, functions, training information) must not keep data in external files. The
  // refusal is the same whatever their location names, so it tells nothing about which paths exist.
  for (int i = 0; i < proto.graph().node_size(); ++i) {
    const onnx::NodeProto& n = proto.graph().node(i);
    check_unread_attributes(path, n, "node '" + node_label(n, i) + "' (" + n.op_type() + ")", false);
  }
  for (const onnx::FunctionProto& f : proto.functions())
    for (int i = 0; i < f.node_size(); ++i)
      check_unread_attributes(path, f.node(i), "function '" + f.name() + "': node '" + node_label(f.node(i), i) + "'",
                              true);
  for (const onnx::TrainingInfoProto& t : proto.training_info()) {
    check_unread_graph(path, t.initialization(), "training initialization graph");
    check_unread_graph(path, t.algorithm(), "training algorithm graph");
  }

  // Before the checker: external data is read here under our rules (the checker would look the files up
  // itself), and our messages for absurd shapes and dangling inputs are more direct than its.
  ExternalData external(path, options);
  onnx::GraphProto& g = *proto.mutable_graph();
  if (g.sparse_initializer_size() > 0) throw Error(path + ": sparse initializers are not supported");
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    const std::string what = "initializer '" + t.name() + "'";
    // The checker multiplies the dimensions without an overflow check; absurd shapes stop here.
    if (const std::string why = shape_problem(t); !why.empty()) throw Error(path + ": " + what + " " + why);
    if (has_external_data(t)) external.load(t, what);
  }
  std::set<std::string> known;
  for (const onnx::ValueInfoProto& in : g.input()) known.insert(in.name());
  for (const onnx::TensorProto& t : g.initializer()) known.insert(t.name());
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto& n = *g.mutable_node(i);
    const std::string label = "node '" + node_label(n, i) + "' (" + n.op_type() + ")";
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      std::vector<onnx::TensorProto*> tensors;
      if (a.has_t()) tensors.push_back(a.mutable_t());
      for (onnx::TensorProto& t : *a.mutable_tensors()) tensors.push_back(&t);
      for (onnx::TensorProto* t : tensors) {
        if (const std::string why = shape_problem(*t); !why.empty())
          throw Error(path + ": " + label + ": its tensor " + why);
        if (has_external_data(*t)) external.load(*t, label + ": attribute '" + a.name() + "'");
      }
    }
    for (const std::string& in : n.input())
      if (!in.empty() && !known.count(in))
        throw Error(path + ": " + label + ": input '" + in +
                    "' is not produced by any earlier node, initializer or graph input");
    for (const std::string& out : n.output())
      if (!out.empty() && !known.insert(out).second)
        throw Error(path + ": " + label + ": output '" + out +
                    "' is already defined earlier in the graph; every name must be assigned once");
  }
  for (const onnx::ValueInfoProto& out : g.output())
    if (!known.count(out.name())) throw Error(path + ": graph output '" + out.name() + "' is not produced by any node");

  const std::string skip = checker_skip_reason(proto);
  if (skip.empty()) {
    try {
      onnx::checker::check_model(proto);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      throw Error(path + ": ONNX checker: " + msg);
    }
  }

  Model model;
  try {
    model = Importer(path, proto).run();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A bug or an allocation failure must still surface as a model error, never as a crash.
    throw Error(path + ": cannot import the model: " + e.what());
  }
  model.source = path;
  // Of the very bytes parsed (the file is read once): `sha256sum FILE` prints the same digits.
  model.checksum = "sha256:" + sha256_hex(bytes);
  external.record(model.file);
  model.file.checker_ran = skip.empty();
  const std::string library = "ONNX " + std::string(onnx::LAST_RELEASE_VERSION);
  if (skip.empty()) {
    model.file.checker_note = "passed (" + library + " library)";
  } else {
    model.file.checker_note = "skipped: the model is newer than the " + library + " library knows (" + skip + ")";
    model.warnings.insert(model.warnings.begin(), "the " + library +
                                                      " library's checker was skipped: the model is newer than it "
                                                      "knows (" +
                                                      skip +
                                                      "); every node was checked by the importer's own rules instead");
  }
  return model;
}

}  // namespace

Model load_onnx(const std::string& path, const OnnxLoadOptions& options) {
  try {
    return load_onnx_file(path, options);
  } catch (const Error& e) {
    throw Error(one_line(e.what()));
  }
}

}  // namespace mnv2
