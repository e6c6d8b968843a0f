// Deep dives side by side (see deep_dive_model.h).
#include "models/deep_dive_model.h"

#include <QBrush>
#include <QColor>
#include <iterator>

namespace mnv2::ui {
namespace {

struct RowInfo {
  DeepDiveModel::Row row;
  const char* name;
  const char* tip;
};
// One list: each row's name and tool-tip beside its enum value.
constexpr RowInfo kRows[] = {
    {DeepDiveModel::Status, "Status", "the dive's state, or in one line why it could not run"},
    {DeepDiveModel::Step, "Step", "the run's execution step that covers the layer (the NVTX range ncu profiled)"},
    {DeepDiveModel::Layers, "Layers covered", "the topology layers the step's kernels compute (a fused step: several)"},
    {DeepDiveModel::Measured, "Measured median", "the step's median in the run, by the run's own timer"},
    {DeepDiveModel::Roofline, "Roofline point", "the step's arithmetic intensity and throughput in the run"},
    {DeepDiveModel::NcuDuration, "ncu duration", "gpu__time_duration.sum over the step's kernels (clocks not locked)"},
    {DeepDiveModel::Kernels, "Kernels", "the step's kernels as ncu names them (the longest first in the tool-tip)"},
    {DeepDiveModel::SmThroughput, "SM throughput",
     "speed of light, compute: sm__throughput, % of peak (duration-weighted)"},
    {DeepDiveModel::MemoryThroughput, "Memory throughput",
     "speed of light, memory: gpu__compute_memory_throughput, % of peak (duration-weighted)"},
    {DeepDiveModel::DramThroughput, "DRAM throughput", "gpu__dram_throughput, % of peak (duration-weighted)"},
    {DeepDiveModel::AchievedOccupancy, "Achieved occupancy",
     "sm__warps_active, % of the SM's warps (duration-weighted)"},
    {DeepDiveModel::TheoreticalOccupancy, "Theoretical occupancy", "sm__maximum_warps_per_active_cycle_pct"},
    {DeepDiveModel::OccupancyLimiter, "Occupancy limiter",
     "the launch__occupancy_limit_* with the fewest blocks per SM (of the longest kernel)"},
    {DeepDiveModel::Stall1, "Stall reason 1", "smsp__average_warps_issue_stalled_*_per_issue_active: warps per issue"},
    {DeepDiveModel::Stall2, "Stall reason 2", "the second largest stall reason"},
    {DeepDiveModel::Stall3, "Stall reason 3", "the third largest stall reason"},
    {DeepDiveModel::L1Bytes, "L1 bytes", "l1tex__t_bytes.sum over the step's kernels"},
    {DeepDiveModel::L2Bytes, "L2 bytes", "lts__t_bytes.sum over the step's kernels"},
    {DeepDiveModel::DramBytes, "DRAM bytes", "dram__bytes.sum over the step's kernels"},
    {DeepDiveModel::HmmaPipe, "Tensor pipe: mma.sync (HMMA)",
     "sm__inst_executed_pipe_tensor_op_hmma, % of peak (duration-weighted)"},
    {DeepDiveModel::GmmaPipe, "Tensor pipe: wgmma (GMMA)",
     "sm__inst_executed_pipe_tensor_op_gmma, % of peak (duration-weighted; Hopper and later)"},
    {DeepDiveModel::Advice, "ncu's advice",
     "the rules of ncu's details page for the longest kernel, the largest estimated speedup first (all in the "
     "tool-tip)"},
    {DeepDiveModel::NcuVersion, "Nsight Compute", "the ncu that profiled the step"},
};
static_assert(std::size(kRows) == DeepDiveModel::RowCount, "one name and tip per row");

constexpr bool rowsInOrder() {
  for (int i = 0; i < static_cast<int>(std::size(kRows)); ++i)
    if (kRows[i].row != i) return false;
  return true;
}
static_assert(rowsInOrder(), "kRows lists the rows in their enum order");

QString number(const std::optional<double>& v, int decimals, const QString& unit = {}) {
  return v ? QString::number(*v, 'f', decimals) + unit : QStringLiteral("–");
}

QString bytes(const std::optional<double>& v) {
  if (!v) return QStringLiteral("–");
  if (*v >= 1e6) return QString::number(*v / 1e6, 'f', 2) + QStringLiteral(" MB");
  if (*v >= 1e3) return QString::number(*v / 1e3, 'f', 1) + QStringLiteral(" kB");
  return QString::number(*v, 'f', 0) + QStringLiteral(" B");
}

// The step's longest kernel (its advice is the one shown).
const mnv2::NcuKernel* longest(const mnv2::DeepDiveResult& r) {
  const mnv2::NcuKernel* best = nullptr;
  for (const mnv2::NcuKernel& k : r.ncu.summary.kernels)
    if (!best || k.duration_ns.value_or(0) > best->duration_ns.value_or(0)) best = &k;
  return best;
}

}  // namespace

DeepDiveModel::DeepDiveModel(QObject* parent) : QAbstractTableModel(parent) {}

QString DeepDiveModel::rowName(Row row) { return QString::fromUtf8(kRows[row].name); }
QString DeepDiveModel::rowTip(Row row) { return QString::fromUtf8(kRows[row].tip); }

void DeepDiveModel::setColumns(std::vector<Column> columns) {
  beginResetModel();
  m_columns = std::move(columns);
  endResetModel();
}

void DeepDiveModel::setColumn(int column, Column value) {
  if (column < 0 || column >= columnCount()) return;
  m_columns[static_cast<size_t>(column)] = std::move(value);
  Q_EMIT dataChanged(index(0, column), index(RowCount - 1, column));
  Q_EMIT headerDataChanged(Qt::Horizontal, column, column);
}

int DeepDiveModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : RowCount; }
int DeepDiveModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_columns.size());
}

