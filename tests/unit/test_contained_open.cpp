// open_beneath (mnv2/contained_open.h) over a table of hostile layouts, by both mechanisms: openat2 where the
// kernel has it, and the component walk forced. Every case gets the same verdict from both; nothing outside
// the folder is ever returned, and a FIFO never blocks.
#include "mnv2/contained_open.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

std::string read_fd(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// top/ is the trusted folder; outside/secret is what must never be read through it.
struct Layout {
  TempDir root;
  std::string top = root.file("top");
  int fd = -1;
  Layout() {
    fs::create_directories(top + "/sub");
    fs::create_directories(top + "/dir");
    fs::create_directories(root.file("outside"));
    write_file(root.file("outside/secret"), "SECRET");
    write_file(top + "/file", "inside");
    write_file(top + "/sub/file", "inside");
    write_file(top + "/flat", "inside");
    fs::create_symlink("file", top + "/link_in");
    fs::create_symlink("sub", top + "/dirlink_in");
    fs::create_symlink("../outside/secret", top + "/link_out");
    fs::create_symlink(root.file("outside/secret"), top + "/link_abs");
    fs::create_symlink(top + "/file", top + "/link_abs_in");
    fs::create_symlink("../outside", top + "/dirlink_out");
    fs::create_symlink("sub/../../outside/secret", top + "/link_dotdot");
    fs::create_symlink("/proc/self/root", top + "/magic");
    fs::create_symlink("loop2", top + "/loop1");
    fs::create_symlink("loop1", top + "/loop2");
    if (::mkfifo((top + "/fifo").c_str(), 0600) != 0) throw std::runtime_error("mkfifo");
    fd = ::open(top.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("open top");
  }
  ~Layout() { ::close(fd); }
};

struct Case {
  std::string name;
  int beneath;           // 0: opens "inside"; else the errno with links followed beneath
  int refuse;            // the same with no links at all
  std::string why = {};  // a part of the phrase (both methods)
};

const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      {"file", 0, 0},
      {"sub/file", 0, 0},
      {"./sub/../file", 0, 0},  // '..' that stays inside
      {"link_in", 0, ELOOP},
      {"dirlink_in/file", 0, ELOOP},
      {"link_out", EXDEV, ELOOP, "outside"},
      {"link_abs", EXDEV, ELOOP},
      {"link_abs_in", EXDEV, ELOOP},  // absolute targets are refused even when they point inside
      {"dirlink_out/secret", EXDEV, ELOOP},
      {"link_dotdot", EXDEV, ELOOP},
      {"magic/etc/passwd", EXDEV, ELOOP},
      {"../outside/secret", EXDEV, EXDEV, "outside"},
      {"sub/../../outside/secret", EXDEV, EXDEV},
      {"/etc/passwd", EINVAL, EINVAL, "absolute"},
      {"file/", EINVAL, EINVAL, "ends in '/'"},
      {"", EINVAL, EINVAL},
      {"fifo", ENODEV, ENODEV, "FIFO"},
      {"dir", EISDIR, EISDIR, "directory"},
      {"missing", ENOENT, ENOENT, "no such file"},
      {"flat/x", ENOTDIR, ENOTDIR, "not a folder"},
      {"loop1", ELOOP, ELOOP},
  };
  return table;
}

void run_table(ContainedMethod method) {
  Layout l;
  for (const Case& c : cases()) {
    for (ContainedLinks links : {ContainedLinks::beneath, ContainedLinks::refuse}) {
      const int want = links == ContainedLinks::beneath ? c.beneath : c.refuse;
      SCOPED_TRACE("'" + c.name + "' links " + (links == ContainedLinks::beneath ? "beneath" : "refused"));
      const ContainedFile f = open_beneath(l.fd, c.name, links, method);
      if (f.ok()) {
        const std::string bytes = read_fd(f.fd);
        ::close(f.fd);
        EXPECT_EQ(bytes, "inside");
        EXPECT_EQ(want, 0) << "opened; expected errno " << want;
        continue;
      }
      EXPECT_NE(want, 0) << "refused: " << f.why;
      EXPECT_EQ(f.error, want) << f.why << " (" << std::strerror(f.error) << ")";
      EXPECT_FALSE(f.why.empty());
      if (!c.why.empty() && links == ContainedLinks::beneath) EXPECT_NE(f.why.find(c.why), std::string::npos) << f.why;
    }
  }
  // A magic link from a folder under /proc: /proc/self/root is the file system's root.
  const int proc = ::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(proc, 0);
  for (ContainedLinks links : {ContainedLinks::beneath, ContainedLinks::refuse}) {
    const ContainedFile f = open_beneath(proc, "root/etc/passwd", links, method);
    EXPECT_FALSE(f.ok()) << "read /etc/passwd through /proc/self/root";
    if (f.ok()) ::close(f.fd);
  }
  ::close(proc);
}

TEST(ContainedOpen, HostileLayoutsThroughOpenat2) {
  if (!openat2_available()) std::printf("[ note     ] openat2 is not available here: the automatic path is the walk\n");
  run_table(ContainedMethod::automatic);
  Layout l;
  const ContainedFile f = open_beneath(l.fd, "sub/file", ContainedLinks::beneath, ContainedMethod::automatic);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.walked, !openat2_available());
  ::close(f.fd);
}

TEST(ContainedOpen, HostileLayoutsThroughTheWalk) {
  run_table(ContainedMethod::walk);
  Layout l;
  const ContainedFile f = open_beneath(l.fd, "sub/file", ContainedLinks::beneath, ContainedMethod::walk);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f.walked);
  ::close(f.fd);
}

TEST(ContainedOpen, TheWalkNamesThePartThatIsNotAFolder) {
  Layout l;
  for (ContainedMethod m : {ContainedMethod::automatic, ContainedMethod::walk}) {
    const ContainedFile f = open_beneath(l.fd, "flat/x", ContainedLinks::beneath, m);
    EXPECT_EQ(f.error, ENOTDIR);
    EXPECT_NE(f.why.find("'flat' is not a folder"), std::string::npos) << f.why;
  }
}

}  // namespace
}  // namespace mnv2::test
