// The same run on several targets or GPUs at once (remote_run.h): `--target h200,h100` or `--target lab@0,lab@1`.
// Each place runs in a session of its own, concurrently (they are different machines or GPUs); the reports come back
// into one file and each is set beside the first with the engine's comparability rule and difference headline.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/remote_targets.h"
#include "mnv2/error.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "mnv2/tensor.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {

namespace fs = std::filesystem;

std::vector<Place> parse_places(const std::string& text) {
  std::vector<Place> places;
  for (const std::string& item : split(text, ',')) {
    Place p;
    const size_t at = item.find('@');
    p.target = item.substr(0, at);
    if (at != std::string::npos) p.device = parse_int(item.substr(at + 1), "--target " + item + ": the GPU", 0, 1023);
    p.label = item;
    if (p.target.empty()) throw UsageError("--target: an empty target in '" + text + "'");
    for (const Place& q : places)
      if (q.target == p.target && q.device == p.device) throw UsageError("--target: '" + item + "' given twice");
    places.push_back(p);
  }
  return places;
}

int run_on_places(const Args& args, const OptionValues& options, const std::string& command,
                  const std::vector<Place>& places) {
  std::vector<remote::Target> targets;
  for (const Place& p : places) targets.push_back(target_named(p.target));
  ProfileRequest req = parse_profile_request(args, options, command == "compare", true);
  if (req.m.location.path.empty())
    throw UsageError("--target: name the model with --model (or $MNV2_MODEL): a remote run sends the model it runs");
  if (const std::string why = frontend::remote_model_refusal(req.m.model); !why.empty())
    throw UsageError("--target: " + why);
  std::vector<std::string> base = args.forwardable(options, {"--target"});
  std::string dir;
  if (req.base.input) {
    std::string d = (fs::temp_directory_path() / "mnv2-remote-XXXXXX").string();
    if (::mkdtemp(d.data()) == nullptr) throw Error("cannot create a private temporary folder");
    dir = d;
    write_tensor_file(dir + "/input.f32", *req.base.input);
  }
  struct Cleanup {
    std::string& dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  std::mutex print;
  struct Outcome {
    std::vector<RunReport> reports;
    std::string error;
  };
  std::vector<Outcome> outcomes(places.size());
  const remote::SessionConfig config = session_config(frontend::remote_environment(), false);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < places.size(); ++i)
    threads.emplace_back([&, i] {
      const Place& place = places[i];
      remote::RemoteRunRequest r;
      r.command = command;
      // The place's GPU replaces any --device of the command line.
      for (size_t k = 0; k < base.size(); ++k) {
        if (place.device >= 0 && base[k] == "--device") {
          ++k;
          continue;
        }
        r.args.push_back(base[k]);
      }
      if (place.device >= 0) r.args.insert(r.args.end(), {"--device", std::to_string(place.device)});
      r.model_path = req.m.location.path;
      r.outputs = {"--json"};
      if (!dir.empty()) {
        const std::string given = args.get("--image") ? *args.get("--image") : *args.get("--tensor");
        std::string name = fs::path(given).filename().string();
        if (name.empty() || name == "." || name == "..") name = "input.f32";
        r.files.push_back({"--tensor", name, dir + "/input.f32"});
      }
      // Each place's text line by line, prefixed with where it comes from, escaped.
      std::string pending[2];
      r.on_output = [&, i](bool is_stderr, const std::string& bytes) {
        std::string& p = pending[is_stderr ? 1 : 0];
        p += bytes;
        size_t nl;
        std::lock_guard<std::mutex> lock(print);
        while ((nl = p.find('\n')) != std::string::npos) {
          (is_stderr ? std::cerr : std::cout)
              << "[" << printable(places[i].label) << "] " << printable(p.substr(0, nl)) << "\n";
          p.erase(0, nl + 1);
        }
      };
      try {
        remote::Session s(targets[i], config, [&, i](const remote::RemoteProgress& p) {
          if (p.stage == "run" || p.stage == "upload" || p.stage == "download") return;
          std::lock_guard<std::mutex> lock(print);
          std::cerr << "[" << printable(places[i].label) << "] " << p.stage << " " << printable(p.phase) << "\n";
        });
        outcomes[i].reports = remote::reports_from_target(s.run(r), targets[i], req.base, req.m.location.path);
      } catch (const std::exception& e) {
        outcomes[i].error = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  std::vector<RunReport> all;
  int failed = 0;
  for (size_t i = 0; i < places.size(); ++i) {
    if (!outcomes[i].error.empty()) {
      ++failed;
      std::cerr << "error: [" << printable(places[i].label) << "] " << printable(outcomes[i].error) << "\n";
    }
    for (RunReport& r : outcomes[i].reports) all.push_back(std::move(r));
  }
  if (failed > 0) {
    std::cerr << "error: " << failed << " of " << places.size() << " places failed; no report written\n";
    return 1;
  }
  // Side by side: each against the first, by the engine's rules.
  std::printf("\n%-3s %-16s %-10s %-9s %5s %14s  %s\n", "#", "where", "backend", "precision", "batch", "end_to_end_ms",
              "device");
  for (size_t i = 0; i < all.size(); ++i)
    std::printf("%-3zu %-16s %-10s %-9s %5d %14.3f  %s %s\n", i + 1, printable(all[i].origin.target).c_str(),
                printable(all[i].backend).c_str(), to_string(all[i].config.precision), all[i].config.batch,
                all[i].end_to_end.host_ms.median, printable(all[i].device).c_str(),
                printable(origin_text(all[i].origin)).c_str());
  for (size_t i = 1; i < all.size(); ++i) {
    const RunComparability c = compare_settings(all[0], all[i]);
    std::printf("\n#%zu against #1:\n", i + 1);
    for (const SettingDifference& d : c.differences)
      std::printf("  %-6s %s %s -> %s\n", to_string(d.weight), d.setting.c_str(), printable(d.a).c_str(),
                  printable(d.b).c_str());
    if (c.refused()) continue;
    const std::string headline = difference_headline(all[0], all[i], align_runs(all[0], all[i]));
    if (!headline.empty()) std::printf("  %s\n", printable(headline).c_str());
  }
  std::printf("('mnv2 runs FILE' shows every layer side by side)\n");
  put_reports(args, all);
  return 0;
}

}  // namespace mnv2::cli
