// The private cache folder (mnv2/private_cache.h) and its users: a folder open to others or owned by another
// user is neither read nor written (a planted link is never written through), a fresh one is 0700, there is
// no shared /tmp fallback and a relative XDG_CACHE_HOME is ignored, an unbelievable entry is measured again,
// and concurrent writers of the roofline and plan caches lose no entry (issue 30, findings 2 and 7).
#include "mnv2/private_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cudnn/plan_cache.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/model_lookup.h"
#include "mnv2/roofline.h"
#include "studies/lab_cache.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777u;
}

Ceilings sample(const std::string& key, double bandwidth = 100) {
  Ceilings c;
  c.device = "test device";
  c.key = key;
  c.bandwidth_gb_s = bandwidth;
  c.gflop_s = 1000;
  c.method = "test";
  return c;
}

// The cache folder `dir` for as long as it lives (the cache-dir option, as a front end passes it).
ScopedSettings cache_at(const std::string& dir) {
  return ScopedSettings([&](ProcessSettings& s) { s.cache_dir = dir; });
}

TEST(PrivateCache, AFreshFolderIsMadePrivate) {
  TempDir d;
  const std::string dir = d.file("a/b/mnv2-profiler");
  const PrivateCache c = PrivateCache::open(dir);
  ASSERT_TRUE(c.usable()) << c.note();
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(d.file("a")), 0700u);  // missing parents too (the XDG specification's mode)
  EXPECT_EQ(mode_of(d.file("a/b")), 0700u);
  const auto settings = cache_at(d.file("c"));
  std::string warning;
  store_ceilings(sample("k"), &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_EQ(mode_of(d.file("c")), 0700u);
  EXPECT_TRUE(fs::is_regular_file(d.file("c/roofline.json")));
}

// A planted roofline.json, a link to a file of root's (0600): in a folder open to others, or owned by another
// user, the cache is neither read nor written, with a note; the link's target keeps its bytes.
TEST(PrivateCache, AFolderNotPrivateIsNeitherReadNorWritten) {
  TempDir d;
  const std::string victim = d.file("victim");
  write_file(victim, "VICTIM");
  ::chmod(victim.c_str(), 0600);
  const std::string dir = d.file("shared");
  fs::create_directories(dir);
  fs::create_symlink(victim, dir + "/roofline.json");
  const auto settings = cache_at(dir);

  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  std::string warning;
  store_ceilings(sample(ceilings_key("cpu")), &warning);
  EXPECT_NE(warning.find("is open to other users (mode 0777); a cache must be private (0700)"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("not cached"), std::string::npos) << warning;
  EXPECT_EQ(read_file(victim), "VICTIM");
  EXPECT_TRUE(fs::is_symlink(dir + "/roofline.json"));
  ASSERT_EQ(::chmod(dir.c_str(), 0770), 0);  // group-writable: the same
  EXPECT_FALSE(PrivateCache::open(dir).usable());

  // Owned by another user (nobody), as root can make it; the planted link owned by nobody too.
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  if (::geteuid() != 0) {
    std::printf("[ note     ] not root: the folder owned by another user is not made here\n");
    return;
  }
  ASSERT_EQ(::lchown((dir + "/roofline.json").c_str(), 65534, 65534), 0) << std::strerror(errno);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0) << std::strerror(errno);
  warning.clear();
  store_ceilings(sample(ceilings_key("cpu")), &warning);
  EXPECT_NE(warning.find("is owned by user 65534, not by this user (0); a cache must be private"), std::string::npos)
      << warning;
  EXPECT_EQ(read_file(victim), "VICTIM");
  EXPECT_TRUE(fs::is_symlink(dir + "/roofline.json"));
  // A planted entry (a believable 0.001 GB/s would be shown as the ceiling) in that folder is not read either:
  // the planted file is made by nobody itself where setpriv is at hand.
  fs::remove(dir + "/roofline.json");
  const json::Json planted = {{"schema", "mnv2.roofline-cache/1"}, {"devices", {{"k", sample("k", 3000)}}}};
  if (std::system("command -v setpriv >/dev/null") == 0) {
    const std::string cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cat > " + dir +
                            "/roofline.json' <<'EOF'\n" + json::dump(planted) + "\nEOF\n";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  } else {
    std::printf("[ note     ] setpriv missing: the planted entry is written by root and given to nobody\n");
    write_file(dir + "/roofline.json", json::dump(planted));
    ASSERT_EQ(::chown((dir + "/roofline.json").c_str(), 65534, 65534), 0);
  }
  const PrivateCache c = PrivateCache::open(dir);
  EXPECT_FALSE(c.usable());
  EXPECT_EQ(c.read("roofline.json", inputs::kRooflineCache), std::nullopt);
}

