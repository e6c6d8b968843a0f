// What two runs have in common (compare_settings: every differing setting weighed, the same rule for both
// front ends) and sessions (the app's run history as one report file, with names, notes and a baseline).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "test_support.h"

namespace mnv2::test {
namespace {
namespace fs = std::filesystem;
using Weight = SettingDifference::Weight;

// Two real cpu runs of the built-in network at 32×32: batch 1 and batch 2, everything else alike.
const std::vector<RunReport>& real_runs() {
  static const std::vector<RunReport> runs = [] {
    const Model m = builtin_mobilenet_v2();
    std::vector<RunReport> out;
    for (int batch : {1, 2}) {
      ProfileConfig cfg;
      cfg.batch = batch;
      cfg.height = cfg.width = 32;
      cfg.warmup = 0;
      cfg.iters = 2;
      out.push_back(profile(m, cfg));
    }
    return out;
  }();
  return runs;
}

const SettingDifference* find(const RunComparability& c, const std::string& setting) {
  for (const SettingDifference& d : c.differences)
    if (d.setting == setting) return &d;
  return nullptr;
}

TEST(CompareSettings, IdenticalRunsDifferInNothing) {
  const RunReport& a = real_runs()[0];
  const RunComparability c = compare_settings(a, a);
  EXPECT_TRUE(c.differences.empty());
  EXPECT_FALSE(c.warned());
  EXPECT_FALSE(c.refused());
  EXPECT_DOUBLE_EQ(c.images_ratio, 1);
}

TEST(CompareSettings, ABatchDifferenceWarnsAndGivesThePerImageScale) {
  const RunComparability c = compare_settings(real_runs()[0], real_runs()[1]);
  const SettingDifference* d = find(c, "batch");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->weight, Weight::warn);
  EXPECT_EQ(d->a, "1");
  EXPECT_EQ(d->b, "2");
  EXPECT_NE(d->consequence.find("per-image"), std::string::npos) << d->consequence;
  EXPECT_DOUBLE_EQ(c.images_ratio, 2);
  EXPECT_TRUE(c.warned());
  EXPECT_FALSE(c.refused());
  // Two runs a moment apart on one machine, same image: nothing else of the list differs than the batch (the
  // input checksum covers the whole batch, so it differs too, but that is the batch difference, not news).
  ASSERT_EQ(real_runs()[0].config.input_name, real_runs()[1].config.input_name);
  ASSERT_NE(real_runs()[0].input_checksum, real_runs()[1].input_checksum);
  for (const SettingDifference& x : c.differences)
    EXPECT_EQ(x.setting, "batch") << x.setting << ": " << x.a << " / " << x.b;
}

TEST(CompareSettings, OtherDataUnderTheSameNameAndShapeIsNoted) {
  RunReport a = real_runs()[0];
  RunReport b = a;
  b.input_checksum = "fnv1a64:0123456789abcdef";
  const RunComparability c = compare_settings(a, b);
  const SettingDifference* d = find(c, "input");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->weight, Weight::note);
  EXPECT_NE(d->b.find("[fnv1a64:0123"), std::string::npos) << d->b;
  b = a;
  b.config.input_name = "dog.jpg";
  ASSERT_NE(find(compare_settings(a, b), "input"), nullptr);
  EXPECT_EQ(find(compare_settings(a, b), "input")->b, "dog.jpg");
}

