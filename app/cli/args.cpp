// mnv2's arguments (see args.h).
#include "args.h"

#include <sstream>
#include <utility>

#include "common/environment.h"
#include "mnv2/error.h"

namespace mnv2::cli {

void Args::value(const std::string& name, const std::string& help) {
  options_[name] = app_.add_option(name, values_[name], help);
}

void Args::output(const std::string& name, const std::string& help) {
  value(name, help);
  options_[name]->type_name("FILE");
  output_names_.push_back(name);
}

void Args::input(const std::string& name, const std::string& help, bool list) {
  value(name, help);
  options_[name]->type_name(list ? "FILE[,FILE...]" : "FILE");
  input_names_.emplace_back(name, list);
}

void Args::flag(const std::string& name, const std::string& help) { flags_[name] = app_.add_flag(name, help); }

void Args::table(const std::string& name, const std::string& command_default) {
  const OptionSpec* spec = find_option(name);
  if (spec == nullptr) throw Error("no run option '" + name + "'");
  if (options_.count("--" + name)) return;
  if (!command_default.empty()) command_defaults_[name] = command_default;
  std::string help = spec->help;
  if (!spec->choices.empty()) {
    help += ": ";
    for (size_t i = 0; i < spec->choices.size(); ++i) help += (i ? ", " : "") + spec->choices[i];
  }
  if (spec->type == OptionType::integer)
    help += " (" + std::to_string(spec->min) + ".." + std::to_string(spec->max) + ")";
  const std::string def = command_default.empty() ? spec->default_value : command_default;
  if (!def.empty())
    help += " (default " + def + (spec->env.empty() ? ")" : ", or $" + spec->env + ")");
  else if (!spec->env.empty())
    help += " (or $" + spec->env + ")";
  if (!spec->backends.empty() && spec->backends.size() < 4) {
    help += " [";
    for (size_t i = 0; i < spec->backends.size(); ++i) help += (i ? ", " : "") + spec->backends[i];
    help += "]";
  }
  value("--" + name, help);
  // What --help and the manual page show for the value: the table's type.
  const char* type = "TEXT";
  switch (spec->type) {
    case OptionType::choice:
      type = "WORD";
      break;
    case OptionType::integer:
      type = "INT";
      break;
    case OptionType::size:
      type = "HxW";
      break;
    case OptionType::text:
      break;
    case OptionType::path:
      type = "PATH";
      break;
  }
  options_["--" + name]->type_name(type);
  table_names_.push_back(name);
}

void Args::positional(const std::string& name, const std::string& help) { app_.add_option(name, positionals_, help); }

OptionValues Args::resolve() const {
  OptionValues v(command_defaults_);
  frontend::offer_environment(v);
  for (const std::string& name : table_names_)
    if (auto given = get("--" + name)) v.offer(name, *given, OptionSource::flag);
  return v;
}

std::string Args::environment_note(const OptionValues& values) const {
  std::string list;
  for (const std::string& name : table_names_) {
    const OptionSpec* spec = find_option(name);
    const OptionValue& value = values.at(name);
    if (spec->per_run && value.source == OptionSource::environment)
      list += (list.empty() ? "" : ", ") + name + "=" + value.value + " ($" + spec->env + ")";
  }
  return list.empty() ? list : "options from the environment: " + list;
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end() || it->second->count() == 0) return std::nullopt;
  return values_.at(name);
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

bool Args::flag(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second->count() > 0;
}

std::vector<std::string> Args::forwardable(const OptionValues& values, const std::vector<std::string>& except) const {
  auto excluded = [&](const std::string& name) {
    for (const std::string& e : except)
      if (e == name) return true;
    for (const std::string& o : output_names_)
      if (o == name) return true;
    for (const auto& [i, list] : input_names_)
      if (i == name) return true;
    return false;
  };
  std::vector<std::string> out;
  for (const auto& [name, option] : options_) {
    if (excluded(name)) continue;
    const std::string bare = name.substr(2);
    const OptionSpec* spec = find_option(bare);
    if (spec != nullptr && !spec->per_run) continue;  // where files are on this machine: not the target's
    if (option->count() > 0) {
      out.insert(out.end(), {name, values_.at(name)});
    } else if (spec != nullptr && values.at(bare).source == OptionSource::environment) {
      out.insert(out.end(), {name, values.value(bare)});
    }
  }
  for (const auto& [name, flag] : flags_)
    if (flag->count() > 0 && !excluded(name)) out.push_back(name);
  return out;
}

std::vector<std::string> Args::file_options_given() const {
  std::vector<std::string> out;
  for (const std::string& o : output_names_)
    if (get(o)) out.push_back(o);
  for (const auto& [i, list] : input_names_)
    if (get(i)) out.push_back(i);
  for (const OptionSpec& s : option_table())
    if (!s.per_run && get("--" + s.name)) out.push_back("--" + s.name);
  if (!positionals_.empty()) out.push_back("a file argument");
  return out;
}

void Args::values(const std::string& name, const std::string& help) {
  app_.add_option(name, lists_[name], help)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = lists_.find(name);
  return it != lists_.end() ? it->second : std::vector<std::string>{};
}

bool Args::names_file(const std::string& name) const {
  for (const std::string& o : output_names_)
    if (o == name) return true;
  for (const auto& [i, list] : input_names_)
    if (i == name) return true;
  const OptionSpec* spec = name.rfind("--", 0) == 0 ? find_option(name.substr(2)) : nullptr;
  return spec != nullptr && spec->type == OptionType::path;
}

void Args::reserve_outputs() {
  for (const std::string& name : output_names_)
    if (auto path = get(name)) outputs_.add(name, *path);
  for (const auto& [name, list] : input_names_)
    if (auto path = get(name))
      for (const std::string& item : list ? split(*path, ',') : std::vector<std::string>{*path})
        outputs_.add_input(name, item);
  for (const std::string& file : positionals_) outputs_.add_input("", file);
}

int parse_int(const std::string& text, const std::string& what, int lo, int hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw UsageError(what + " must be an integer, got '" + text + "'");
  }
  if (used != text.size()) throw UsageError(what + " must be an integer, got '" + text + "'");
  if (v < lo || v > hi)
    throw UsageError(what + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.push_back("");
  return out;
}

std::vector<int> table_integers(const std::string& name, const std::string& list) {
  std::vector<int> out;
  for (const std::string& item : split(list, ',')) {
    OptionValues one;
    one.offer(name, item, OptionSource::flag);  // the table's check, its message naming --NAME
    out.push_back(static_cast<int>(one.integer(name)));
  }
  return out;
}

int table_integer_at_most(const Args& args, const OptionValues& values, const std::string& name, int max) {
  const long long v = values.integer(name);
  if (v > max)
    throw UsageError("--" + name + " must be in " + std::to_string(find_option(name)->min) + ".." +
                     std::to_string(max) + ", got " + args.get_or("--" + name, std::to_string(v)));
  return static_cast<int>(v);
}

void model_options(Args& a) { a.table("model"); }
void labels_option(Args& a) {
  a.input("--labels", "class names, one per line (default: the built-in ImageNet labels)");
}
void backend_option(Args& a) { a.table("backend"); }
void batch_option(Args& a) { a.table("batch"); }
void size_option(Args& a) { a.table("input-size"); }
void precision_option(Args& a) { a.table("precision"); }
void cuda_option_set(Args& a) {
  for (const OptionSpec& s : option_table())
    if (s.per_run && (s.name.rfind("cuda-", 0) == 0 || s.name.rfind("cudnn-", 0) == 0)) a.table(s.name);
}
void threads_option(Args& a) { a.table("threads"); }
void device_option(Args& a) { a.table("device"); }
void counts_options(Args& a, const char* warmup, const char* iters) {
  a.table("warmup", warmup);
  a.table("iters", iters);
}
void process_options(Args& a) {
  for (const OptionSpec& s : option_table())
    if (!s.per_run) a.table(s.name);
}
void report_options(Args& a, bool trace) {
  a.output("--csv", "write the results as CSV to this file ('-': standard output)");
  a.output("--json", "write the results as JSON to this file ('-': standard output)");
  if (trace) a.output("--trace", "write a Perfetto/Chrome trace to this file ('-': standard output)");
}
void target_option(Args& a) {
  a.value("--target",
          "run on this remote target ('mnv2 targets list'; default: this machine); NAME[@GPU][,NAME[@GPU]...]: the "
          "same run on each at once, side by side (profile, compare)");
}
void run_options(Args& a, bool compare) {
  model_options(a);
  if (compare)
    a.value("--backends", "B1,B2[,B3...]: the first is the reference of the diffs (default cpu,cudnn)");
  else
    backend_option(a);
  batch_option(a);
  size_option(a);
  counts_options(a, "10", "100");
  a.table("timing");
  a.table("exec");
  a.input("--image", "run on this photograph, preprocessed as the model says (default: random input, seed 1)");
  a.input("--tensor", "run on this raw float32 NCHW tensor file");
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  threads_option(a);
}

}  // namespace mnv2::cli
