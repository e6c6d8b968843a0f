// Accuracy evaluation JSON and CSV (see mnv2/eval_report.h).
#include "mnv2/eval_report.h"
#include "mnv2/build_info.h"

#include <locale>
#include <sstream>

#include "mnv2/csv.h"
#include "mnv2/report.h"

namespace mnv2 {

using json::Json;

std::string eval_json(const EvalResult& r, const ReportModel& model, const EvalSource& source) {
  Json misses = Json::array();
  for (const auto& miss : r.misclassified)
    misses.push_back({{"path", miss.path}, {"label", miss.label}, {"top5", miss.top5}});
  Json skips = Json::array();
  for (const auto& skip : r.skipped) skips.push_back({{"path", skip.path}, {"reason", skip.reason}});
  const Json j = {{"schema", "mnv2.eval/1"},
                  {"model", model_json(model)},
                  {"commit", build_commit()},
                  {"images_dir", source.images_dir},
                  {"list", source.list},
                  {"backend", r.config.backend},
                  {"backend_description", r.backend_description},
                  {"precision", to_string(r.config.precision)},
                  {"batch", r.config.batch},
                  {"loader_threads", r.config.loader_threads},
                  {"images", r.images},
                  {"top1_correct", r.top1_correct},
                  {"top5_correct", r.top5_correct},
                  {"top1", r.top1},
                  {"top5", r.top5},
                  {"wall_s", r.wall_s},
                  {"images_per_s", r.images_per_s},
                  {"inference_s", r.inference_s},
                  {"loader_wait_s", r.loader_wait_s},
                  {"misclassified", misses},
                  {"skipped", skips}};
  return json::dump(j, 2) + "\n";
}

std::string eval_csv(const EvalResult& r, const EvalCsvContext& context) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(9);
  out << "record,set,backend,backend_description,precision,batch,loader_threads,decoder,images,top1_correct,"
         "top5_correct,top1,top5,wall_s,images_per_s,inference_s,loader_wait_s,path,label,label_name,predicted_top5,"
         "predicted_top5_names,reason\n";
  // Every row starts with the summary's fields, so that any row read alone says what it belongs to.
  auto common = [&](const char* kind) {
    out << kind << ',' << csv_quote(context.set) << ',' << csv_quote(r.config.backend) << ','
        << csv_quote(r.backend_description) << ',' << to_string(r.config.precision) << ',' << r.config.batch << ','
        << r.config.loader_threads << ',' << csv_quote(context.decoder) << ',' << r.images << ',' << r.top1_correct
        << ',' << r.top5_correct << ',' << r.top1 << ',' << r.top5 << ',' << r.wall_s << ',' << r.images_per_s << ','
        << r.inference_s << ',' << r.loader_wait_s << ',';
  };
  common("summary");
  out << ",,,,,\n";
  for (const EvalMiss& m : r.misclassified) {
    common("misclassified");
    std::string indices, names;
    for (size_t k = 0; k < m.top5.size(); ++k) {
      indices += (k ? " " : "") + std::to_string(m.top5[k]);
      names += (k ? " | " : "") + context.prediction_name(m.top5[k]);
    }
    out << csv_quote(m.path) << ',' << m.label << ',' << csv_quote(context.label_name(m.label)) << ','
        << csv_quote(indices) << ',' << csv_quote(names) << ",\n";
  }
  for (const EvalSkip& s : r.skipped) {
    common("skipped");
    out << csv_quote(s.path) << ",,,,," << csv_quote(s.reason) << '\n';
  }
  return out.str();
}

}  // namespace mnv2
