// The Kernel lab's source editor: a QPlainTextEdit with line numbers, CUDA syntax highlighting and compiler
// diagnostics shown inline (the line tinted, a marker in the margin, the messages as the line's tool-tip).
// Markers follow the text as it is edited (they are anchored to text cursors) until the next compile.
#pragma once

#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>
#include <vector>

namespace mnv2::ui {

// CUDA C++: keywords, CUDA qualifiers and built-ins (__global__, __shared__, threadIdx, ...), types, numbers,
// strings and characters, comments (// and /* */ across lines), preprocessor lines.
class CudaHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  explicit CudaHighlighter(QTextDocument* document);

  // What a word of the language is, for tests and tool-tips: "keyword", "cuda", "type", or empty.
  static QString classify(const QString& word);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  std::vector<Rule> m_rules;
  QTextCharFormat m_comment, m_string, m_preprocessor;
};

class CodeEditor : public QPlainTextEdit {
  Q_OBJECT
 public:
  struct Marker {
    int line = 0;  // 1-based
    int column = 0;
    bool error = true;  // else a warning
    QString message;
  };

  explicit CodeEditor(QWidget* parent = nullptr);

  // Markers for these lines (1-based); lines outside the text are left out. Replaces the previous ones.
  void setMarkers(const std::vector<Marker>& markers);
  void clearMarkers();
  // The markers' lines as they are now (edits above a marker move it), in the order given.
  std::vector<int> markerLines() const;
  // The tinted lines (the extra selections the editor paints), 1-based: what the user sees.
  std::vector<int> highlightedLines() const;
  QString markerText(int line) const;  // the messages of a line's markers, one per line; empty if none
  void goToLine(int line, int column = 0);
  int currentLine() const { return textCursor().blockNumber() + 1; }
  int lineNumberAreaWidth() const;
  CudaHighlighter* highlighter() const { return m_highlighter; }

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool viewportEvent(QEvent* event) override;

 private:
  friend class LineNumberArea;
  void paintLineNumbers(QPaintEvent* event);
  bool lineNumberTip(QHelpEvent* event);
  void updateExtraSelections();
  struct Anchored {
    QTextCursor cursor;  // at the marker's line: moves with edits
    Marker marker;
  };
  std::vector<Anchored> m_markers;
  QWidget* m_lineNumbers = nullptr;
  CudaHighlighter* m_highlighter = nullptr;
};

}  // namespace mnv2::ui
