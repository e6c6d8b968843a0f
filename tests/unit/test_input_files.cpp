// Every read has a type check and a budget (mnv2/input_files.h): FIFOs and devices refused without blocking,
// sizes, lines and strings bounded, the file named in every error.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/labels.h"
#include "mnv2/model.h"
#include "mnv2/report.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2 {
namespace {

using test::TempDir;
using test::write_file;

// Runs `read` on another thread and fails (instead of hanging the suite) if it does not finish in 10 s;
// returns the error text it threw ("" if none).
std::string refusal(const std::function<void()>& read) {
  auto done = std::async(std::launch::async, [&] {
    try {
      read();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the read blocked";
    std::abort();  // a blocked reader thread cannot be joined
  }
  return done.get();
}

// Each reader of the program, on one path.
struct Reader {
  const char* name;
  std::function<void(const std::string&)> read;
};
const std::vector<Reader>& readers() {
  static const std::vector<Reader> all = {
      {"labels", [](const std::string& p) { read_labels_file(p); }},
      {"report", [](const std::string& p) { read_reports_file(p); }},
      {"json", [](const std::string& p) { json::parse_file(p); }},
      {"model", [](const std::string& p) { load_onnx(p); }},
      {"tensor",
       [](const std::string& p) {
         read_tensor_file(p, Shape{1, 3, 4, 4});
       }},
      {"image", [](const std::string& p) { decode_image_file(p); }},
  };
  return all;
}

TEST(InputFiles, EveryReaderRefusesFifosAndDevicesWithoutBlocking) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo(tmp.file("pipe").c_str(), 0600), 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, tmp.file("sock").c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (const Reader& r : readers())
    for (const std::string& path : {tmp.file("pipe"), std::string("/dev/zero"), tmp.file("sock"), tmp.path()}) {
      const std::string msg = refusal([&] { r.read(path); });
      EXPECT_NE(msg.find(path), std::string::npos) << r.name << " " << path << ": " << msg;
      EXPECT_NE(msg.find("not a regular file"), std::string::npos) << r.name << " " << path << ": " << msg;
    }
  ::close(sock);
}

TEST(InputFiles, MissingFileIsNamed) {
  for (const Reader& r : readers()) {
    const std::string msg = refusal([&] { r.read("/nonexistent/x"); });
    EXPECT_NE(msg.find("/nonexistent/x: cannot open"), std::string::npos) << r.name << ": " << msg;
  }
}

TEST(InputFiles, SizeIsCheckedBeforeReading) {
  TempDir tmp;
  // A sparse file: large on paper, nothing on disk, so the test costs no space.
  const std::string big = tmp.file("big");
  write_file(big, "");
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(inputs::kReport.max_bytes + 1)), 0);
  for (const InputBudget* b : {&inputs::kLabels, &inputs::kReport, &inputs::kRooflineCache, &inputs::kEvalList}) {
    if (b->max_bytes >= inputs::kReport.max_bytes + 1) continue;
    const std::string msg = refusal([&] { read_input_file(big, *b); });
    EXPECT_NE(msg.find(big + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(b->what) + " of "), std::string::npos) << msg;
    EXPECT_NE(msg.find("is over its limit of"), std::string::npos) << msg;
  }
}

TEST(InputFiles, LabelsAreBoundedInLinesAndLength) {
  TempDir tmp;
  write_file(tmp.file("long.txt"), "cat\n" + std::string(inputs::kLabels.max_string_bytes + 1, 'x') + "\n");
  std::string msg = refusal([&] { read_labels_file(tmp.file("long.txt")); });
  EXPECT_NE(msg.find(tmp.file("long.txt") + ":2: a label of"), std::string::npos) << msg;
  std::string many;
  many.reserve((inputs::kLabels.max_lines + 1) * 2);
  for (uint64_t i = 0; i <= inputs::kLabels.max_lines; ++i) many += "a\n";
  write_file(tmp.file("many.txt"), many);
  msg = refusal([&] { read_labels_file(tmp.file("many.txt")); });
  EXPECT_NE(msg.find("lines is more than a labels file can have"), std::string::npos) << msg;
}

TEST(InputFiles, ReportStringsAndMemoryAreBounded) {
  TempDir tmp;
  // A report-shaped file whose warning is a string past the report's bound: refused before it is built, so
  // neither the reader nor a widget ever holds it.
  write_file(tmp.file("long.json"), "{\"schema\": \"mnv2.report\", \"schema_version\": 1, \"runs\": [], \"x\": \"" +
                                        std::string(inputs::kReport.max_string_bytes + 1, 'w') + "\"}");
  std::string msg = refusal([&] { read_reports_file(tmp.file("long.json")); });
  EXPECT_NE(msg.find(tmp.file("long.json")), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds a string of"), std::string::npos) << msg;
  // The shape with the largest memory per byte of text, under the size bound but past the memory bound.
  const uint64_t count = inputs::kReport.max_parsed_bytes / 60;
  std::string objects;
  objects.reserve(count * 3 + 2);
  objects += "[{}";
  for (uint64_t i = 1; i < count; ++i) objects += ",{}";
  objects += "]";
  ASSERT_LT(objects.size(), inputs::kReport.max_bytes);
  write_file(tmp.file("objects.json"), objects);
  msg = refusal([&] { read_reports_file(tmp.file("objects.json")); });
  EXPECT_NE(msg.find("of memory once parsed"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mnv2
