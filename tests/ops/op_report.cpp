// The op harness's printers (see op_report.h).
#include "op_report.h"

#include <array>
#include <cstdio>
#include <functional>
#include <string>

#include "mnv2/csv.h"

namespace mnv2::ops {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct Column {
  const char* name;
  int console_width;  // 0: CSV only
  std::function<std::string(const BenchRow&)> get;
};

// The one list of columns: the console table shows those with a width, the CSV all of them.
const std::array<Column, 17> kColumns{{
    {"case", 60, [](const BenchRow& r) { return r.case_name; }},
    {"pattern", 0, [](const BenchRow& r) { return r.pattern; }},
    {"batch", 0, [](const BenchRow& r) { return std::to_string(r.batch); }},
    {"input", 0, [](const BenchRow& r) { return r.input; }},
    {"backend", 7, [](const BenchRow& r) { return r.backend; }},
    {"variant", 33, [](const BenchRow& r) { return r.variant; }},
    {"precision", 9, [](const BenchRow& r) { return r.precision; }},
    {"status", 6, [](const BenchRow& r) { return r.status; }},
    {"timer", 6, [](const BenchRow& r) { return r.timer; }},
    {"n", 4, [](const BenchRow& r) { return std::to_string(r.n); }},
    {"median_us", 11, [](const BenchRow& r) { return fixed(r.median_us, 1); }},
    {"p90_us", 11, [](const BenchRow& r) { return fixed(r.p90_us, 1); }},
    {"min_us", 0, [](const BenchRow& r) { return fixed(r.min_us, 1); }},
    {"cv", 6, [](const BenchRow& r) { return fixed(r.cv, 3); }},
    {"steps", 5, [](const BenchRow& r) { return std::to_string(r.steps); }},
    {"plan", 0, [](const BenchRow& r) { return r.plan; }},
    {"seed", 0, [](const BenchRow& r) { return std::to_string(r.seed); }},
}};

class ConsolePrinter final : public BenchPrinter {
 public:
  explicit ConsolePrinter(std::FILE* out) : out_(out) {
    std::string head, rule;
    for (const Column& c : kColumns)
      if (c.console_width > 0) {
        head += cell(c.name, c.console_width);
        rule += std::string(static_cast<size_t>(c.console_width), '-') + " ";
      }
    std::fprintf(out_, "%s\n%s\n", head.c_str(), rule.c_str());
  }
  void row(const BenchRow& r) override {
    std::string line;
    for (const Column& c : kColumns)
      if (c.console_width > 0) line += cell(c.get(r), c.console_width);
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }

 private:
  static std::string cell(std::string text, int width) {
    if (static_cast<int>(text.size()) > width) text = text.substr(0, static_cast<size_t>(width - 1)) + "~";
    text.resize(static_cast<size_t>(width), ' ');
    return text + " ";
  }
  std::FILE* out_;
};

class CsvPrinter final : public BenchPrinter {
 public:
  CsvPrinter(OutputSet& set, std::string label) : set_(set), label_(std::move(label)) {
    for (const Column& c : kColumns) text_ += std::string(text_.empty() ? "" : ",") + csv_quote(c.name);
    text_ += "\n";
  }
  void row(const BenchRow& r) override {
    std::string line;
    for (const Column& c : kColumns) line += std::string(line.empty() ? "" : ",") + csv_quote(c.get(r));
    text_ += line + "\n";
  }
  void finish() override { set_.put(label_, text_); }

 private:
  OutputSet& set_;
  std::string label_;
  std::string text_;
};

}  // namespace

std::unique_ptr<BenchPrinter> make_console_printer(std::FILE* out) { return std::make_unique<ConsolePrinter>(out); }

std::unique_ptr<BenchPrinter> make_csv_printer(OutputSet& set, const std::string& label) {
  return std::make_unique<CsvPrinter>(set, label);
}

}  // namespace mnv2::ops
