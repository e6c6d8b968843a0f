// The one writer of every output (mnv2/output_files.h): each kind of target, report sets as transactions
// (validation first, rollback, signals held during the renames), stale temporaries, full disks.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "mnv2/error.h"
#include "mnv2/output_files.h"
#include "test_support.h"

namespace mnv2 {
namespace {

using test::read_file;
using test::TempDir;
using test::write_file;
namespace fs = std::filesystem;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

// Entries of `dir` other than `keep` (temporaries left behind show up here).
std::vector<std::string> others(const std::string& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  }
  return out;
}

// Runs `body` in a child process; returns its wait status. The child's gtest failures do not reach the
// parent, so the body reports through its exit code.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string commit_error(OutputSet& set) {
  try {
    set.commit();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OutputFiles, NewFileGetsTheUmaskModeAndNoTemporaryRemains) {
  TempDir tmp;
  const mode_t old = ::umask(022);
  write_output_file(tmp.file("r.csv"), "a,b\n");
  ::umask(old);
  EXPECT_EQ(read_file(tmp.file("r.csv")), "a,b\n");
  EXPECT_EQ(mode_of(tmp.file("r.csv")) & 07777, 0644u);
  EXPECT_TRUE(others(tmp.path(), {"r.csv"}).empty());
}

TEST(OutputFiles, ReplacingKeepsTheModeOfTheFileReplaced) {
  TempDir tmp;
  write_file(tmp.file("r.json"), "old");
  ASSERT_EQ(::chmod(tmp.file("r.json").c_str(), 0600), 0);
  write_output_file(tmp.file("r.json"), "new");
  EXPECT_EQ(read_file(tmp.file("r.json")), "new");
  EXPECT_EQ(mode_of(tmp.file("r.json")) & 07777, 0600u);
  ASSERT_EQ(::chmod(tmp.file("r.json").c_str(), 0640), 0);
  write_output_file(tmp.file("r.json"), "newer");
  EXPECT_EQ(mode_of(tmp.file("r.json")) & 07777, 0640u);
}

TEST(OutputFiles, ReplacingKeepsTheOwnerWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
  TempDir tmp;
  write_file(tmp.file("r.json"), "old");
  ASSERT_EQ(::chown(tmp.file("r.json").c_str(), 12345, 23456), 0);
  write_output_file(tmp.file("r.json"), "new");
  struct stat st {};
  ASSERT_EQ(::stat(tmp.file("r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 12345u);
  EXPECT_EQ(st.st_gid, 23456u);
}

TEST(OutputFiles, SymbolicLinkIsFollowedAndKept) {
  TempDir tmp;
  fs::create_directory(tmp.file("store"));
  write_file(tmp.file("store/real.json"), "old");
  fs::create_symlink("store/real.json", tmp.file("link.json"));
  OutputSet set;
  set.add("--json", tmp.file("link.json"));
  set.put("--json", "new");
  const auto lines = set.commit();
  EXPECT_TRUE(fs::is_symlink(tmp.file("link.json")));
  EXPECT_EQ(read_file(tmp.file("store/real.json")), "new");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("symbolic link"), std::string::npos) << lines[0];
  EXPECT_TRUE(others(tmp.file("store"), {"real.json"}).empty());
}

TEST(OutputFiles, DanglingLinksAndLoopsAreRefusedBeforeAnyWork) {
  TempDir tmp;
  fs::create_symlink("nowhere.json", tmp.file("dangling.json"));
  fs::create_symlink("b", tmp.file("a"));
  fs::create_symlink("a", tmp.file("b"));
  OutputSet set;
  EXPECT_THROW(set.add("--json", tmp.file("dangling.json")), UsageError);
  try {
    set.add("--csv", tmp.file("a"));
    FAIL() << "a link loop was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic links"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(tmp.file("dangling.json")));
}

TEST(OutputFiles, HardLinkedTargetIsReplacedAndTheOtherNameKeepsTheOldContents) {
  TempDir tmp;
  write_file(tmp.file("r.csv"), "old");
  ASSERT_EQ(::link(tmp.file("r.csv").c_str(), tmp.file("copy.csv").c_str()), 0);
  OutputSet set;
  set.add("--csv", tmp.file("r.csv"));
  set.put("--csv", "new");
  const auto lines = set.commit();
  EXPECT_EQ(read_file(tmp.file("r.csv")), "new");
  EXPECT_EQ(read_file(tmp.file("copy.csv")), "old");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("hard links"), std::string::npos) << lines[0];
}

TEST(OutputFiles, DeviceNodeIsStreamedNeverReplaced) {
  TempDir tmp;
  // The null device made in a scratch folder, as the adversarial pass did (mknod NAME c 1 3).
  if (::mknod(tmp.file("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "making a device node needs root (mknod: " << std::strerror(errno) << ")";
  fs::create_symlink(tmp.file("null"), tmp.file("via-link"));
  OutputSet set;
  set.add("--csv", tmp.file("null"));
  set.add("--json", tmp.file("via-link"));  // one device may take several outputs
  set.put("--csv", "rows");
  set.put("--json", "{}");
  set.commit();
  EXPECT_TRUE(S_ISCHR(mode_of(tmp.file("null"))));
  EXPECT_TRUE(fs::is_symlink(tmp.file("via-link")));
  EXPECT_TRUE(others(tmp.path(), {"null", "via-link"}).empty());
}

TEST(OutputFiles, DevNullIsWrittenAsAStream) {
  write_output_file("/dev/null", "discarded");
  EXPECT_TRUE(S_ISCHR(mode_of("/dev/null")));
}

TEST(OutputFiles, FifoIsStreamedToItsReader) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo(tmp.file("pipe").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(tmp.file("pipe").c_str(), O_RDONLY);
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
  });
  write_output_file(tmp.file("pipe"), "streamed");
  reader.join();
  EXPECT_EQ(got, "streamed");
  EXPECT_TRUE(S_ISFIFO(mode_of(tmp.file("pipe"))));
}

TEST(OutputFiles, FifoWithoutReaderFailsInsteadOfHanging) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo(tmp.file("pipe").c_str(), 0600), 0);
  OutputSet set;
  set.set_fifo_wait(std::chrono::milliseconds(200));
  set.add("--json", tmp.file("pipe"));
  set.put("--json", "x");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = commit_error(set);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(msg.find("no process opened the FIFO"), std::string::npos) << msg;
  EXPECT_NE(msg.find(tmp.file("pipe")), std::string::npos) << msg;
}

TEST(OutputFiles, DashAndDevStdoutWriteThisProcesssStandardOutput) {
  TempDir tmp;
  // Standard output pointed at a file, as a shell's "> out.txt" does; the writer must write to the descriptor
  // (keeping its offset), never reopen or replace the file behind it.
  std::fflush(stdout);
  const int saved = ::dup(1);
  const int fd = ::open(tmp.file("out.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ::dup2(fd, 1);
  ::close(fd);
  struct stat before {};
  ::stat(tmp.file("out.txt").c_str(), &before);
  std::string error;
  try {
    write_output_file("-", "one\n");
    write_output_file("/dev/stdout", "two\n");
    write_output_file("/proc/self/fd/1", "three\n");
  } catch (const Error& e) {
    error = e.what();
  }
  ::dup2(saved, 1);
  ::close(saved);
  EXPECT_EQ(error, "");
  EXPECT_EQ(read_file(tmp.file("out.txt")), "one\ntwo\nthree\n");
  struct stat after {};
  ::stat(tmp.file("out.txt").c_str(), &after);
  EXPECT_EQ(before.st_ino, after.st_ino);
  OutputSet set;
  set.add("--csv", "-");
  EXPECT_THROW(set.add("--json", "/dev/stdout"), UsageError);  // one stream, named twice
}

TEST(OutputFiles, LongestValidNameWorksAndTooLongIsRefused) {
  TempDir tmp;
  const std::string name(NAME_MAX, 'r');
  write_output_file(tmp.file(name), "fits");
  EXPECT_EQ(read_file(tmp.file(name)), "fits");
  write_output_file(tmp.file(name), "again");  // replacing: the temporary's name must fit too
  EXPECT_EQ(read_file(tmp.file(name)), "again");
  OutputSet set;
  EXPECT_THROW(set.add("--csv", tmp.file(name + "x")), UsageError);
  EXPECT_TRUE(others(tmp.path(), {name}).empty());
}

TEST(OutputFiles, PathsAreCheckedWhenAddedAndMustBeDistinct) {
  TempDir tmp;
  write_file(tmp.file("r.csv"), "old");
  fs::create_directory(tmp.file("sub"));
  fs::create_symlink("r.csv", tmp.file("alias.csv"));
  ASSERT_EQ(::link(tmp.file("r.csv").c_str(), tmp.file("hard.csv").c_str()), 0);
  auto refused = [&](const std::vector<std::string>& paths, const std::string& why) {
    OutputSet set;
    try {
      for (size_t i = 0; i < paths.size(); ++i) set.add("--out" + std::to_string(i), paths[i]);
      ADD_FAILURE() << why << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({tmp.file("missing/r.csv")}, "does not exist");
  refused({tmp.file("sub")}, "is a directory");
  refused({tmp.file("sub/")}, "is a directory");
  refused({""}, "empty output file name");
  refused({tmp.file("r.csv"), tmp.file("r.csv")}, "are the same file");
  refused({tmp.file("r.csv"), tmp.file("./r.csv")}, "are the same file");
  refused({tmp.file("r.csv"), tmp.file("alias.csv")}, "are the same file");
  refused({tmp.file("r.csv"), tmp.file("hard.csv")}, "are the same file");
  refused({"/proc/1/fd/1"}, "own descriptors");
  EXPECT_EQ(read_file(tmp.file("r.csv")), "old");
}

TEST(OutputFiles, ReadOnlyFileOrFolderIsRefused) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes read-only files and folders: run as a user to test this";
  TempDir tmp;
  write_file(tmp.file("r.csv"), "old");
  ::chmod(tmp.file("r.csv").c_str(), 0444);
  fs::create_directory(tmp.file("locked"));
  ::chmod(tmp.file("locked").c_str(), 0555);
  OutputSet set;
  EXPECT_THROW(set.add("--csv", tmp.file("r.csv")), UsageError);
  EXPECT_THROW(set.add("--json", tmp.file("locked/r.json")), UsageError);
  ::chmod(tmp.file("locked").c_str(), 0755);
}

TEST(OutputFiles, ReadOnlyFileIsRefusedAlsoAsRoot) {
  // access(2) lets root write anything; the mode bits say read-only for root too (finding 4 of issue 30).
  TempDir tmp;
  write_file(tmp.file("r.json"), "old");
  ::chmod(tmp.file("r.json").c_str(), 0444);
  OutputSet set;
  try {
    set.add("--json", tmp.file("r.json"));
    ADD_FAILURE() << "a 0444 target was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("read-only (mode 0444)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(tmp.file("r.json")), "old");
}

TEST(OutputFiles, AnInputOfTheCommandIsRefusedAsATarget) {
  TempDir tmp;
  write_file(tmp.file("model.onnx"), "model");
  write_file(tmp.file("p.jpg"), "photo");
  fs::create_directory(tmp.file("images"));
  write_file(tmp.file("images/old.json"), "json");
  ::link(tmp.file("p.jpg").c_str(), tmp.file("p-link.jpg").c_str());
  fs::create_symlink("model.onnx", tmp.file("alias.onnx"));
  auto refusal = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {  // target first, input second
    OutputSet set;
    set.add("--csv", tmp.file("model.onnx"));
    const std::string msg = refusal([&] { set.add_input("--model", tmp.file("model.onnx")); });
    EXPECT_NE(msg.find("--csv " + tmp.file("model.onnx")), std::string::npos) << msg;
    EXPECT_NE(msg.find("is --model " + tmp.file("model.onnx") + ", which this command reads"), std::string::npos)
        << msg;
  }
  {  // input first; through a symbolic link, a hard link, ./
    OutputSet set;
    set.add_input("--model", tmp.file("model.onnx"));
    set.add_input("--image", tmp.file("p.jpg"));
    set.add_input("--images", tmp.file("images"));
    EXPECT_NE(refusal([&] { set.add("--json", tmp.file("alias.onnx")); }), "");
    EXPECT_NE(refusal([&] { set.add("--json", tmp.file("p-link.jpg")); }), "");
    EXPECT_NE(refusal([&] { set.add("--json", tmp.path() + "/./p.jpg"); }), "");
    const std::string msg = refusal([&] { set.add("--json", tmp.file("images/old.json")); });
    EXPECT_NE(msg.find("is inside --images"), std::string::npos) << msg;
    // A new file in the folder, another file beside the inputs and /dev/null are fine.
    set.add("--json", tmp.file("images/new.json"));
    set.add("--csv", tmp.file("other.csv"));
    set.add_input("--labels", "/dev/null");
    set.add("--trace", "/dev/null");
  }
  EXPECT_EQ(read_file(tmp.file("model.onnx")), "model");
  EXPECT_EQ(read_file(tmp.file("p.jpg")), "photo");
}

// Two processes commit three-file sets to the same targets at once, many rounds; each file says which
// process wrote it. Every round must end with one process's whole set (finding 6 of issue 30).
TEST(OutputFiles, ConcurrentSetsEndAsOneProcesssWholeSet) {
  TempDir tmp;
  const std::vector<std::string> names = {tmp.file("r.json"), tmp.file("r.csv"), tmp.file("sub/r.trace")};
  fs::create_directory(tmp.file("sub"));
  constexpr int kRounds = 300;
  int mixed = 0, told = 0;
  for (int round = 0; round < kRounds; ++round) {
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    std::vector<pid_t> kids;
    for (const char tag : {'A', 'B'}) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        int rc = 0;
        try {
          ::close(go[1]);
          OutputSet set;
          for (size_t i = 0; i < names.size(); ++i) set.add(std::to_string(i), names[i]);
          for (size_t i = 0; i < names.size(); ++i) set.put(std::to_string(i), std::string(1, tag));
          // A pause between renames widens the window another process's renames would fall into.
          set.set_rename_observer([](size_t) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
          char c;
          (void)!::read(go[0], &c, 1);  // both start together
          bool noted = false;
          for (const std::string& line : set.commit())
            noted = noted || line.find("another process") != std::string::npos;
          if (noted) (void)!::write(report[1], "n", 1);
        } catch (...) {
          rc = 1;
        }
        ::_exit(rc);
      }
      kids.push_back(pid);
    }
    ::close(go[0]);
    ::close(report[1]);
    ::close(go[1]);  // EOF releases both
    for (pid_t pid : kids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": status " << status;
    }
    char c;
    while (::read(report[0], &c, 1) == 1) ++told;
    ::close(report[0]);
    const std::string first = read_file(names[0]);
    for (const std::string& n : names)
      if (read_file(n) != first) {
        ++mixed;
        break;
      }
  }
  EXPECT_EQ(mixed, 0) << "of " << kRounds << " rounds";
  EXPECT_GT(told, 0) << "no second writer was told of the first";
  std::printf("concurrent sets: %d rounds, %d mixed, %d commits told of the other process\n", kRounds, mixed, told);
  EXPECT_TRUE(others(tmp.path(), {"r.json", "r.csv", "sub"}).empty());
}

// A folder another writer holds locked is waited for, at most the lock wait, then the commit fails with
// nothing written; a commit that waited says so.
TEST(OutputFiles, ALockedFolderIsWaitedForThenRefused) {
  TempDir tmp;
  write_file(tmp.file("r.json"), "old");
  const int held = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);  // another open file description: conflicts as another process would
  {
    OutputSet set;
    set.set_lock_wait(std::chrono::milliseconds(200));
    set.add("--json", tmp.file("r.json"));
    set.put("--json", "new");
    const std::string msg = commit_error(set);
    EXPECT_NE(msg.find("another process kept " + tmp.path()), std::string::npos) << msg;
    EXPECT_NE(msg.find("nothing was written"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_file(tmp.file("r.json")), "old");
  EXPECT_TRUE(others(tmp.path(), {"r.json"}).empty());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::flock(held, LOCK_UN);
  });
  OutputSet set;
  set.add("--json", tmp.file("r.json"));
  set.put("--json", "new");
  const std::vector<std::string> lines = set.commit();
  release.join();
  ::close(held);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("after waiting for another process writing into " + tmp.path()), std::string::npos)
      << lines[0];
  EXPECT_EQ(read_file(tmp.file("r.json")), "new");
}

TEST(OutputFiles, SetIsAllOrNothingWhenAWriteFails) {
  TempDir tmp;
  write_file(tmp.file("good.csv"), "old csv");
  fs::create_directory(tmp.file("gone"));
  OutputSet set;
  set.add("--csv", tmp.file("good.csv"));
  set.add("--json", tmp.file("gone/x.json"));
  fs::remove(tmp.file("gone"));  // the folder vanishes while the command runs
  set.put("--csv", "new csv");
  set.put("--json", "{}");
  const std::string msg = commit_error(set);
  EXPECT_NE(msg.find("nothing was written"), std::string::npos) << msg;
  EXPECT_NE(msg.find(tmp.file("good.csv")), std::string::npos) << msg;
  EXPECT_EQ(read_file(tmp.file("good.csv")), "old csv");
  EXPECT_TRUE(others(tmp.path(), {"good.csv"}).empty());
}

TEST(OutputFiles, FailedRenameRollsBackTheFilesAlreadyRenamed) {
  TempDir tmp;
  write_file(tmp.file("a.csv"), "old a");
  write_file(tmp.file("b.json"), "old b");
  OutputSet set;
  set.add("--csv", tmp.file("a.csv"));
  set.add("--json", tmp.file("b.json"));
  set.add("--trace", tmp.file("c.trace"));  // new: rolled back by removing it
  set.put("--csv", "new a");
  set.put("--json", "new b");
  set.put("--trace", "new c");
  // After the first rename, the third target becomes a folder that is not empty: its rename must fail.
  set.set_rename_observer([&](size_t i) {
    if (i == 0) {
      fs::create_directory(tmp.file("c.trace"));
      write_file(tmp.file("c.trace/x"), "x");
    }
  });
  const std::string msg = commit_error(set);
  EXPECT_NE(msg.find("cannot replace"), std::string::npos) << msg;
  EXPECT_EQ(read_file(tmp.file("a.csv")), "old a");
  EXPECT_EQ(read_file(tmp.file("b.json")), "old b");
  EXPECT_TRUE(fs::is_directory(tmp.file("c.trace")));
  EXPECT_TRUE(others(tmp.path(), {"a.csv", "b.json", "c.trace"}).empty());
}

TEST(OutputFiles, TerminationSignalsAreHeldOffDuringTheRenames) {
  TempDir tmp;
  write_file(tmp.file("a.csv"), "old a");
  write_file(tmp.file("b.json"), "old b");
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const int status = in_child([&] {
      OutputSet set;
      set.add("--csv", tmp.file("a.csv"));
      set.add("--json", tmp.file("b.json"));
      set.put("--csv", "new a " + std::to_string(sig));
      set.put("--json", "new b " + std::to_string(sig));
      set.set_rename_observer([&](size_t i) {
        if (i == 0) ::kill(::getpid(), sig);  // between the two renames
      });
      set.commit();
      return 0;  // not reached: the held signal is delivered when the renames are done
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig << ": status " << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(read_file(tmp.file("a.csv")), "new a " + std::to_string(sig));
    EXPECT_EQ(read_file(tmp.file("b.json")), "new b " + std::to_string(sig));
    EXPECT_TRUE(others(tmp.path(), {"a.csv", "b.json"}).empty());
  }
}

TEST(OutputFiles, StaleTemporariesOfDeadWritersAreRemoved) {
  TempDir tmp;
  // A pid that is certainly gone: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = tmp.file(".r.csv.mnv2tmp-" + std::to_string(dead) + "-Ab12Cd");
  const std::string stale_old = tmp.file(".r.csv.mnv2old-" + std::to_string(dead) + "-Zz99yY");
  const std::string young = tmp.file(".s.csv.mnv2tmp-" + std::to_string(dead) + "-young1");
  const std::string alive = tmp.file(".t.csv.mnv2tmp-" + std::to_string(::getppid()) + "-alive1");
  const std::string unrelated = tmp.file(".notes.tmp-123-abcdef");
  for (const auto& f : {stale, stale_old, young, alive, unrelated}) write_file(f, "partial");
  const timespec old_times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 3600, 0}};
  for (const auto& f : {stale, stale_old, alive, unrelated}) ::utimensat(AT_FDCWD, f.c_str(), old_times, 0);
  write_output_file(tmp.file("r.csv"), "fresh");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(stale_old));
  EXPECT_TRUE(fs::exists(young)) << "a young temporary may be a live writer's in another pid namespace";
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(unrelated));
}

