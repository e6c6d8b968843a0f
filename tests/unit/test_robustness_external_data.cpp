// Hostile external data: every way a model's `location`, `offset` and `length` can point outside the
// model's folder, at something that is not a regular file, or at the wrong bytes. Each is refused with a
// message naming the model file and the initializer; nothing outside the folder is opened or read
// (watched with inotify), refusals do not differ by whether an outside path exists, and nothing hangs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/model.h"
#include "model/onnx_external_data.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;
using Entries = std::vector<std::pair<std::string, std::string>>;

const std::vector<float> kWeights = ramp(6);  // w: [3, 2, 1, 1], 24 bytes

std::string float_bytes(const std::vector<float>& v) {
  std::string s(v.size() * sizeof(float), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// A folder with the model in model/ and a folder beside it, outside/, holding secret.bin: 24 bytes that
// would load as w's weights if anything read them.
struct Layout {
  TempDir root;
  std::string model_dir = root.file("model");
  std::string outside = root.file("outside");
  std::string model = model_dir + "/m.onnx";
  Layout() {
    fs::create_directories(model_dir);
    fs::create_directories(outside);
    write_file(outside + "/secret.bin", float_bytes(kWeights));
  }
  std::string in_model(const std::string& name) const { return model_dir + "/" + name; }
};

// Conv(x, w) with w's external_data set to `entries`; IR 10, opset 20, like a current export.
void save_conv(const Layout& l, const Entries& entries, int64_t ir = 10, int64_t opset = 20) {
  OnnxBuilder b(opset, ir);
  b.input("x", {-1, 2, 4, 4});
  auto& w = b.init("w", {3, 2, 1, 1}, {});
  OnnxBuilder::external_entries(w, entries);
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y");
  b.save(l.model);
}

// Opens and reads of anything in one folder (the folder itself included), through inotify.
class AccessWatch {
 public:
  explicit AccessWatch(const std::string& dir) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0 || inotify_add_watch(fd_, dir.c_str(), IN_OPEN | IN_ACCESS) < 0)
      throw std::runtime_error(std::string("inotify: ") + std::strerror(errno));
  }
  ~AccessWatch() { close(fd_); }
  AccessWatch(const AccessWatch&) = delete;
  AccessWatch& operator=(const AccessWatch&) = delete;

  // What was opened or read since the watch began ("." for the folder itself).
  std::vector<std::string> events() {
    std::vector<std::string> seen;
    alignas(inotify_event) char buf[4096];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        seen.push_back((e->mask & IN_OPEN ? "open " : "read ") + std::string(e->len ? e->name : "."));
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return seen;
  }

 private:
  int fd_ = -1;
};

