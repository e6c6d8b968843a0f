// The run controller and its worker (see run_controller.h).
#include "run_controller.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <algorithm>
#include <chrono>
#include <climits>
#include <limits>
#include <new>

#include "common/remote_session.h"
#include "image_input.h"
#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/image.h"
#include "mnv2/model_lookup.h"
#include "mnv2/model_summary.h"
#include "mnv2/printable.h"
#include "mnv2/remote.h"
#include "mnv2/studies.h"

namespace mnv2::ui {

// Jobs with an id up to the watermark are cancelled. One atomic serves both cancel() and the superseding
// of a run by the next one; the worker reads it from the profiler's progress callback.
struct RunCancelState {
  std::atomic<JobId> upTo{0};
  bool cancelled(JobId id) const { return id <= upTo.load(std::memory_order_relaxed); }
  void raiseTo(JobId id) {
    JobId cur = upTo.load();
    while (cur < id && !upTo.compare_exchange_weak(cur, id)) {
    }
  }
};

// Runs on the worker thread; all engine calls of the app happen here.
class RunWorker : public QObject {
  Q_OBJECT
 public:
  explicit RunWorker(std::shared_ptr<RunCancelState> cancel) : m_cancel(std::move(cancel)) {}

  void probe(JobId id);
  void loadModel(JobId id, const QString& path);
  void classify(JobId id, const ClassifyRequest& request);
  void profile(JobId id, const ProfileRequest& request);
  void diff(JobId id, const DiffRequest& request);
  void sweep(JobId id, const SweepRequest& request);
  void evaluate(JobId id, const EvalRequest& request);

 Q_SIGNALS:
  void environmentReady(mnv2::ui::JobId id, const mnv2::ui::EnvironmentInfo& info);
  void modelLoaded(mnv2::ui::JobId id, const mnv2::ui::ModelInfo& info);
  void classified(mnv2::ui::JobId id, const mnv2::ui::ClassifyResult& result);
  void progress(const mnv2::ui::RunProgress& progress);
  void profiled(const mnv2::ui::ProfileResult& result);
  void diffed(const mnv2::ui::DiffResult& result);
  void swept(const mnv2::ui::SweepResult& result);
  void evaluated(const mnv2::ui::EvalOutcome& outcome);
  void failed(const mnv2::ui::JobFailure& failure);
  void cancelled(mnv2::ui::JobId id);

 private:
  // Runs `work`, turning exceptions into failed() (or cancelled() when the job was cancelled).
  template <typename Work>
  void guarded(JobId id, JobKind kind, Work&& work);
  const mnv2::Model& model() const;
  void sendProgress(RunProgress p, bool force);
  void profileOnTarget(JobId id, const ProfileRequest& request);