// A report written while model checksums were FNV-1a against a SHA-256 one: nothing is known either way, and
// the finding says so; two SHA-256 checksums that differ are different models (or weights files).
TEST(CompareSettings, ModelChecksumsOfAnotherAlgorithmAreUnknownNotDifferent) {
  RunReport a = real_runs()[0];
  ASSERT_EQ(a.model_checksum.rfind("sha256:", 0), 0u) << a.model_checksum;
  RunReport b = a;
  b.model_checksum = "fnv1a64:dba58d2a476a8c2e";
  RunComparability c = compare_settings(b, a);
  const SettingDifference* d = find(c, "model");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->weight, Weight::note);
  EXPECT_NE(d->consequence.find("unknown"), std::string::npos) << d->consequence;
  EXPECT_NE(d->consequence.find("fnv1a64 and sha256"), std::string::npos) << d->consequence;
  EXPECT_EQ(d->consequence.find("different weights"), std::string::npos) << d->consequence;
  EXPECT_NE(d->a.find("[fnv1a64:dba58d2a476a]"), std::string::npos) << d->a;
  EXPECT_NE(d->b.find("[" + a.model_checksum.substr(0, 19) + "]"), std::string::npos) << d->b;
  EXPECT_FALSE(c.warned());

  b.model_checksum = "sha256:" + std::string(64, '0');
  c = compare_settings(a, b);
  d = find(c, "model");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->weight, Weight::warn);
  EXPECT_NE(d->consequence.find("different weights"), std::string::npos) << d->consequence;

  // The same .onnx file with another external data file is another model too.
  b = a;
  a.model_data_files = {{"w.bin", "sha256:" + std::string(64, '1')}};
  b.model_data_files = {{"w.bin", "sha256:" + std::string(64, '2')}};
  c = compare_settings(a, b);
  d = find(c, "model");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->weight, Weight::warn);
  b.model_data_files = a.model_data_files;
  EXPECT_EQ(find(compare_settings(a, b), "model"), nullptr);
}

TEST(CompareSettings, EverySettingTheIssueNamesIsStatedWithItsWeight) {
  RunReport a = real_runs()[0];
  RunReport b = a;
  b.config.height = b.config.width = 64;
  b.config.precision = Precision::fp16;
  b.device = "NVIDIA H200";
  a.device = "NVIDIA H100 80GB HBM3";
  a.sm_clock_mhz_start = a.sm_clock_mhz_end = 1980;
  b.sm_clock_mhz_start = 1980;
  b.sm_clock_mhz_end = 1500;  // throttled during the run
  b.model_checksum = "sha256:" + std::string(64, 'f');
  b.timer = "cupti_kernel";
  a.timer = "cuda_event";
  b.execution = "graph replay";
  a.cudnn = "9.13.1";  // both set: the machine's own cuDNN (the recorded runs') may be either
  b.cudnn = "9.14.0";
  b.config.iters = 500;
  const RunComparability c = compare_settings(a, b);
  struct Want {
    const char* setting;
    Weight weight;
  };
  for (const Want& w :
       {Want{"input size", Weight::warn}, Want{"precision", Weight::note}, Want{"device", Weight::warn},
        Want{"SM clock", Weight::warn}, Want{"model", Weight::warn}, Want{"timer", Weight::warn},
        Want{"per-layer execution", Weight::warn}, Want{"cuDNN", Weight::note}, Want{"iterations", Weight::note}}) {
    const SettingDifference* d = find(c, w.setting);
    ASSERT_NE(d, nullptr) << w.setting;
    EXPECT_EQ(d->weight, w.weight) << w.setting;
    EXPECT_FALSE(d->consequence.empty()) << w.setting;
  }
  EXPECT_EQ(find(c, "SM clock")->b, "1980→1500 MHz");
  EXPECT_EQ(find(c, "input size")->b, "64×64");
  // Refusals first, then warnings, then notes.
  for (size_t i = 1; i < c.differences.size(); ++i)
    EXPECT_GE(static_cast<int>(c.differences[i - 1].weight), static_cast<int>(c.differences[i].weight));
  EXPECT_FALSE(c.refused());
}

TEST(CompareSettings, ClocksWithinFivePercentAreANoteAndACpuAgainstAGpuIsNoWarning) {
  RunReport a = real_runs()[0];
  RunReport b = a;
  a.sm_clock_mhz_start = a.sm_clock_mhz_end = 1980;
  b.sm_clock_mhz_start = b.sm_clock_mhz_end = 1950;
  EXPECT_EQ(find(compare_settings(a, b), "SM clock")->weight, Weight::note);
  b.sm_clock_mhz_start = b.sm_clock_mhz_end = 1700;
  EXPECT_EQ(find(compare_settings(a, b), "SM clock")->weight, Weight::warn);

  RunReport gpu = real_runs()[0];
  gpu.backend = "cuda";
  gpu.device = "NVIDIA H200";
  gpu.timer = "cuda_event";
  const RunComparability c = compare_settings(real_runs()[0], gpu);
  EXPECT_EQ(find(c, "device")->weight, Weight::note);
  EXPECT_EQ(find(c, "timer")->weight, Weight::note);
  EXPECT_EQ(find(c, "backend")->weight, Weight::note);
  EXPECT_FALSE(c.warned());
}