QString DeepDiveModel::text(const Column& c, Row row) const {
  if (!c.result) return row == Status ? c.status : QString();
  const mnv2::DeepDiveResult& r = *c.result;
  const mnv2::NcuKernel& t = r.ncu.summary.total;
  switch (row) {
    case Status:
      return QStringLiteral("profiled: %1 (the step ran %2× under ncu; the last shown)")
          .arg(QString::fromStdString(t.name))
          .arg(r.ncu.summary.runs_in_report);
    case Step:
      return QString::fromStdString(r.step_name);
    case Layers: {
      QStringList parts;
      for (size_t i = 0; i < r.layers.size(); ++i)
        parts << QString::number(r.layers[i]) + (i < r.layer_names.size()
                                                     ? QStringLiteral(" ") + QString::fromStdString(r.layer_names[i])
                                                     : QString());
      return parts.join(QStringLiteral(", "));
    }
    case Measured:
      return r.measured_median_ns ? QString::number(*r.measured_median_ns / 1e3, 'f', 2) + QStringLiteral(" µs (") +
                                        QString::fromStdString(r.timer) + QLatin1Char(')')
                                  : QStringLiteral("–");
    case Roofline:
      return r.intensity_flop_per_byte ? number(r.intensity_flop_per_byte, 2, QStringLiteral(" FLOP/B, ")) +
                                             number(r.gflops, 1, QStringLiteral(" GFLOP/s"))
                                       : QStringLiteral("–");
    case NcuDuration:
      return t.duration_ns ? QString::number(*t.duration_ns / 1e3, 'f', 2) + QStringLiteral(" µs")
                           : QStringLiteral("–");
    case Kernels: {
      QStringList names;
      for (const mnv2::NcuKernel& k : r.ncu.summary.kernels) {
        QString n = QString::fromStdString(k.name);
        n = n.left(n.indexOf(QLatin1Char('(')) < 0 ? n.size() : n.indexOf(QLatin1Char('(')));
        names << n;
      }
      return names.join(QStringLiteral("; "));
    }
    case SmThroughput:
      return number(t.sm_throughput_pct, 1, QStringLiteral(" %"));
    case MemoryThroughput:
      return number(t.memory_throughput_pct, 1, QStringLiteral(" %"));
    case DramThroughput:
      return number(t.dram_throughput_pct, 1, QStringLiteral(" %"));
    case AchievedOccupancy:
      return number(t.achieved_occupancy_pct, 1, QStringLiteral(" %"));
    case TheoreticalOccupancy:
      return number(t.theoretical_occupancy_pct, 1, QStringLiteral(" %"));
    case OccupancyLimiter:
      return t.occupancy_limiter.empty() ? QStringLiteral("–")
                                         : QString::fromStdString(t.occupancy_limiter) + QStringLiteral(" (") +
                                               number(t.occupancy_limit_blocks, 0) + QStringLiteral(" blocks/SM)");
    case Stall1:
    case Stall2:
    case Stall3: {
      const size_t i = static_cast<size_t>(row - Stall1);
      if (i >= t.stalls.size()) return QStringLiteral("–");
      return QString::fromStdString(t.stalls[i].reason) + QStringLiteral(" ") +
             QString::number(t.stalls[i].warps_per_issue, 'f', 2);
    }
    case L1Bytes:
      return bytes(t.bytes.l1);
    case L2Bytes:
      return bytes(t.bytes.l2);
    case DramBytes:
      return bytes(t.bytes.dram);
    case HmmaPipe:
      return number(t.hmma_pipe_pct, 2, QStringLiteral(" %"));
    case GmmaPipe:
      return number(t.gmma_pipe_pct, 2, QStringLiteral(" %"));
    case Advice: {
      const mnv2::NcuKernel* k = longest(r);
      return k && !k->notes.empty() ? QString::fromStdString(k->notes.front()) : QStringLiteral("–");
    }
    case NcuVersion:
      return QString::fromStdString(r.ncu.ncu_version);
    case RowCount:
      break;
  }
  return {};
}