TEST(OutputFiles, FileSizeLimitFailsCleanly) {
  // RLIMIT_FSIZE makes write() fail (EFBIG) at a set size on any file system: the same failure path as a
  // full disk, everywhere.
  TempDir tmp;
  write_file(tmp.file("r.json"), "old");
  const int status = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    OutputSet set;
    set.add("--json", tmp.file("r.json"));
    set.put("--json", std::string(100000, 'x'));
    const std::string msg = commit_error(set);
    if (msg.find("write failed") == std::string::npos || msg.find("nothing was written") == std::string::npos) return 1;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(tmp.file("r.json")), "old");
  EXPECT_TRUE(others(tmp.path(), {"r.json"}).empty());
}

TEST(OutputFiles, FullDiskFailsCleanly) {
  TempDir tmp;
  fs::create_directory(tmp.file("small"));
  // A 64 KiB tmpfs in a mount namespace of a child (as root, or as a user where user namespaces are allowed).
  const int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
    ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    if (::mount("tmpfs", tmp.file("small").c_str(), "tmpfs", 0, "size=64k") != 0) return 77;
    write_file(tmp.file("small/r.csv"), "old");
    OutputSet set;
    set.add("--csv", tmp.file("small/r.csv"));
    set.put("--csv", std::string(1 << 20, 'x'));
    const std::string msg = commit_error(set);
    if (msg.find("No space left on device") == std::string::npos) return 1;
    if (read_file(tmp.file("small/r.csv")) != "old") return 2;
    if (!others(tmp.file("small"), {"r.csv"}).empty()) return 3;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root or user namespaces)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(OutputFiles, FullDeviceIsAWriteErrorNamingIt) {
  try {
    write_output_file("/dev/full", "x");
    FAIL() << "writing /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mnv2