std::string load_error(const std::string& path, const OnnxLoadOptions& options = {}) {
  try {
    (void)load_onnx(path, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The load is refused naming the model file and the initializer, with every part, on one line.
std::string expect_refused(const Layout& l, const std::vector<std::string>& parts,
                           const OnnxLoadOptions& options = {}) {
  const std::string msg = load_error(l.model, options);
  EXPECT_FALSE(msg.empty()) << "loaded; expected a refusal containing '" << parts.at(0) << "'";
  EXPECT_EQ(msg.rfind(l.model + ": initializer 'w': ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << "\nmissing: " << p;
  return msg;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Refusals of locations leading outside: nothing outside is opened or read, and the message for an
// existing outside file (secret.bin) is the message for a missing one (missing.bin), word for word.
void expect_outside_refused(Layout& l, const std::function<void(const std::string&)>& point_at,
                            const std::string& reason) {
  AccessWatch watch(l.outside);
  point_at("secret.bin");
  const std::string existing = expect_refused(l, {reason});
  point_at("missing.bin");
  const std::string missing = expect_refused(l, {reason});
  EXPECT_EQ(replace_all(existing, "secret.bin", "missing.bin"), missing);
  EXPECT_EQ(watch.events(), std::vector<std::string>{}) << "something outside the model's folder was opened or read";
}

// then_branch and else_branch subgraphs on an If node, each holding one initializer ("hidden", 6 floats) whose
// data is external at `location`.
void add_external_branches(onnx::NodeProto& n, const std::string& location) {
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(name);
    auto* t = g->add_initializer();
    t->set_name("hidden");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(6);
    OnnxBuilder::external_entries(*t, {{"location", location}});
    g->add_output()->set_name("hidden");
  }
}

TEST(ExternalDataHostile, AbsoluteLocationIsRefusedByItsForm) {
  Layout l;
  expect_outside_refused(
      l,
      [&](const std::string& f) {
        save_conv(l, {{"location", l.outside + "/" + f}});
      },
      "is an absolute path");
  // Also an absolute path into the model's own folder: locations are relative, full stop.
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  save_conv(l, {{"location", l.in_model("w.bin")}});
  expect_refused(l, {"is an absolute path"});
}

TEST(ExternalDataHostile, DotDotIsRefusedByItsForm) {
  Layout l;
  expect_outside_refused(
      l,
      [&](const std::string& f) {
        save_conv(l, {{"location", "../outside/" + f}});
      },
      "contains '..'");
  // Even when it would come back inside.
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  save_conv(l, {{"location", "../model/w.bin"}});
  expect_refused(l, {"contains '..'"});
}

TEST(ExternalDataHostile, SymbolicLinksLeadingOutsideAreRefused) {
  Layout l;
  const std::string link = l.in_model("w.bin");
  auto relink = [&](const std::string& target) {
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_symlink(target, link);
  };
  const std::string reason = "goes through a symbolic link that leads outside the model's folder";
  // An absolute target, a relative one, and a chain whose second link leaves.
  expect_outside_refused(
      l,
      [&](const std::string& f) {
        relink(l.outside + "/" + f);
        save_conv(l, {{"location", "w.bin"}});
      },
      reason);
  expect_outside_refused(
      l,
      [&](const std::string& f) {
        relink("../outside/" + f);
        save_conv(l, {{"location", "w.bin"}});
      },
      reason);
  expect_outside_refused(
      l,
      [&](const std::string& f) {
        std::error_code ec;
        fs::remove(l.in_model("hop"), ec);
        fs::create_symlink("../outside/" + f, l.in_model("hop"));
        relink("hop");
        save_conv(l, {{"location", "w.bin"}});
      },
      reason);
  // A link to a folder outside, with the file named through it.
  AccessWatch watch(l.outside);
  fs::create_directory_symlink(l.outside, l.in_model("elsewhere"));
  save_conv(l, {{"location", "elsewhere/secret.bin"}});
  expect_refused(l, {reason});
  EXPECT_EQ(watch.events(), std::vector<std::string>{});
}

TEST(ExternalDataHostile, SymbolicLinksInsideTheFolderAreFine) {
  Layout l;
  fs::create_directories(l.in_model("data"));
  write_file(l.in_model("data/real.bin"), float_bytes(kWeights));
  struct Case {
    std::string link, target, location;
  };
  for (const Case& c : {Case{"w.bin", "data/real.bin", "w.bin"},               // relative target
                        Case{"d", "data", "d/real.bin"},                       // a linked folder
                        Case{"up.bin", "data/../data/real.bin", "up.bin"}}) {  // '..' inside a target
    SCOPED_TRACE(c.location);
    fs::create_symlink(c.target, l.in_model(c.link));
    save_conv(l, {{"location", c.location}, {"offset", "0"}, {"length", "24"}});
    const Model m = load_onnx(l.model);
    EXPECT_EQ(m.layers.at(0).weight, kWeights);
    EXPECT_EQ(external_locations(m), std::vector<std::string>{c.location});
  }
  // An absolute target is refused even where it points inside (openat2's RESOLVE_BENEATH: the folder's own
  // path is not trusted to mean the folder).
  fs::create_symlink(l.in_model("data/real.bin"), l.in_model("w_abs.bin"));
  save_conv(l, {{"location", "w_abs.bin"}});
  expect_refused(l, {"leads outside the model's folder"});
  // A folder reached through a symbolic link is the model's folder: locations resolve in its real place.
  fs::create_directory_symlink(l.model_dir, l.root.file("alias"));
  save_conv(l, {{"location", "d/real.bin"}});
  EXPECT_EQ(load_onnx(l.root.file("alias/m.onnx")).layers.at(0).weight, kWeights);
}

TEST(ExternalDataHostile, FifoIsRefusedWithoutHanging) {
  Layout l;
  ASSERT_EQ(mkfifo(l.in_model("w.bin").c_str(), 0600), 0) << std::strerror(errno);
  save_conv(l, {{"location", "w.bin"}});
  auto pending = std::async(std::launch::async, [&] { return load_error(l.model); });
  if (pending.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    // Unblock an open() waiting for a writer, then fail.
    const int fd = open(l.in_model("w.bin").c_str(), O_RDWR | O_NONBLOCK);
    pending.wait();
    if (fd >= 0) close(fd);
    FAIL() << "loading a model whose external data is a FIFO hung";
  }
  const std::string msg = pending.get();
  EXPECT_NE(msg.find("initializer 'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is a FIFO (named pipe), not a regular file"), std::string::npos) << msg;
}

TEST(ExternalDataHostile, DirectoriesAndDevicesAreRefused) {
  Layout l;
  fs::create_directories(l.in_model("sub"));
  save_conv(l, {{"location", "sub"}});
  expect_refused(l, {"external data location 'sub' is a directory, not a regular file"});
  save_conv(l, {{"location", "."}});
  expect_refused(l, {"names the model's folder, not a file"});
  save_conv(l, {{"location", "sub/"}});
  expect_refused(l, {"ends in '/'"});
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  save_conv(l, {{"location", "w.bin/"}});
  expect_refused(l, {"external data location 'w.bin/' ends in '/'"});
  // A device node inside the folder, where this user may make one (root); a link to /dev/null is a link out.
  if (mknod(l.in_model("null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    save_conv(l, {{"location", "null"}});
    expect_refused(l, {"is a character device, not a regular file"});
  } else {
    std::printf("[ note     ] mknod not permitted here (%s): the device-node case is not run\n", std::strerror(errno));
  }
  fs::create_symlink("/dev/null", l.in_model("devnull"));
  save_conv(l, {{"location", "devnull"}});
  expect_refused(l, {"leads outside the model's folder"});
  // A file used as a folder.
  write_file(l.in_model("flat.bin"), float_bytes(kWeights));
  save_conv(l, {{"location", "flat.bin/w.bin"}});
  expect_refused(l, {"'flat.bin' is not a folder"});
}

TEST(ExternalDataHostile, OffsetsAndLengthsBeyondTheFileAreRefused) {
  Layout l;
  write_file(l.in_model("w.bin"), float_bytes(kWeights) + "tail");  // 28 bytes
  struct Case {
    Entries entries;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{{"location", "w.bin"}, {"offset", "29"}}, "offset 29 is beyond the end of 'w.bin' (28 bytes)"},
      {{{"location", "w.bin"}, {"offset", "8"}, {"length", "24"}}, "offset 8 + length 24 goes beyond the end"},
      // offset + length wraps around 2^64: caught without adding them.
      {{{"location", "w.bin"}, {"offset", "4"}, {"length", "18446744073709551615"}}, "goes beyond the end"},
      {{{"location", "w.bin"}, {"offset", "18446744073709551600"}, {"length", "24"}}, "is beyond the end"},
      {{{"location", "w.bin"}, {"offset", "99999999999999999999999"}}, "offset '99999999999999999999999' is not"},
      {{{"location", "w.bin"}, {"offset", "-4"}}, "offset '-4' is not a whole number"},
      {{{"location", "w.bin"}, {"length", "24 "}}, "length '24 ' is not a whole number"},
      // Sizes that disagree with the tensor: 3 x 2 x 1 x 1 floats are 24 bytes.
      {{{"location", "w.bin"}, {"length", "20"}},
       "holds 20 bytes (offset 0, length 20) but the tensor's shape and type "
       "need 24 bytes"},
      {{{"location", "w.bin"}}, "holds 28 bytes (offset 0, to the end of 'w.bin' (28 bytes))"},
      {{{"location", "w.bin"}, {"offset", "8"}}, "holds 20 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    save_conv(l, c.entries);
    expect_refused(l, {c.reason});
  }
  // The same file read at an offset that fits: loads.
  save_conv(l, {{"location", "w.bin"}, {"offset", "4"}, {"checksum", "not-verified"}});
  write_file(l.in_model("w.bin"), "pad!" + float_bytes(kWeights));
  EXPECT_EQ(load_onnx(l.model).layers.at(0).weight, kWeights);
}

TEST(ExternalDataHostile, MissingFilesAndBadEntriesAreRefused) {
  Layout l;
  struct Case {
    Entries entries;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{{"location", "nope.bin"}}, "external data location 'nope.bin': no such file in the model's folder"},
      {{{"location", "sub/nope.bin"}}, "no such file in the model's folder"},
      {{{"offset", "0"}}, "is stored externally but its external data has no 'location'"},
      {{{"location", ""}}, "external data location is empty"},
      {{{"location", "w.bin"}, {"location", "x.bin"}}, "external data gives 'location' twice"},
      {{{"location", std::string("w.bin\0/../../x", 14)}}, "contains a NUL character"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    save_conv(l, c.entries);
    expect_refused(l, {c.reason});
  }
}

TEST(ExternalDataHostile, TotalBytesAreBounded) {
  Layout l;
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  save_conv(l, {{"location", "w.bin"}});
  OnnxLoadOptions small;
  small.max_external_bytes = 16;
  expect_refused(l, {"exceed the limit of 16 bytes"}, small);
  small.max_external_bytes = 24;
  EXPECT_EQ(load_onnx(l.model, small).layers.at(0).weight, kWeights);

  // A small tensor in a large file: the file is read whole for its checksum, so its size counts.
  write_file(l.in_model("w.bin"), float_bytes(kWeights) + std::string(1000, '\0'));
  save_conv(l, {{"location", "w.bin"}, {"offset", "0"}, {"length", "24"}});
  small.max_external_bytes = 100;
  expect_refused(l, {"exceed the limit of 100 bytes", "'w.bin' holds 1024", "read whole for its checksum"}, small);
  small.max_external_bytes = 1024;
  EXPECT_EQ(load_onnx(l.model, small).layers.at(0).weight, kWeights);
}

TEST(ExternalDataHostile, TensorsThatCannotBeExternalAreRefused) {
  Layout l;
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  {
    // Data in the file and a location too: which one is meant is not guessed.
    OnnxBuilder b(20, 10);
    b.input("x", {-1, 2, 4, 4});
    auto& w = b.init("w", {3, 2, 1, 1}, kWeights);
    auto* e = w.add_external_data();
    e->set_key("location");
    e->set_value("w.bin");
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    b.node("Conv", {"x", "w"}, {"y"}, "conv");
    b.output("y");
    b.save(l.model);
    expect_refused(l, {"is stored externally but also holds data in the file"});
  }
  {
    // A type the importer does not read: refused before anything is read.
    OnnxBuilder b(20, 10);
    b.input("x", {-1, 2, 4, 4});
    b.init("w", {3, 2, 1, 1}, {});
    b.proto().mutable_graph()->mutable_initializer(0)->set_data_type(onnx::TensorProto::INT8);
    OnnxBuilder::external_entries(*b.find_init("w"), {{"location", "w.bin"}});
    b.node("Conv", {"x", "w"}, {"y"}, "conv");
    b.output("y");
    b.save(l.model);
    expect_refused(l, {"has data type INT8, which is not read from external data"});
  }
  {
    // A tensor in a subgraph: never read by the importer, and the library's checker (IR 7, opset 13 runs
    // it) must not go looking for it either.
    OnnxBuilder b(13, 7);
    b.input("x", {-1, 2, 4, 4});
    b.init("w", {3, 2, 1, 1}, kWeights);
    b.conv("x", "c", 2, 3, 1);
    b.init("cond", {}, {1.0f});
    auto& n = b.node("If", {"cond"}, {"y"}, "branch");
    add_external_branches(n, l.outside + "/secret.bin");
    b.output("y");
    b.save(l.model);
    AccessWatch watch(l.outside);
    const std::string msg = load_error(l.model);
    EXPECT_NE(msg.find("node 'branch' (If): attribute 'then_branch': initializer 'hidden' keeps its data in an "
                       "external file"),
              std::string::npos)
        << msg;
    EXPECT_EQ(watch.events(), std::vector<std::string>{});
  }
}

// External data in a subgraph (or a function) is refused before any file is looked at, the main graph's
// own external data included, with one message whatever the location names: an existing or a missing file,
// inside the model's folder or outside it. Nothing but the model file itself is opened.
TEST(ExternalDataHostile, SubgraphExternalDataIsRefusedBeforeAnyFileIsLookedAt) {
  Layout l;
  write_file(l.in_model("w.bin"), float_bytes(kWeights));
  // The main graph's w in w.bin (valid: it would load), then If(then/else: `hidden` at `location`).
  auto save = [&](const std::string& location, bool in_function) {
    OnnxBuilder b(13, 7);
    b.input("x", {-1, 2, 4, 4});
    auto& w = b.init("w", {3, 2, 1, 1}, {});
    OnnxBuilder::external_entries(w, {{"location", "w.bin"}});
    b.node("Conv", {"x", "w"}, {"c"}, "conv");
    b.init("cond", {}, {1.0f});
    onnx::NodeProto* n = nullptr;
    if (in_function) {
      auto* f = b.proto().add_functions();
      f->set_name("f");
      f->set_domain("local");
      n = f->add_node();
      n->set_op_type("If");
      n->set_name("branch");
      n->add_input("cond");
      n->add_output("y");
      b.node("Identity", {"c"}, {"y"}, "id");
    } else {
      n = &b.node("If", {"cond"}, {"y"}, "branch");
    }
    add_external_branches(*n, location);
    b.output("y");
    b.save(l.model);
  };
  for (const bool in_function : {false, true}) {
    SCOPED_TRACE(in_function ? "in a function" : "in the main graph's If");
    std::vector<std::string> messages;
    for (const std::string& location :
         {l.outside + "/secret.bin", l.outside + "/missing.bin", std::string("../outside/secret.bin"),
          std::string("../outside/missing.bin"), std::string("w.bin"), std::string("missing.bin")}) {
      SCOPED_TRACE(location);
      save(location, in_function);
      AccessWatch outside(l.outside);
      AccessWatch inside(l.model_dir);
      const std::string msg = load_error(l.model);
      EXPECT_NE(msg.find("initializer 'hidden' keeps its data in an external file"), std::string::npos) << msg;
      EXPECT_EQ(msg.find(location), std::string::npos) << "the location is echoed: " << msg;
      messages.push_back(msg);
      EXPECT_EQ(outside.events(), std::vector<std::string>{});
      std::vector<std::string> seen;
      for (const std::string& e : inside.events())
        if (e.find("m.onnx") == std::string::npos) seen.push_back(e);
      EXPECT_EQ(seen, std::vector<std::string>{}) << "a file was opened before the refusal";
    }
    for (const std::string& m : messages) EXPECT_EQ(m, messages.front());
  }
}

// A Constant's tensor may live in external data too (the exporter moves large ones there).
TEST(ExternalDataHostile, ConstantNodeTensorsAreReadUnderTheSameRules) {
  Layout l;
  write_file(l.in_model("k.bin"), float_bytes({0.5f}));
  auto save = [&](const Entries& entries) {
    OnnxBuilder b(20, 10);
    b.input("x", {-1, 2, 4, 4});
    b.conv("x", "c", 2, 3, 1);
    auto& t = OnnxBuilder::attr_tensor(b.node("Constant", {}, {"hi"}, "k"), {}, {});
    OnnxBuilder::external_entries(t, entries);
    b.init("lo", {}, {0.0f});
    b.node("Clip", {"c", "lo", "hi"}, {"y"}, "clip");
    b.output("y");
    b.save(l.model);
  };
  save({{"location", "k.bin"}, {"offset", "0"}, {"length", "4"}});
  const Model m = load_onnx(l.model);
  EXPECT_EQ(m.layers.at(1).clip_max, 0.5f);
  EXPECT_EQ(external_locations(m), std::vector<std::string>{"k.bin"});

  save({{"location", l.outside + "/secret.bin"}});
  const std::string msg = load_error(l.model);
  EXPECT_EQ(msg.rfind(l.model + ": node 'k' (Constant): attribute 'value': external data location", 0), 0u) << msg;
  EXPECT_NE(msg.find("is an absolute path"), std::string::npos) << msg;
}

// The check and the open are one operation (issue 30, finding 1): a thread swaps the model's sub-folder with a
// symbolic link to a folder outside (renameat2 RENAME_EXCHANGE) as fast as it can while w, at sub/w.bin, is read
// again and again. Each read gets sub/w.bin or is refused; none reads the outside file (other bytes). Both
// mechanisms: the whole import (openat2 here), and the reader with the component walk forced. Before, 35 of 300
// imports read the outside file.
TEST(ExternalDataHostile, SwappingAFolderForALinkOutsideNeverReadsOutside) {
  Layout l;
  fs::create_directories(l.in_model("sub"));
  write_file(l.in_model("sub/w.bin"), float_bytes(kWeights));
  const std::vector<float> other(kWeights.size(), 99.0f);
  write_file(l.outside + "/w.bin", float_bytes(other));
  fs::create_directory_symlink("../outside", l.in_model("swap"));
  save_conv(l, {{"location", "sub/w.bin"}});
  const std::string sub = l.in_model("sub"), swap = l.in_model("swap");

  for (ContainedMethod method : {ContainedMethod::automatic, ContainedMethod::walk}) {
    const char* how = method == ContainedMethod::walk ? "walk (reader)" : "import (openat2 where available)";
    SCOPED_TRACE(how);
    // The weights one round read, or nothing when refused.
    const auto read_once = [&]() -> std::optional<std::vector<float>> {
      try {
        if (method == ContainedMethod::automatic) return load_onnx(l.model).layers.at(0).weight;
        detail::ExternalDataReader reader(l.model_dir, 1 << 20, method);
        const std::string bytes = reader.read(detail::ExternalRef{"sub/w.bin", 0, 24}, 24);
        std::vector<float> w(6);
        std::memcpy(w.data(), bytes.data(), bytes.size());
        return w;
      } catch (const std::exception&) {  // Error from the import, ExternalDataRefusal from the reader
        return std::nullopt;
      }
    };
    std::atomic<bool> stop{false};
    std::atomic<long> swaps{0};
    std::thread swapper([&] {
      while (!stop.load()) {
        if (::syscall(SYS_renameat2, AT_FDCWD, sub.c_str(), AT_FDCWD, swap.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
      }
    });
    int inside = 0, refused = 0, outside = 0, other_bytes = 0, rounds = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (; rounds < 500 && std::chrono::steady_clock::now() < deadline; ++rounds) {
      const std::optional<std::vector<float>> w = read_once();
      if (!w) {
        ++refused;
      } else if (*w == kWeights) {
        ++inside;
      } else if (*w == other) {
        ++outside;
      } else {
        ++other_bytes;
      }
    }
    stop = true;
    swapper.join();
    std::printf("[ figures  ] %s: %d reads while %ld swaps: %d read sub/w.bin, %d refused, %d read outside\n", how,
                rounds, swaps.load(), inside, refused, outside);
    EXPECT_GE(rounds, 100);
    EXPECT_GT(swaps.load(), 0);
    EXPECT_EQ(outside, 0) << "a read reached the file outside the model's folder";
    EXPECT_EQ(other_bytes, 0);
    // Leave the layout as it began for the next method.
    if (!fs::is_directory(fs::symlink_status(sub)))
      ::syscall(SYS_renameat2, AT_FDCWD, sub.c_str(), AT_FDCWD, swap.c_str(), RENAME_EXCHANGE);
  }
}

}  // namespace
}  // namespace mnv2::test