// Two GPU runs on two cards: the card, its power limit and its clocks as NVML gave them (metadata.gpu).
GpuRecord card(const std::string& uuid, double watts, int max_mhz, int app_mhz, int mem_mhz) {
  GpuRecord g;
  g.index = 0;
  g.uuid = uuid;
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = "00000000:19:00.0";
  g.power_limit_w = watts;
  g.sm_clock_max_mhz = max_mhz;
  g.sm_clock_applications_mhz = app_mhz;
  g.memory_clock_mhz = mem_mhz;
  return g;
}

TEST(CompareSettings, AnotherCardsPowerLimitAndClocksAreWarnedTheOrdinalIsNot) {
  RunReport a = real_runs()[0];
  a.backend = "cuda";
  a.device = "NVIDIA H100 80GB HBM3";
  a.timer = "cuda_event";
  RunReport b = a;
  a.gpu = card("GPU-11111111-2222-3333-4444-555555555555", 700, 1980, 1755, 2619);
  b.gpu = a.gpu;
  b.gpu.index = 1;  // another ordinal of the same card (CUDA_VISIBLE_DEVICES): nothing to say
  b.config.device = 1;
  EXPECT_TRUE(compare_settings(a, b).differences.empty()) << compare_settings(a, b).differences.front().setting;

  b.gpu = card("GPU-99999999-2222-3333-4444-555555555555", 500, 1980, 1755, 2619);
  RunComparability c = compare_settings(a, b);
  ASSERT_NE(find(c, "GPU card"), nullptr);
  EXPECT_EQ(find(c, "GPU card")->weight, Weight::note);
  ASSERT_NE(find(c, "GPU power limit"), nullptr);
  EXPECT_EQ(find(c, "GPU power limit")->weight, Weight::warn);
  EXPECT_EQ(find(c, "GPU power limit")->a, "700 W");
  EXPECT_EQ(find(c, "GPU power limit")->b, "500 W");
  EXPECT_EQ(find(c, "GPU max SM clock"), nullptr);
  EXPECT_TRUE(c.warned());

  b.gpu = card("GPU-99999999-2222-3333-4444-555555555555", 700, 1980, 1500, 1593);
  c = compare_settings(a, b);
  EXPECT_EQ(find(c, "GPU power limit"), nullptr);
  ASSERT_NE(find(c, "GPU application clock"), nullptr);
  EXPECT_EQ(find(c, "GPU application clock")->weight, Weight::warn);
  ASSERT_NE(find(c, "GPU memory clock"), nullptr);
  EXPECT_EQ(find(c, "GPU memory clock")->b, "1593 MHz");

  // Settings NVML did not give (-1) are not compared; a report without the record (older, or a CPU run) neither.
  b.gpu = card("GPU-99999999-2222-3333-4444-555555555555", -1, -1, -1, -1);
  c = compare_settings(a, b);
  EXPECT_EQ(find(c, "GPU power limit"), nullptr);
  EXPECT_EQ(find(c, "GPU memory clock"), nullptr);
  b.gpu = GpuRecord{};
  EXPECT_TRUE(compare_settings(a, b).differences.empty());
}

