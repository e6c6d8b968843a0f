// Backend and precision choices (see backend_picker.h).
#include "widgets/backend_picker.h"

#include <QStandardItemModel>

#include "models/report_access.h"

namespace mnv2::ui {

namespace {

// Item data: the backend name, and whether it can run here.
constexpr int kNameRole = Qt::UserRole;
constexpr int kAvailableRole = Qt::UserRole + 1;

QString backendTitle(const QString& name) {
  if (name == QLatin1String("cpu")) return QStringLiteral("CPU, oneDNN (cpu)");
  if (name == QLatin1String("cpu-ref")) return QStringLiteral("CPU reference (cpu-ref)");
  if (name == QLatin1String("cuda")) return QStringLiteral("custom CUDA kernels (cuda)");
  if (name == QLatin1String("cudnn")) return QStringLiteral("cuDNN (cudnn)");
  return name;
}

constexpr mnv2::Precision kPrecisions[] = {mnv2::Precision::fp32, mnv2::Precision::tf32, mnv2::Precision::fp16};

QString precisionDescription(mnv2::Precision p) {
  switch (p) {
    case mnv2::Precision::fp32:
      return QStringLiteral("float32 throughout");
    case mnv2::Precision::tf32:
      return QStringLiteral("TF32 tensor-core operands on float32 data");
    case mnv2::Precision::fp16:
      return QStringLiteral("half-precision storage, float32 accumulation");
  }
  return {};
}

}  // namespace

BackendCombo::BackendCombo(QWidget* parent) : QComboBox(parent) { setSizeAdjustPolicy(QComboBox::AdjustToContents); }

void BackendCombo::setBackends(const std::vector<BackendStatus>& backends) {
  const QString previous = m_wanted.isEmpty() ? backend() : m_wanted;
  m_backends = backends;
  QSignalBlocker block(this);
  clear();
  auto* items = qobject_cast<QStandardItemModel*>(model());  // QComboBox's own model
  int selected = -1, firstAvailable = -1;
  for (const BackendStatus& b : backends) {
    auto* item = new QStandardItem(backendTitle(b.name));
    item->setData(b.name, kNameRole);
    item->setData(b.available, kAvailableRole);
    if (b.available) {
      item->setToolTip(b.description);
      if (firstAvailable < 0) firstAvailable = items->rowCount();
      if (b.name == previous) selected = items->rowCount();
    } else {
      // Shown, but not selectable: the reason is the tool-tip (e.g. no CUDA device on this machine).
      item->setFlags(item->flags() & ~(Qt::ItemIsEnabled | Qt::ItemIsSelectable));
      item->setToolTip(QStringLiteral("%1\nunavailable: %2").arg(b.description, b.reason));
      item->setText(backendTitle(b.name) + QStringLiteral(" — unavailable"));
    }
    items->appendRow(item);
  }
  setCurrentIndex(selected >= 0 ? selected : firstAvailable);
  m_wanted.clear();
  block.unblock();
  Q_EMIT currentIndexChanged(currentIndex());
}

QString BackendCombo::backend() const {
  const int i = currentIndex();
  if (i < 0 || !itemData(i, kAvailableRole).toBool()) return {};
  return itemData(i, kNameRole).toString();
}

bool BackendCombo::select(const QString& name) {
  if (count() == 0) {
    m_wanted = name;  // applied when the backends arrive
    return true;
  }
  const int i = findData(name, kNameRole);
  if (i < 0 || !itemData(i, kAvailableRole).toBool()) return false;
  setCurrentIndex(i);
  return true;
}

bool BackendCombo::isAvailable(const QString& name) const {
  const int i = findData(name, kNameRole);
  return i >= 0 && itemData(i, kAvailableRole).toBool();
}

QStringList BackendCombo::availableBackends() const {
  QStringList out;
  for (int i = 0; i < count(); ++i)
    if (itemData(i, kAvailableRole).toBool()) out << itemData(i, kNameRole).toString();
  // The reference first (it is what diffs are judged against), then the oneDNN cpu backend.
  if (out.removeOne(QStringLiteral("cpu"))) out.prepend(QStringLiteral("cpu"));
  if (out.removeOne(QStringLiteral("cpu-ref"))) out.prepend(QStringLiteral("cpu-ref"));
  return out;
}

const BackendStatus* BackendCombo::status(const QString& name) const {
  for (const BackendStatus& b : m_backends)
    if (b.name == name) return &b;
  return nullptr;
}

PrecisionCombo::PrecisionCombo(QWidget* parent) : QComboBox(parent) {
  for (mnv2::Precision p : kPrecisions) addItem(precisionName(p), static_cast<int>(p));
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  setToolTip(QStringLiteral("The arithmetic of the run; only the modes the backend runs can be chosen"));
  setSupported({});
}

void PrecisionCombo::setSupported(const std::vector<const BackendStatus*>& backends) {
  auto* items = qobject_cast<QStandardItemModel*>(model());
  for (int i = 0; i < count(); ++i) {
    const auto p = static_cast<mnv2::Precision>(itemData(i).toInt());
    QStringList without;  // the backends that do not run p
    for (const BackendStatus* b : backends)
      if (b && !b->supports(p)) without << b->name;
    // fp32 always: every backend runs it, and it is the fallback when nothing is known yet.
    const bool on = p == mnv2::Precision::fp32 || (!backends.empty() && without.isEmpty());
    QStandardItem* item = items->item(i);
    item->setFlags(on ? item->flags() | Qt::ItemIsEnabled | Qt::ItemIsSelectable
                      : item->flags() & ~(Qt::ItemIsEnabled | Qt::ItemIsSelectable));
    item->setToolTip(
        on ? precisionDescription(p)
        : without.isEmpty()
            ? QStringLiteral("no backend chosen")
            : QStringLiteral("%1 does not run %2").arg(without.join(QStringLiteral(", ")), precisionName(p)));
  }
  if (!isAllowed(precision())) setCurrentIndex(0);
}

mnv2::Precision PrecisionCombo::precision() const {
  return currentIndex() < 0 ? mnv2::Precision::fp32 : static_cast<mnv2::Precision>(currentData().toInt());
}

bool PrecisionCombo::setPrecision(mnv2::Precision precision) {
  if (!isAllowed(precision)) return false;
  setCurrentIndex(findData(static_cast<int>(precision)));
  return true;
}

bool PrecisionCombo::isAllowed(mnv2::Precision precision) const {
  const int i = findData(static_cast<int>(precision));
  if (i < 0) return false;
  const auto* items = qobject_cast<const QStandardItemModel*>(model());
  return items->item(i)->isEnabled();
}

}  // namespace mnv2::ui
