// mnv2 remote install: the bundle to ~/.local/share/mnv2-profiler/VERSION/ on a target (mnv2/remote.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mnv2/error.h"
#include "mnv2/remote.h"
#include "remote/process.h"
#include "util/sha256.h"

namespace mnv2::remote {

namespace fs = std::filesystem;

std::string ssh_failure(const Target& t, const std::string& err);  // session.cpp

namespace {

// The remote command: one fixed sh script (no quote, backslash, '!' or newline inside, so bash, tcsh and fish
// pass it to sh as it is). It unpacks standard input into a fresh private folder beside the installation,
// checks every file against the manifest, and only then puts the folder in place.
std::string install_script(const std::string& version) {
  return "set -e; umask 077; B=.local/share/mnv2-profiler; mkdir -p \"$B\"; "
         "T=$(mktemp -d \"$B/.incoming-XXXXXX\"); trap \"rm -rf $T\" EXIT; "
         "tar -x -z -C \"$T\" -f -; (cd \"$T\" && sha256sum -c --quiet --strict MANIFEST.sha256); "
         "chmod 0755 \"$T\"; V=\"$B/" +
         version +
         "\"; rm -rf \"$V.old\"; if [ -e \"$V\" ]; then mv \"$V\" \"$V.old\"; fi; "
         "mv \"$T\" \"$V\"; trap - EXIT; rm -rf \"$V.old\"; echo mnv2-installed \"$V\"";
}

}  // namespace

InstallResult install_bundle(const Target& t, const SessionConfig& c, const std::vector<BundleFile>& files,
                             const RemoteProgressFn& progress) {
  if (c.version.empty() || c.version.find_first_not_of("0123456789.+-abcdefghijklmnopqrstuvwxyz") != std::string::npos)
    throw Error("remote install: the version '" + c.version + "' is not a plain version");
  std::string staging = (fs::temp_directory_path() / "mnv2-bundle-XXXXXX").string();
  if (::mkdtemp(staging.data()) == nullptr)
    throw Error(std::string("cannot create a staging folder: ") + std::strerror(errno));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{staging};
  InstallResult r;
  std::string manifest;
  for (const BundleFile& f : files) {
    if (f.dest.empty() || f.dest.front() == '/' || f.dest.find("..") != std::string::npos ||
        f.dest.find_first_of("\n\\ ") != std::string::npos)
      throw Error("remote install: a bundle path '" + f.dest + "' is not plain");
    const fs::path to = fs::path(staging) / f.dest;
    fs::create_directories(to.parent_path());
    std::error_code ec;
    fs::copy_file(f.source, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("remote install: cannot copy " + f.source + ": " + ec.message());
    ::chmod(to.c_str(), f.executable ? 0755 : 0644);
    const int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("remote install: cannot read " + to.string());
    manifest += sha256_fd_hex(fd, to.string()) + "  " + f.dest + "\n";
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    r.bytes += st.st_size;
    ++r.files;
  }
  {
    const std::string m = staging + "/MANIFEST.sha256";
    const int fd = ::open(m.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !write_all(fd, manifest)) throw Error("remote install: cannot write the manifest");
    ::close(fd);
  }
  if (progress) progress(RemoteProgress{"upload", "bundle", 0, r.bytes});
  // tar | ssh: the archive is made here by tar and read there by tar.
  SpawnOptions to;
  to.pipe_stdin = false;
  to.pipe_stderr = true;
  Child tar = Child::spawn({"tar", "-c", "-z", "-C", staging, "-f", "-", "."}, to);
  SpawnOptions so;
  so.env = {"SSH_ASKPASS_REQUIRE=never"};
  Child ssh = Child::spawn(ssh_argv(t, c.ssh, {"sh", "-c", "'" + install_script(c.version) + "'"}), so);
  ::fcntl(ssh.out, F_SETFL, ::fcntl(ssh.out, F_GETFL) | O_NONBLOCK);
  ::fcntl(ssh.err, F_SETFL, ::fcntl(ssh.err, F_GETFL) | O_NONBLOCK);
  std::string out, err;
  auto drain = [&] {
    char buf[4096];
    for (int fd : {ssh.out, ssh.err}) {
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) {
        std::string& into = fd == ssh.out ? out : err;
        if (into.size() < 65536) into.append(buf, static_cast<size_t>(n));
      }
    }
  };
  int64_t sent = 0;
  char buf[1 << 16];
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(tar.out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!write_all(ssh.in, std::string_view(buf, static_cast<size_t>(n)))) {
      ok = false;
      break;
    }
    sent += n;
    drain();
    if (progress) progress(RemoteProgress{"upload", "bundle", sent, r.bytes});
  }
  ssh.close_in();
  const auto tar_status = tar.wait_until(Clock::now() + std::chrono::seconds(30));
  const auto deadline = Clock::now() + std::chrono::seconds(300);
  std::optional<int> st;
  while (!(st = ssh.wait_until(Clock::now() + std::chrono::milliseconds(200))) && Clock::now() < deadline) drain();
  drain();
  if (!st) {
    ssh.terminate();
    throw Error("remote install on target '" + t.name + "': no answer within 300 s after the bundle was sent");
  }
  const int code = WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  if (code == 255) throw Error(ssh_failure(t, err));
  if (!tar_status || *tar_status != 0) throw Error("remote install: tar failed here");
  if (code != 0 || !ok || out.find("mnv2-installed") == std::string::npos)
    throw Error("remote install on target '" + t.name + "' failed (" + describe_status(*st) +
                "): " + (err.empty() ? std::string("no message") : err.substr(0, 2000)));
  r.folder = ".local/share/mnv2-profiler/" + c.version;
  return r;
}

}  // namespace mnv2::remote
