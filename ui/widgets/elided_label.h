// A one-line-per-line plain-text label that never cuts its text silently: where a line is wider than the label, it
// is drawn elided ("…") and the tool-tip gives the whole text (then the label's own tool-tip, if it has one).
#pragma once

#include <QLabel>
#include <QStringList>

namespace mnv2::ui {

class ElidedLabel : public QLabel {
  Q_OBJECT
  // What the label draws, line by line, and the tool-tip it shows: what a test compares with the geometry.
  Q_PROPERTY(QStringList shownLines READ shownLines)
  Q_PROPERTY(QString shownToolTip READ shownToolTip)
 public:
  explicit ElidedLabel(QWidget* parent = nullptr);

  QStringList shownLines() const;
  bool isElided() const;
  QString shownToolTip() const;

  // As narrow as an ellipsis and a few letters: a layout may squeeze the label, which then elides.
  QSize minimumSizeHint() const override;

 protected:
  bool event(QEvent* e) override;
  void paintEvent(QPaintEvent* e) override;

 private:
  int room() const;  // the width a line may take, pixels
};

}  // namespace mnv2::ui