TEST(GpuRecordJson, RoundTripsThroughAReportAndRefusesNonsense) {
  RunReport r = real_runs()[0];
  r.backend = "cuda";
  r.gpu = card("GPU-11111111-2222-3333-4444-555555555555", 700, 1980, 1755, 2619);
  r.gpu.index = 3;
  const RunReport back = reports_from_json(reports_json({r})).front();
  EXPECT_EQ(back.gpu.index, 3);
  EXPECT_EQ(back.gpu.uuid, r.gpu.uuid);
  EXPECT_EQ(back.gpu.name, r.gpu.name);
  EXPECT_EQ(back.gpu.pci_bus_id, r.gpu.pci_bus_id);
  EXPECT_EQ(back.gpu.power_limit_w, 700);
  EXPECT_EQ(back.gpu.sm_clock_max_mhz, 1980);
  EXPECT_EQ(back.gpu.sm_clock_applications_mhz, 1755);
  EXPECT_EQ(back.gpu.memory_clock_mhz, 2619);
  // A CPU run writes none and reads back none.
  EXPECT_EQ(reports_from_json(reports_json({real_runs()[0]})).front().gpu.index, -1);
  for (const auto& [key, value] : std::vector<std::pair<std::string, json::Json>>{{"index", -1},
                                                                                  {"index", 5000},
                                                                                  {"power_limit_w", -3.0},
                                                                                  {"power_limit_w", 0.0},
                                                                                  {"memory_clock_mhz", 1 << 30},
                                                                                  {"uuid", 7}}) {
    json::Json j = gpu_record_json(r.gpu);
    j[key] = value;
    EXPECT_THROW(gpu_record_from_json(j), Error) << key << " " << value.dump();
  }
  json::Json missing = gpu_record_json(r.gpu);
  missing.erase("pci_bus_id");
  EXPECT_THROW(gpu_record_from_json(missing), Error);
}

TEST(CompareSettings, DifferentNetworksAreRefusedWithTheReason) {
  RunReport a = real_runs()[0];
  RunReport b = a;
  b.topology.pop_back();
  b.layers.pop_back();
  const RunComparability c = compare_settings(a, b);
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.differences.front().setting, "model");
  EXPECT_NE(c.refusal().find("unrelated layers"), std::string::npos) << c.refusal();
  // The same layer count with other kinds is just as unrelated.
  RunReport k = a;
  k.topology[3].kind = k.topology[3].kind == LayerKind::ResidualAdd ? LayerKind::ReLU6 : LayerKind::ResidualAdd;
  EXPECT_TRUE(compare_settings(a, k).refused());
}

TEST(Sessions, RoundTripKeepsRunsNamesNotesAndTheBaseline) {
  Session s;
  s.runs.push_back({real_runs()[0], "before my change", "batch 1, idle machine"});
  s.runs.push_back({real_runs()[1], "", "ünïcode note\nwith a line break"});
  s.baseline = 1;
  const fs::path dir = fs::temp_directory_path() / ("mnv2-session-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "session.json").string();
  write_session_file(path, s);
  const Session back = read_session_file(path);
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_EQ(back.baseline, 1);
  EXPECT_EQ(back.runs[0].name, "before my change");
  EXPECT_EQ(back.runs[0].note, "batch 1, idle machine");
  EXPECT_EQ(back.runs[1].note, "ünïcode note\nwith a line break");
  EXPECT_EQ(back.runs[1].report.config.batch, 2);
  EXPECT_EQ(back.runs[0].report.steps.size(), real_runs()[0].steps.size());
  // A session is a report: anything that reads reports reads its runs.
  EXPECT_EQ(read_reports_file(path).size(), 2u);
  fs::remove_all(dir);
}

TEST(Sessions, APlainReportOpensAsASessionWithoutNamesOrBaseline) {
  const Session s = session_from_json(reports_json(real_runs()));
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.baseline, -1);
  EXPECT_TRUE(s.runs[0].name.empty());
  EXPECT_TRUE(s.runs[1].note.empty());
}

TEST(Sessions, ABadSessionObjectIsRefusedNamingWhat) {
  Session s;
  s.runs.push_back({real_runs()[0], "a", "b"});
  auto refused = [&](const std::function<void(json::Json&)>& spoil, const std::string& says) {
    json::Json j = session_json(s);
    spoil(j);
    try {
      session_from_json(j);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](json::Json& j) { j["session"]["baseline"] = 1; }, "baseline 1 is not one of its 1 run(s)");
  refused([](json::Json& j) { j["session"]["baseline"] = -2; }, "baseline -2");
  refused([](json::Json& j) { j["session"]["runs"].push_back(json::Json::object()); }, "names 2 run(s)");
  refused([](json::Json& j) { j["session"]["runs"][0]["note"] = 5; }, "'note' is not a string");
  refused([](json::Json& j) { j["session"]["runs"][0]["name"] = std::string(kMaxSessionText + 1, 'x'); },
          "longer than 4096 bytes");
  refused([](json::Json& j) { j["session"] = json::Json::array(); }, "'session' is not an object");
}

}  // namespace
}  // namespace mnv2::test
