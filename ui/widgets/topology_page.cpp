// The topology tab (see topology_page.h).
#include "widgets/topology_page.h"

#include "models/report_access.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "models/layer_filter_proxy.h"
#include "models/layer_selection.h"
#include "models/layer_table_model.h"

namespace mnv2::ui {

TopologyPage::TopologyPage(LayerTableModel* model, LayerSelection* selection, QWidget* parent)
    : QWidget(parent), m_model(model), m_selection(selection) {
  m_proxy = new LayerFilterProxy(this);
  m_proxy->setSourceModel(model);
  m_view = new QTableView(this);
  m_view->setTabKeyNavigation(false);  // Tab leaves the table; arrows move between cells
  m_view->setObjectName(QStringLiteral("topologyTable"));
  m_view->setModel(m_proxy);
  m_view->setSortingEnabled(true);
  m_view->sortByColumn(LayerTableModel::Index, Qt::AscendingOrder);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(22);
  m_view->horizontalHeader()->setStretchLastSection(true);
  m_view->setWordWrap(false);

  m_block = new QComboBox(this);
  m_block->setObjectName(QStringLiteral("blockFilter"));
  m_kind = new QComboBox(this);
  m_kind->setObjectName(QStringLiteral("kindFilter"));
  m_name = new QLineEdit(this);
  m_name->setObjectName(QStringLiteral("nameFilter"));
  m_name->setPlaceholderText(QStringLiteral("name contains…"));
  m_name->setClearButtonEnabled(true);
  auto* clear = new QPushButton(QStringLiteral("Show all"), this);
  m_header = new QLabel(this);
  m_header->setObjectName(QStringLiteral("topologyModelHeader"));
  m_header->setWordWrap(true);
  m_header->setTextFormat(Qt::RichText);
  m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_header->hide();
  m_summary = new QLabel(this);
  m_summary->setObjectName(QStringLiteral("topologySummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* filters = new QHBoxLayout;
  filters->addWidget(new QLabel(QStringLiteral("Block"), this));
  filters->addWidget(m_block);
  filters->addWidget(new QLabel(QStringLiteral("Kind"), this));
  filters->addWidget(m_kind);
  filters->addWidget(m_name, 1);
  filters->addWidget(clear);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_header);
  layout->addWidget(m_summary);
  layout->addLayout(filters);
  layout->addWidget(m_view, 1);

  connect(m_block, &QComboBox::currentIndexChanged, this,
          [this] { m_proxy->setBlockFilter(m_block->currentData().isValid() ? m_block->currentData().toInt() : -1); });
  connect(m_kind, &QComboBox::currentIndexChanged, this,
          [this] { m_proxy->setKindFilter(m_kind->currentIndex() > 0 ? m_kind->currentText() : QString()); });
  connect(m_name, &QLineEdit::textChanged, m_proxy, &LayerFilterProxy::setNameFilter);
  connect(clear, &QPushButton::clicked, this, [this] {
    m_block->setCurrentIndex(0);
    m_kind->setCurrentIndex(0);
    m_name->clear();
  });
  connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
    refillFilters();
    m_view->resizeColumnsToContents();
    showLayer(m_selection->currentLayer());
  });
  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) m_selection->setCurrentLayer(current.data(LayerTableModel::LayerRole).toInt());
  });
  connect(m_selection, &LayerSelection::currentLayerChanged, this, [this](int layer) { showLayer(layer); });
  refillFilters();
}

void TopologyPage::focusNameFilter() {
  m_name->setFocus(Qt::ShortcutFocusReason);
  m_name->selectAll();
}

void TopologyPage::setSummary(const QString& html) { m_summary->setText(html); }

void TopologyPage::setModelHeader(const QString& name, const QList<QPair<QString, QString>>& facts,
                                  const QStringList& warnings) {
  if (facts.isEmpty() && warnings.isEmpty()) {
    m_header->clear();
    m_header->hide();
    return;
  }
  // Everything shown comes from the file (names, producer strings): escaped, never markup.
  QStringList parts;
  for (const auto& [label, value] : facts)
    parts << QStringLiteral("%1: %2").arg(label.toHtmlEscaped(), value.toHtmlEscaped());
  QString html = QStringLiteral("<b>%1</b> · %2").arg(name.toHtmlEscaped(), parts.join(QStringLiteral(" · ")));
  for (const QString& w : warnings)
    html += QStringLiteral("<br><span style=\"color:#b35c00\">warning: %1</span>").arg(w.toHtmlEscaped());
  m_header->setText(html);
  m_header->show();
}

void TopologyPage::refillFilters() {
  const QVariant block = m_block->currentData();
  const QString kind = m_kind->currentIndex() > 0 ? m_kind->currentText() : QString();
  QSignalBlocker b1(m_block), b2(m_kind);
  m_block->clear();
  m_kind->clear();
  m_block->addItem(QStringLiteral("all blocks"));
  m_kind->addItem(QStringLiteral("all kinds"));
  int lastBlock = -1;
  QStringList kinds;
  for (const mnv2::Layer& l : m_model->layers()) {
    if (l.block != lastBlock) {
      m_block->addItem(shownText(l.block_name), l.block);
      lastBlock = l.block;
    }
    const QString k = QString::fromLatin1(mnv2::to_string(l.kind));
    if (!kinds.contains(k)) kinds << k;
  }
  m_kind->addItems(kinds);
  const int bi = block.isValid() ? m_block->findData(block) : 0;
  m_block->setCurrentIndex(bi < 0 ? 0 : bi);
  const int ki = kind.isEmpty() ? 0 : m_kind->findText(kind);
  m_kind->setCurrentIndex(ki < 0 ? 0 : ki);
  m_proxy->setBlockFilter(m_block->currentData().isValid() ? m_block->currentData().toInt() : -1);
  m_proxy->setKindFilter(m_kind->currentIndex() > 0 ? m_kind->currentText() : QString());
}

void TopologyPage::showLayer(int layer) {
  const int row = m_model->rowOfLayer(layer);
  if (row < 0) {
    m_view->clearSelection();
    return;
  }
  const QModelIndex proxyIndex = m_proxy->mapFromSource(m_model->index(row, 0));
  if (!proxyIndex.isValid()) return;  // filtered out: keep the filter the user chose
  if (m_view->currentIndex().row() != proxyIndex.row()) {
    m_view->selectionModel()->setCurrentIndex(proxyIndex,
                                              QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  }
  m_view->scrollTo(proxyIndex);
}

}  // namespace mnv2::ui