  std::shared_ptr<RunCancelState> m_cancel;
  std::shared_ptr<const mnv2::Model> m_model;
  std::vector<std::string> m_labels;
  mnv2::Classifier m_classifier;  // keeps the classify network between photographs
  QElapsedTimer m_progressClock;
};

template <typename Work>
void RunWorker::guarded(JobId id, JobKind kind, Work&& work) {
  QString message;
  try {
    work();
    return;
  } catch (const std::bad_alloc&) {
    message = QStringLiteral("out of memory");
  } catch (const std::exception& e) {
    message = QString::fromStdString(e.what());
  }
  if ((kind == JobKind::Profile || kind == JobKind::Diff || kind == JobKind::Eval) && m_cancel->cancelled(id)) {
    Q_EMIT cancelled(id);
    return;
  }
  Q_EMIT failed(JobFailure{id, kind, message});
}

const mnv2::Model& RunWorker::model() const {
  if (!m_model) throw mnv2::Error("no model is loaded");
  return *m_model;
}

void RunWorker::sendProgress(RunProgress p, bool force) {
  // A fast GPU run reports thousands of iterations a second; the progress bar needs ~25 updates a second.
  if (!force && m_progressClock.isValid() && m_progressClock.elapsed() < 40) return;
  m_progressClock.restart();
  Q_EMIT progress(p);
}

void RunWorker::probe(JobId id) {
  guarded(id, JobKind::Environment, [&] {
    EnvironmentInfo info;
    info.cuda = mnv2::cuda_environment();
    info.openCvDecoding = mnv2::image_decoding_available();
    for (const std::string& name : mnv2::backend_names()) {
      BackendStatus s;
      s.name = QString::fromStdString(name);
      try {
        auto backend = mnv2::make_backend(name);
        s.description = QString::fromStdString(backend->description());
        const mnv2::Availability a = backend->availability();
        s.available = a.available;
        s.reason = QString::fromStdString(a.reason);
        for (mnv2::Precision p : {mnv2::Precision::fp32, mnv2::Precision::tf32, mnv2::Precision::fp16})
          if (backend->supports(p)) s.precisions.push_back(p);
      } catch (const std::exception& e) {
        s.available = false;
        s.reason = QString::fromStdString(e.what());
      }
      info.backends.push_back(s);
    }
    Q_EMIT environmentReady(id, info);
  });
}

void RunWorker::loadModel(JobId id, const QString& path) {
  guarded(id, JobKind::Model, [&] {
    const mnv2::ModelLocation location = mnv2::locate_model(path.toStdString(), mnv2::executable_dir());
    auto model = std::make_shared<mnv2::Model>(mnv2::load_located_model(location));
    ModelInfo info;
    info.how = QString::fromStdString(location.how);
    info.source = QString::fromStdString(model->source);
    info.checksum = QString::fromStdString(model->checksum);
    info.synthetic = model->synthetic;
    for (const auto& w : model->warnings) info.warnings << QString::fromStdString(w);
    info.numClasses = model->num_classes;
    info.inputChannels = model->input_channels;
    info.inputHeight = model->input_height;
    info.inputWidth = model->input_width;
    info.numBlocks = model->num_blocks;
    info.preprocess = model->preprocess;
    // The app has no --labels: builtin_labels() (below) names the classes.
    for (const auto& [key, value] : mnv2::model_summary_rows(*model, mnv2::labels_source(model->num_classes)))
      info.fileFacts.append({QString::fromStdString(key), QString::fromStdString(value)});
    info.stats = mnv2::analyse(*model, 1, model->input_height, model->input_width);
    info.topology = model->layers;
    for (mnv2::Layer& l : info.topology) {
      l.weight = {};
      l.bias = {};
    }
    m_model = std::move(model);
    m_labels = mnv2::builtin_labels(m_model->num_classes);
    m_classifier.release();
    Q_EMIT modelLoaded(id, info);
  });
}

void RunWorker::classify(JobId id, const ClassifyRequest& request) {
  guarded(id, JobKind::Classify, [&] {
    const mnv2::Model& m = model();
    ClassifyResult result;
    result.imagePath = request.imagePath;
    result.backend = request.backend;
    result.decoder = decoderName(request.decoder);
    const mnv2::Image8 image = decodeImageFile(request.imagePath, request.decoder);
    mnv2::Image8 crop;
    result.input = mnv2::preprocess(image, m.preprocess, &crop);
    result.originalSize = QSize(image.width, image.height);
    result.picture = toQImage(image);
    constexpr int kMaxShownSide = 1024;  // the panel shows a few hundred pixels; keep the signal small
    if (result.picture.width() > kMaxShownSide || result.picture.height() > kMaxShownSide)
      result.picture =
          result.picture.scaled(kMaxShownSide, kMaxShownSide, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    result.crop = toQImage(crop);

    mnv2::ClassifyConfig config{request.backend.toStdString(), mnv2::Precision::fp32, request.cuda, 5, request.cudnn};
    config.device = request.device;
    const auto t0 = std::chrono::steady_clock::now();
    const mnv2::ClassifyResult ranked = m_classifier.classify(m, m_labels, config, result.input);
    result.runMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    result.top5 = ranked.images.front().top;
    for (const std::string& w : ranked.warnings) result.warnings << shownText(w);
    Q_EMIT classified(id, result);
  });
}

void RunWorker::profile(JobId id, const ProfileRequest& request) {
  if (request.target) {
    profileOnTarget(id, request);
    return;
  }
  guarded(id, JobKind::Profile, [&] {
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    if (request.backends.isEmpty()) throw mnv2::UsageError("no backend to profile");
    const mnv2::Model& m = model();
    // The classify network is released first: a large batch on the GPU gets all of its memory.
    m_classifier.release();
    const int n = static_cast<int>(request.backends.size());
    const bool diffs = request.compare && n > 1;
    const int units = n + (diffs ? n - 1 : 0);
    ProfileResult result;
    result.id = id;
    result.compare = request.compare;
    result.requested = request.config.precision;
    m_progressClock.invalidate();
    // The engine's compare study runs every backend (at the precision its rule gives each: the first may run
    // fp32 in place of a mode it lacks, and the window says so) and the diffs, the same as `mnv2 compare`.
    mnv2::CompareConfig compare;
    for (const QString& b : request.backends) compare.backends.push_back(b.toStdString());
    compare.base = request.config;
    compare.diffs = diffs;
    mnv2::CompareResult study =
        mnv2::run_compare(m, compare, [&](int i, const std::string& b, const std::string& phase, int done, int total) {
          const QString backend = QString::fromStdString(b);
          if (phase == "diff") {
            sendProgress(RunProgress{id, backend, QStringLiteral("diff against ") + request.backends[0], done, total, i,
                                     n, double(n + i - 1 + done) / units},
                         true);
          } else {
            const int phaseIndex = phase == "per-layer" ? 1 : 0;
            const double within = total > 0 ? (phaseIndex * total + done) / (2.0 * total) : 0.0;
            sendProgress(
                RunProgress{id, backend, QString::fromStdString(phase), done, total, i, n, (i + within) / units},
                done == total);
          }
          return !m_cancel->cancelled(id);
        });
    result.reports = std::move(study.reports);
    if (request.measureCeilings) {
      sendProgress(RunProgress{id, request.backends[0], QStringLiteral("ceilings"), 0, 1, n - 1, n, 1.0}, true);
      try {
        // The first run under its device's ceilings: the engine's rule (device, precision, threads), as mnv2
        // roofline's. The page places every shown run itself (roofline_points) under the ceilings it applies to.
        if (result.reports.empty()) throw mnv2::Error("no run to place under the ceilings");
        mnv2::RooflineResult roofline = mnv2::roofline_study(result.reports.front());
        result.ceilings = std::move(roofline.ceilings);
        result.ceilingsNote = QString::fromStdString(roofline.warning);
      } catch (const mnv2::Error& e) {  // the run itself stands; the roofline says why it has no roof
        result.ceilingsNote = QString::fromStdString(e.what());
      }
    }
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    Q_EMIT profiled(result);
  });
}

namespace {

QString engineText(const std::string& text) { return QString::fromStdString(mnv2::printable(text)); }

QString mib(int64_t bytes) { return QString::number(double(bytes) / (1 << 20), 'f', 1); }

}  // namespace

// The profile (or compare) study on a remote target: the engine's profile_on_target sends the model file and the
// input, runs `mnv2 profile|compare` there and reads the report back with the target, host and Slurm job in its
// origin. Its stages become this job's progress; Cancel is the same watermark, asked by the session every 200 ms.
void RunWorker::profileOnTarget(JobId id, const ProfileRequest& request) {
  guarded(id, JobKind::Profile, [&] {
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    if (request.backends.isEmpty()) throw mnv2::UsageError("no backend to profile");
    const mnv2::remote::Target& target = *request.target;
    if (const std::string why = frontend::remote_model_refusal(model()); !why.empty())
      throw mnv2::UsageError("target '" + target.name + "': " + why);
    std::vector<std::string> backends;
    for (const QString& b : request.backends) backends.push_back(b.toStdString());
    const int n = static_cast<int>(backends.size());
    mnv2::ProfileConfig config = request.config;
    config.backend = backends.front();
    mnv2::remote::SessionConfig session = frontend::remote_session_config(frontend::remote_environment());
    session.cancelled = [cancel = m_cancel, id] { return cancel->cancelled(id); };
    const QString who = engineText(target.name);
    m_progressClock.invalidate();
    std::string lastStage;
    // Rough shares of the bar: connecting and a pending job up to 5%, the upload to 15%, the study (its backends'
    // two phases each, as a run here counts them) to 95%, the download the rest.
    const auto progress = [&](const mnv2::remote::RemoteProgress& p) {
      RunProgress r{id,
                    who,
                    engineText(p.stage),
                    static_cast<int>(std::min<int64_t>(p.done, INT_MAX)),
                    static_cast<int>(std::min<int64_t>(p.total, INT_MAX)),
                    0,
                    n,
                    0.0};
      const QString phase = engineText(p.phase);
      if (p.stage == "connect") {
        r.text = QStringLiteral("%1: connecting to %2").arg(who, phase);
        r.fraction = 0.01;
      } else if (p.stage == "pending") {
        r.text = QStringLiteral("%1: pending: %2").arg(who, phase) +
                 (p.done > 0 ? QStringLiteral(" (%1 s)").arg(p.done) : QString());
        r.fraction = 0.03;
      } else if (p.stage == "upload") {
        // The model, or a file that travels with the run (named by its option: the input tensor).
        const QString what = p.phase == "model" ? phase : QStringLiteral("input (%1)").arg(phase);
        r.text = QStringLiteral("%1: upload %2 %3/%4 MiB").arg(who, what, mib(p.done), mib(p.total));
        r.fraction = 0.05 + (p.total > 0 ? 0.10 * double(p.done) / double(p.total) : 0.0);
      } else if (p.stage == "run") {
        // The study's own line: "BACKEND PHASE" with its done/total, as `mnv2 profile` reports it.
        const qsizetype space = phase.indexOf(QLatin1Char(' '));
        r.backend = space > 0 ? phase.left(space) : who;
        r.phase = space > 0 ? phase.mid(space + 1) : phase;
        const qsizetype i = std::max<qsizetype>(0, request.backends.indexOf(r.backend));
        r.backendIndex = static_cast<int>(i);
        const int phaseIndex = r.phase == QLatin1String("per-layer") ? 1 : 0;
        const double within = p.total > 0 ? (phaseIndex * double(p.total) + double(p.done)) / (2.0 * p.total) : 0.0;
        r.fraction = 0.15 + 0.80 * std::min(1.0, (double(i) + within) / n);
        r.text = QStringLiteral("%1: %2 %3/%4").arg(who, phase).arg(p.done).arg(p.total);
      } else {  // "download": the report coming back (named by its option)
        r.text = QStringLiteral("%1: %2 %3").arg(who, engineText(p.stage), phase);
        r.fraction = 0.97;
      }
      sendProgress(r, p.stage != lastStage || p.done == p.total);
      lastStage = p.stage;
    };
    ProfileResult result;
    result.id = id;
    result.compare = request.compare;
    result.requested = request.config.precision;
    result.reports =
        mnv2::remote::profile_on_target(target, session, config, backends, request.modelPath.toStdString(), progress);
    if (request.measureCeilings)
      result.ceilingsNote =
          QStringLiteral(
              "No ceilings for a run on target '%1': they are measured on the machine that runs, and the app measures "
              "them on this one only.")
              .arg(who);
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    Q_EMIT profiled(result);
  });
}

void RunWorker::sweep(JobId id, const SweepRequest& request) {
  guarded(id, JobKind::Profile, [&] {
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    const mnv2::Model& m = model();
    m_classifier.release();  // every point prepares its own network
    const std::vector<mnv2::BenchConfig> points = mnv2::sweep_points(request.config);
    m_progressClock.invalidate();
    SweepResult result;
    result.id = id;
    result.results = mnv2::run_sweep(m, request.config, [&](int i, int count, int done, int total) {
      const mnv2::BenchConfig& p = points[static_cast<size_t>(i)];
      const QString what = QStringLiteral("%1 %2x%3 batch %4")
                               .arg(QString::fromStdString(p.backend))
                               .arg(p.height)
                               .arg(p.width)
                               .arg(p.batch);
      sendProgress(RunProgress{id, what, QStringLiteral("sweep"), done, total, i, count,
                               (i + (total > 0 ? double(done) / total : 0.0)) / count},
                   done == total);
      return !m_cancel->cancelled(id);
    });
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    Q_EMIT swept(result);
  });
}

void RunWorker::diff(JobId id, const DiffRequest& request) {
  guarded(id, JobKind::Diff, [&] {
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    const mnv2::Model& m = model();
    m_classifier.release();
    mnv2::Tensor input = request.input;
    if (input.empty()) input = mnv2::random_input(mnv2::Shape{1, m.input_channels, request.height, request.width}, 1);
    sendProgress(RunProgress{id, request.backend, QStringLiteral("diff"), 0, 1, 0, 1, 0.0}, true);
    DiffResult result;
    result.id = id;
    result.inputName = request.inputName;
    mnv2::DiffConfig config;
    config.backend = request.backend.toStdString();
    config.reference = request.reference.toStdString();
    config.precision = request.precision;
    config.cuda = request.cuda;
    config.cudnn = request.cudnn;
    config.device = request.device;
    config.input = input;
    mnv2::DiffResult study = mnv2::run_diff(m, config);
    result.referencePrecision = study.rule.run[0];
    result.precision = study.rule.run[1];
    result.diff = std::move(study.diff);
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    Q_EMIT diffed(result);
  });
}

void RunWorker::evaluate(JobId id, const EvalRequest& request) {
  guarded(id, JobKind::Eval, [&] {
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    const mnv2::Model& m = model();
    m_classifier.release();  // the evaluation prepares its own network at its batch size
    const std::string set = request.set.toStdString();
    const QFileInfo info(request.set);
    std::vector<mnv2::EvalItem> items;
    if (request.set.isEmpty()) {
      throw mnv2::UsageError("no labelled set chosen: a folder with one sub-folder per class, or a list file");
    } else if (info.isDir()) {
      items = mnv2::scan_class_folders(set, m_labels);
    } else if (info.isFile()) {
      const QString images = request.imagesDir.isEmpty() ? info.absolutePath() : request.imagesDir;
      if (!QFileInfo(images).isDir()) throw mnv2::Error(images.toStdString() + ": the images folder does not exist");
      items = mnv2::read_eval_list(set, images.toStdString(), m.num_classes);
    } else {
      throw mnv2::Error(set + ": no such file or folder");
    }
    // The app's decoder (QImage where this build has no OpenCV codecs) and the engine's preprocessing;
    // ".f32" files are preprocessed tensors, which the engine's own loader reads.
    const mnv2::Preprocess pp = m.preprocess;
    const ImageDecoder decoder = request.decoder;
    const mnv2::ImageLoader tensors = mnv2::default_image_loader(pp);
    const mnv2::ImageLoader load = [pp, decoder, tensors](const std::string& path) {
      const QString file = QString::fromStdString(path);
      if (mnv2::is_tensor_file(path)) return tensors(path);
      return mnv2::preprocess(decodeImageFile(file, decoder), pp);
    };
    EvalOutcome out;
    out.id = id;
    out.record.set = request.set;
    out.record.decoder = decoderName(decoder);
    out.record.numClasses = m.num_classes;
    const QString backend = QString::fromStdString(request.config.backend);
    QElapsedTimer clock;
    clock.start();
    m_progressClock.invalidate();
    sendProgress(RunProgress{id, backend, QStringLiteral("eval"), 0, static_cast<int>(items.size()), 0, 1, 0.0}, true);
    out.record.result = mnv2::evaluate(m, items, request.config, load, [&](int done, int total) {
      if (done == 0) clock.restart();  // the backend is prepared: images/s counts from here, as the result's
      const double s = clock.elapsed() / 1000.0;
      sendProgress(RunProgress{id, backend, QStringLiteral("eval"), done, total, 0, 1,
                               total > 0 ? double(done) / total : 1.0, s > 0 ? done / s : 0.0},
                   done == total);
      return !m_cancel->cancelled(id);
    });
    if (m_cancel->cancelled(id)) throw mnv2::Error("cancelled");
    Q_EMIT evaluated(out);
  });
}

// ---- RunController ---------------------------------------------------------------------------------

RunController::RunController(QObject* parent)
    : QObject(parent), m_cancel(std::make_shared<RunCancelState>()), m_probeCancel(std::make_shared<RunCancelState>()) {
  qRegisterMetaType<mnv2::ui::JobId>("mnv2::ui::JobId");
  qRegisterMetaType<EnvironmentInfo>();
  qRegisterMetaType<ModelInfo>();
  qRegisterMetaType<ClassifyResult>();
  qRegisterMetaType<RunProgress>();
  qRegisterMetaType<ProfileResult>();
  qRegisterMetaType<DiffResult>();
  qRegisterMetaType<SweepResult>();
  qRegisterMetaType<EvalOutcome>();
  qRegisterMetaType<JobFailure>();
  qRegisterMetaType<TargetProbe>();

  m_thread.setObjectName(QStringLiteral("mnv2-run-worker"));
  m_worker = new RunWorker(m_cancel);
  m_worker->moveToThread(&m_thread);
  connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);

  // Worker -> GUI thread (queued: the two objects live on different threads). Stale results stop here.
  connect(m_worker, &RunWorker::environmentReady, this,
          [this](JobId, const EnvironmentInfo& info) { Q_EMIT environmentReady(info); });
  connect(m_worker, &RunWorker::modelLoaded, this, [this](JobId id, const ModelInfo& info) {
    if (id == m_latestModel) Q_EMIT modelLoaded(info);
  });
  connect(m_worker, &RunWorker::classified, this, [this](JobId id, const ClassifyResult& result) {
    if (id == m_latestClassify) Q_EMIT classified(result);
  });
  connect(m_worker, &RunWorker::progress, this, [this](const RunProgress& p) {
    if (p.id == m_latestRun && !m_cancel->cancelled(p.id)) Q_EMIT progress(p);
  });
  connect(m_worker, &RunWorker::profiled, this, [this](const ProfileResult& result) {
    if (result.id != m_latestRun) return;
    finishRun(result.id);
    Q_EMIT profiled(result);
  });
  connect(m_worker, &RunWorker::diffed, this, [this](const DiffResult& result) {
    if (result.id != m_latestRun) return;
    finishRun(result.id);
    Q_EMIT diffed(result);
  });
  connect(m_worker, &RunWorker::swept, this, [this](const SweepResult& result) {
    if (result.id != m_latestRun) return;
    finishRun(result.id);
    Q_EMIT swept(result);
  });
  connect(m_worker, &RunWorker::evaluated, this, [this](const EvalOutcome& outcome) {
    if (outcome.id != m_latestRun) return;
    finishRun(outcome.id);
    Q_EMIT evaluated(outcome);
  });
  connect(m_worker, &RunWorker::cancelled, this, [this](JobId id) {
    if (id != m_latestRun) return;
    finishRun(id);
    Q_EMIT cancelled(id);
  });
  connect(m_worker, &RunWorker::failed, this, [this](const JobFailure& f) {
    switch (f.kind) {
      case JobKind::Model:
        if (f.id != m_latestModel) return;
        break;
      case JobKind::Classify:
        if (f.id != m_latestClassify) return;
        break;
      case JobKind::Profile:
      case JobKind::Diff:
      case JobKind::Eval:
        if (f.id != m_latestRun) return;
        finishRun(f.id);
        break;
      case JobKind::Environment:
        break;
    }
    Q_EMIT failed(f);
  });
  m_thread.start();
}

RunController::~RunController() {
  m_cancel->raiseTo(std::numeric_limits<JobId>::max());
  m_probeCancel->raiseTo(std::numeric_limits<JobId>::max());
  for (QThread* t : std::as_const(m_probes)) {
    t->wait();  // the session sees the cancel within 200 ms
    delete t;
  }
  m_thread.quit();
  m_thread.wait();
}

JobId RunController::probeTarget(const mnv2::remote::Target& target) {
  const JobId id = ++m_nextId;
  noteTargetUsed(target);
  const std::shared_ptr<RunCancelState> cancel = m_probeCancel;
  QThread* thread = QThread::create([this, id, target, cancel] {
    TargetProbe probe;
    probe.id = id;
    probe.target = QString::fromStdString(mnv2::printable(target.name));
    try {
      mnv2::remote::SessionConfig config = frontend::remote_session_config(frontend::remote_environment());
      config.cancelled = [cancel, id] { return cancel->cancelled(id); };
      mnv2::remote::Session session(target, config, [&](const mnv2::remote::RemoteProgress& p) {
        TargetProbe waiting = probe;
        waiting.progress = QString::fromStdString(mnv2::printable(p.stage + (p.phase.empty() ? "" : " " + p.phase)));
        QMetaObject::invokeMethod(
            this, [this, waiting] { Q_EMIT targetProbeProgress(waiting); }, Qt::QueuedConnection);
      });
      probe.result = session.probe();
      probe.ok = true;
    } catch (const std::bad_alloc&) {
      probe.error = QStringLiteral("out of memory");
    } catch (const std::exception& e) {
      probe.error = QString::fromStdString(e.what());
    }
    if (!probe.ok && cancel->cancelled(id)) probe.error = QStringLiteral("cancelled");
    // Queued to the controller: dropped with it when it is gone (its destructor waits for this thread first).
    QMetaObject::invokeMethod(
        this, [this, probe] { Q_EMIT targetProbed(probe); }, Qt::QueuedConnection);
  });
  thread->setObjectName(QStringLiteral("mnv2-probe"));
  m_probes << thread;
  connect(thread, &QThread::finished, this, [this, thread] {
    m_probes.removeAll(thread);
    thread->deleteLater();
  });
  thread->start();
  return id;
}

void RunController::cancelProbes() { m_probeCancel->raiseTo(m_nextId); }

void RunController::noteTargetUsed(const mnv2::remote::Target& target) {
  m_targetsUsed.insert(QString::fromStdString(target.name), target);
}

void RunController::closeConnections() {
  if (m_targetsUsed.isEmpty()) return;
  const mnv2::remote::SessionConfig config = frontend::remote_session_config(frontend::remote_environment());
  for (const mnv2::remote::Target& t : std::as_const(m_targetsUsed)) mnv2::remote::close_connection(t, config.ssh);
  m_targetsUsed.clear();
}

JobId RunController::probeEnvironment() {
  const JobId id = ++m_nextId;
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id] { w->probe(id); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::loadModel(const QString& path) {
  const JobId id = m_latestModel = ++m_nextId;
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, path] { w->loadModel(id, path); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::classify(const ClassifyRequest& request) {
  const JobId id = m_latestClassify = ++m_nextId;
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, request] { w->classify(id, request); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::startRun() {
  if (m_latestRun) m_cancel->raiseTo(m_latestRun);  // the previous run is superseded
  m_latestRun = ++m_nextId;
  if (!m_runPending) {
    m_runPending = true;
    Q_EMIT runningChanged(true);
  }
  return m_latestRun;
}

void RunController::finishRun(JobId id) {
  if (id != m_latestRun || !m_runPending) return;
  m_runPending = false;
  Q_EMIT runningChanged(false);
}

JobId RunController::profile(const ProfileRequest& request) {
  if (request.target) noteTargetUsed(*request.target);
  const JobId id = startRun();
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, request] { w->profile(id, request); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::diff(const DiffRequest& request) {
  const JobId id = startRun();
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, request] { w->diff(id, request); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::sweep(const SweepRequest& request) {
  const JobId id = startRun();
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, request] { w->sweep(id, request); }, Qt::QueuedConnection);
  return id;
}

JobId RunController::evaluate(const EvalRequest& request) {
  const JobId id = startRun();
  QMetaObject::invokeMethod(
      m_worker, [w = m_worker, id, request] { w->evaluate(id, request); }, Qt::QueuedConnection);
  return id;
}

void RunController::cancel() {
  if (m_runPending) m_cancel->raiseTo(m_latestRun);
}

}  // namespace mnv2::ui

#include "run_controller.moc"