TEST(PrivateCache, LinksAreNeverFollowed) {
  TempDir d;
  const std::string victim = d.file("victim");
  write_file(victim, "VICTIM");
  fs::create_directories(d.file("real"));
  ::chmod(d.file("real").c_str(), 0700);
  // The folder itself a link: refused.
  fs::create_directory_symlink(d.file("real"), d.file("link"));
  const PrivateCache linked = PrivateCache::open(d.file("link"));
  EXPECT_FALSE(linked.usable());
  EXPECT_NE(linked.note().find("is a symbolic link"), std::string::npos) << linked.note();
  EXPECT_FALSE(PrivateCache::open(d.file("link") + "//").usable()) << "a trailing '/' followed the link";
  // An entry that is a link, in a private folder: not read, not written through.
  fs::create_symlink(victim, d.file("real/roofline.json"));
  const PrivateCache c = PrivateCache::open(d.file("real"));
  ASSERT_TRUE(c.usable()) << c.note();
  try {
    (void)c.read("roofline.json", inputs::kRooflineCache);
    ADD_FAILURE() << "read through a link";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  const auto settings = cache_at(d.file("real"));
  std::string warning;
  store_ceilings(sample("k"), &warning);
  EXPECT_NE(warning.find("is a symbolic link; not written through"), std::string::npos) << warning;
  EXPECT_EQ(read_file(victim), "VICTIM");
}

// No shared /tmp folder: without HOME and XDG_CACHE_HOME the cache is off, with a note; a relative
// XDG_CACHE_HOME is ignored (the XDG specification), as the front end maps the environment.
TEST(PrivateCache, NoSharedFallbackAndRelativeXdgIgnored) {
  const auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const std::optional<std::string> home = saved("HOME"), xdg = saved("XDG_CACHE_HOME"), dir = saved("MNV2_CACHE_DIR");
  TempDir d;
  ::unsetenv("MNV2_CACHE_DIR");
  ::unsetenv("HOME");
  synced_unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(cache_dir(), "");
  EXPECT_EQ(roofline_cache_file(), "");
  std::string warning;
  store_ceilings(sample("k"), &warning);
  EXPECT_NE(warning.find("not cached: no cache folder: neither XDG_CACHE_HOME nor HOME is an absolute path"),
            std::string::npos)
      << warning;
  synced_setenv("XDG_CACHE_HOME", "relative/cache", 1);
  EXPECT_EQ(cache_dir(), "");
  synced_setenv("HOME", d.path().c_str(), 1);
  EXPECT_EQ(cache_dir(), d.file(".cache/mnv2-profiler"));
  synced_setenv("XDG_CACHE_HOME", d.file("xdg").c_str(), 1);
  EXPECT_EQ(cache_dir(), d.file("xdg/mnv2-profiler"));
  const std::vector<std::pair<const char*, std::optional<std::string>>> restore = {
      {"HOME", home}, {"XDG_CACHE_HOME", xdg}, {"MNV2_CACHE_DIR", dir}};
  for (const auto& [name, value] : restore) {
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  sync_process_settings_from_environment();
}

// An entry past physical reason is refused as corrupt: a denormal bandwidth (5e-324) would make the ridge
// infinite ("ridge_flop_per_byte": null) and every step memory bound.
TEST(PrivateCache, UnbelievableCeilingsAreRefused) {
  for (double bad : {5e-324, 0.0, -1.0, 0.001, 1e6}) {
    json::Json j = sample("k");
    j["bandwidth_gb_s"] = bad;
    EXPECT_THROW((void)j.get<Ceilings>(), Error) << bad;
    j = sample("k");
    j["gflop_s"] = bad == 1e6 ? 1e9 : bad;
    EXPECT_THROW((void)j.get<Ceilings>(), Error) << bad;
  }
  const Ceilings ok = json::Json(sample("k")).get<Ceilings>();
  EXPECT_TRUE(std::isfinite(ok.ridge()));
}

// The cpu's ceilings cached as 5e-324 GB/s: measured again with a warning, never returned; the ridge is finite.
TEST(PrivateCache, ADenormalCachedBandwidthIsMeasuredAgain) {
  TempDir d;
  const auto settings = cache_at(d.file("cache"));
  store_ceilings(sample(ceilings_key("cpu"), 100));
  json::Json doc = json::parse_file(d.file("cache/roofline.json"), inputs::kRooflineCache);
  doc["devices"][ceilings_key("cpu")]["bandwidth_gb_s"] = 5e-324;
  write_file(d.file("cache/roofline.json"), json::dump(doc));
  std::string warning;
  const Ceilings c = device_ceilings("cpu", false, &warning);
  EXPECT_FALSE(c.from_cache);
  EXPECT_GT(c.bandwidth_gb_s, 0.1);
  EXPECT_TRUE(std::isfinite(c.ridge()));
  EXPECT_NE(warning.find("not believable"), std::string::npos) << warning;
  EXPECT_NE(warning.find("below any device"), std::string::npos) << warning;
}

// Runs `body(child)` in `children` processes at once; true when every one exited 0.
template <class F>
bool in_processes(int children, F body) {
  std::vector<pid_t> pids;
  for (int i = 0; i < children; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 0;
      try {
        rc = body(i) ? 0 : 1;
      } catch (...) {
        rc = 2;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

constexpr int kWriters = 8, kRounds = 5;

TEST(PrivateCache, ConcurrentRooflineWritersLoseNoEntry) {
  TempDir d;
  const auto settings = cache_at(d.file("cache"));
  ASSERT_TRUE(in_processes(kWriters, [](int child) {
    for (int round = 0; round < kRounds; ++round) {
      std::string warning;
      store_ceilings(sample("writer " + std::to_string(child) + " round " + std::to_string(round)), &warning);
      if (!warning.empty()) return false;
    }
    return true;
  }));
  const json::Json doc = json::parse_file(d.file("cache/roofline.json"), inputs::kRooflineCache);
  EXPECT_EQ(doc.at("devices").size(), static_cast<size_t>(kWriters * kRounds));
  std::printf("[ figures  ] %d writers x %d rounds: %zu of %d entries kept\n", kWriters, kRounds,
              doc.at("devices").size(), kWriters * kRounds);
}

TEST(PrivateCache, ConcurrentPlanCacheWritersLoseNoEntry) {
  TempDir d;
  const auto settings = cache_at(d.file("cache"));
  const std::string named = d.file("named/plans.json");  // a file the user names (cudnn-plan-cache)
  for (const std::string& path : {cudnn_backend::plan_cache_file(), named}) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(in_processes(kWriters, [&](int child) {
      for (int round = 0; round < kRounds; ++round) {
        cudnn_backend::PlanCache c;
        cudnn_backend::CachedPlan p;
        p.engine = child;
        p.workspace_bytes = round;
        c.put("writer " + std::to_string(child) + " round " + std::to_string(round), p);
        c.save(path);
      }
      return true;
    }));
    std::string warning;
    EXPECT_EQ(cudnn_backend::PlanCache::load(path, &warning).size(), static_cast<size_t>(kWriters * kRounds));
    EXPECT_TRUE(warning.empty()) << warning;
  }
  EXPECT_EQ(cudnn_backend::plan_cache_file(), d.file("cache/cudnn_plans.json"));
  EXPECT_EQ(mode_of(d.file("cache")), 0700u);
}

// The kernel lab's compile cache: a CUBIN planted under an entry's name is no hit (the hash stored beside it by
// lab_compile must match its bytes), nor is any entry of a folder that is not private.
TEST(PrivateCache, APlantedCubinIsNoCacheHit) {
  TempDir d;
  const std::string dir = d.file("lab");
  const std::string key(64, 'a');
  const PrivateCache cache = PrivateCache::open(dir);
  ASSERT_TRUE(cache.usable()) << cache.note();
  write_file(dir + "/" + key + ".cubin", "planted module");
  EXPECT_EQ(lab_cache::find(cache, key), std::nullopt) << "a CUBIN without its hash was taken";
  write_file(dir + "/" + key + ".sha256", std::string(64, '0') + "\n");
  EXPECT_EQ(lab_cache::find(cache, key), std::nullopt) << "a CUBIN whose hash differs was taken";
  const lab_cache::Entry stored = lab_cache::store(cache, key, "compiled module", "nvrtc log");
  const std::optional<lab_cache::Entry> hit = lab_cache::find(cache, key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->cubin_path, stored.cubin_path);
  EXPECT_EQ(hit->log, "nvrtc log");
  write_file(dir + "/" + key + ".cubin", "swapped module");  // replaced after it was stored
  EXPECT_EQ(lab_cache::find(cache, key), std::nullopt);
  (void)lab_cache::store(cache, key, "compiled module", "nvrtc log");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  EXPECT_EQ(lab_cache::find(PrivateCache::open(dir), key), std::nullopt) << "a folder open to others was used";
  EXPECT_EQ(lab_cache::find(cache, "../" + key), std::nullopt);
}

}  // namespace
}  // namespace mnv2::test
