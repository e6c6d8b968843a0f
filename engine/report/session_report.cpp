// Sessions (mnv2/report.h): a report file whose runs carry the user's names and notes and a pinned baseline.
#include <new>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/output_files.h"
#include "mnv2/report.h"

namespace mnv2 {
namespace {

using json::Json;

std::string session_text_at(const Json& object, const char* key, size_t run) {
  const Json* v = json::find(object, key);
  if (!v) return {};
  if (!v->is_string()) throw Error("session run " + std::to_string(run) + ": '" + key + "' is not a string");
  const std::string& s = json::as_string(*v);
  if (s.size() > kMaxSessionText)
    throw Error("session run " + std::to_string(run) + ": '" + key + "' is longer than " +
                std::to_string(kMaxSessionText) + " bytes");
  return s;
}

}  // namespace

json::Json session_json(const Session& session) {
  std::vector<RunReport> runs;
  runs.reserve(session.runs.size());
  for (const SessionRun& r : session.runs) runs.push_back(r.report);
  Json j = reports_json(runs);
  Json meta = Json::object();
  meta["baseline"] =
      session.baseline >= 0 && session.baseline < static_cast<int>(session.runs.size()) ? session.baseline : -1;
  Json list = Json::array();
  for (const SessionRun& r : session.runs) {
    Json e = Json::object();
    e["name"] = r.name.substr(0, kMaxSessionText);
    e["note"] = r.note.substr(0, kMaxSessionText);
    list.push_back(e);
  }
  meta["runs"] = list;
  j["session"] = meta;
  return j;
}

Session session_from_json(const Json& value) {
  std::vector<RunReport> reports = reports_from_json(value);
  Session s;
  for (RunReport& r : reports) s.runs.push_back({std::move(r), {}, {}});
  const Json* meta = json::find(value, "session");
  if (!meta) return s;
  if (!meta->is_object()) throw Error("'session' is not an object");
  const Json& list = json::array_at(*meta, "runs");
  if (list.size() != s.runs.size())
    throw Error("'session' names " + std::to_string(list.size()) + " run(s) but the report holds " +
                std::to_string(s.runs.size()));
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object()) throw Error("session run " + std::to_string(i) + " is not an object");
    s.runs[i].name = session_text_at(list[i], "name", i);
    s.runs[i].note = session_text_at(list[i], "note", i);
  }
  const int64_t baseline = json::int_at(*meta, "baseline");
  if (baseline < -1 || baseline >= static_cast<int64_t>(s.runs.size()))
    throw Error("session baseline " + std::to_string(baseline) + " is not one of its " + std::to_string(s.runs.size()) +
                " run(s)");
  s.baseline = static_cast<int>(baseline);
  return s;
}

Session read_session_file(const std::string& path) {
  const Json v = json::parse_file(path, inputs::kReport);
  try {
    return session_from_json(v);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": not enough memory to read the session");
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

void write_session_file(const std::string& path, const Session& session) {
  write_output_file(path, json::dump(session_json(session), 1) + "\n");
}

}  // namespace mnv2
