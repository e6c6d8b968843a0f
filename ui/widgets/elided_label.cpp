// The eliding label (see elided_label.h).
#include "widgets/elided_label.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QStyle>
#include <QToolTip>
#include <algorithm>

namespace mnv2::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) { setTextFormat(Qt::PlainText); }

int ElidedLabel::room() const { return contentsRect().width() - 2 * margin(); }

QStringList ElidedLabel::shownLines() const {
  QStringList lines = text().split(QLatin1Char('\n'));
  for (QString& line : lines) line = fontMetrics().elidedText(line, Qt::ElideRight, room());
  return lines;
}

bool ElidedLabel::isElided() const { return shownLines() != text().split(QLatin1Char('\n')); }

QString ElidedLabel::shownToolTip() const {
  if (!isElided()) return toolTip();
  return toolTip().isEmpty() ? text() : text() + QStringLiteral("\n\n") + toolTip();
}

QSize ElidedLabel::minimumSizeHint() const {
  const QSize hint = QLabel::minimumSizeHint();
  const QMargins m = contentsMargins();
  const int narrow = fontMetrics().horizontalAdvance(QStringLiteral("MMM…")) + m.left() + m.right() + 2 * margin();
  return {std::min(hint.width(), narrow), hint.height()};
}

bool ElidedLabel::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    const QString tip = shownToolTip();
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), tip, this);
    return true;
  }
  return QLabel::event(e);
}

void ElidedLabel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  drawFrame(&painter);
  const QRect r = contentsRect().adjusted(margin(), margin(), -margin(), -margin());
  style()->drawItemText(&painter, r, QStyle::visualAlignment(layoutDirection(), alignment()), palette(), isEnabled(),
                        shownLines().join(QLatin1Char('\n')), foregroundRole());
}

}  // namespace mnv2::ui