QVariant DeepDiveModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= RowCount || index.column() >= columnCount()) return {};
  const Column& c = m_columns[static_cast<size_t>(index.column())];
  const Row row = static_cast<Row>(index.row());
  if (role == Qt::DisplayRole) return text(c, row);
  if (role == Qt::ToolTipRole) {
    if (row == Kernels && c.result) {
      QStringList names;
      for (const mnv2::NcuKernel& k : c.result->ncu.summary.kernels)
        names << QString::fromStdString(k.name) + QStringLiteral(" — ") +
                     number(k.duration_ns, 0, QStringLiteral(" ns"));
      return names.join(QLatin1Char('\n'));
    }
    if (row == Status && !c.status.isEmpty()) return c.status;
    if (row == Advice && c.result) {
      const mnv2::NcuKernel* k = longest(*c.result);
      if (k && !k->notes.empty()) {
        QStringList notes;
        for (const std::string& n : k->notes) notes << QString::fromStdString(n);
        return notes.join(QStringLiteral("\n\n"));
      }
    }
    return rowTip(row);
  }
  if (role == Qt::ForegroundRole && row == Status && !c.result && !c.status.startsWith(QStringLiteral("running")))
    return QBrush(QColor(0xb0, 0x20, 0x20));
  return {};
}

QVariant DeepDiveModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    if (section < 0 || section >= RowCount) return {};
    if (role == Qt::DisplayRole) return rowName(static_cast<Row>(section));
    if (role == Qt::ToolTipRole) return rowTip(static_cast<Row>(section));
    return {};
  }
  if (section < 0 || section >= columnCount() || role != Qt::DisplayRole) return {};
  return m_columns[static_cast<size_t>(section)].run;
}

}  // namespace mnv2::ui
