// The two choices every job of the app starts from: which backend (unavailable ones shown but disabled,
// the reason as tool-tip) and which arithmetic mode (only what the backend's supports() answered is
// enabled). The run settings, the Accuracy page and the Sweep page share them.
#pragma once

#include <QComboBox>
#include <QStringList>
#include <vector>

#include "mnv2/backend.h"
#include "run_types.h"

namespace mnv2::ui {

class BackendCombo : public QComboBox {
  Q_OBJECT
 public:
  explicit BackendCombo(QWidget* parent = nullptr);

  // Keeps the selection where it is still available (or the name asked for by select() before the
  // backends were known), else the first available one.
  void setBackends(const std::vector<BackendStatus>& backends);
  QString backend() const;           // the selected (available) backend, "" when none
  bool select(const QString& name);  // false when unknown or unavailable
  bool isAvailable(const QString& name) const;
  QStringList availableBackends() const;                   // cpu-ref, cpu first: the reference of diffs
  const BackendStatus* status(const QString& name) const;  // nullptr when unknown

 private:
  std::vector<BackendStatus> m_backends;
  QString m_wanted;  // asked for before the backends arrived
};

class PrecisionCombo : public QComboBox {
  Q_OBJECT
 public:
  explicit PrecisionCombo(QWidget* parent = nullptr);

  // Enables the modes every one of `backends` runs (fp32 always); `who` names them in the tool-tips of
  // the disabled modes. A selection that is no longer enabled falls back to fp32.
  void setSupported(const std::vector<const BackendStatus*>& backends);
  mnv2::Precision precision() const;
  bool setPrecision(mnv2::Precision precision);  // false (selection unchanged) when not enabled
  bool isAllowed(mnv2::Precision precision) const;
};

}  // namespace mnv2::ui
