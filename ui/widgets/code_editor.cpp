// The CUDA source editor and its highlighter (see code_editor.h).
#include "widgets/code_editor.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTextBlock>
#include <QToolTip>
#include <algorithm>

namespace mnv2::ui {

namespace {

constexpr int kMarkerProperty = QTextFormat::UserProperty + 1;  // tags the diagnostics' extra selections
const QColor kErrorLine(255, 220, 220);
const QColor kWarningLine(255, 243, 200);
const QColor kErrorMark(210, 40, 40);
const QColor kWarningMark(225, 160, 0);
const QColor kCurrentLine(238, 244, 252);

const QStringList& keywords() {
  static const QStringList k = {QStringLiteral("alignas"),
                                QStringLiteral("alignof"),
                                QStringLiteral("auto"),
                                QStringLiteral("break"),
                                QStringLiteral("case"),
                                QStringLiteral("class"),
                                QStringLiteral("const"),
                                QStringLiteral("constexpr"),
                                QStringLiteral("const_cast"),
                                QStringLiteral("continue"),
                                QStringLiteral("decltype"),
                                QStringLiteral("default"),
                                QStringLiteral("delete"),
                                QStringLiteral("do"),
                                QStringLiteral("else"),
                                QStringLiteral("enum"),
                                QStringLiteral("explicit"),
                                QStringLiteral("extern"),
                                QStringLiteral("false"),
                                QStringLiteral("for"),
                                QStringLiteral("goto"),
                                QStringLiteral("if"),
                                QStringLiteral("inline"),
                                QStringLiteral("mutable"),
                                QStringLiteral("namespace"),
                                QStringLiteral("new"),
                                QStringLiteral("noexcept"),
                                QStringLiteral("nullptr"),
                                QStringLiteral("operator"),
                                QStringLiteral("private"),
                                QStringLiteral("protected"),
                                QStringLiteral("public"),
                                QStringLiteral("reinterpret_cast"),
                                QStringLiteral("return"),
                                QStringLiteral("sizeof"),
                                QStringLiteral("static"),
                                QStringLiteral("static_assert"),
                                QStringLiteral("static_cast"),
                                QStringLiteral("struct"),
                                QStringLiteral("switch"),
                                QStringLiteral("template"),
                                QStringLiteral("this"),
                                QStringLiteral("true"),
                                QStringLiteral("typedef"),
                                QStringLiteral("typename"),
                                QStringLiteral("union"),
                                QStringLiteral("using"),
                                QStringLiteral("virtual"),
                                QStringLiteral("volatile"),
                                QStringLiteral("while"),
                                QStringLiteral("restrict")};
  return k;
}

// CUDA's qualifiers, launch bounds, built-in variables and the intrinsics a kernel writer meets first.
const QStringList& cudaWords() {
  static const QStringList k = {QStringLiteral("__global__"),
                                QStringLiteral("__device__"),
                                QStringLiteral("__host__"),
                                QStringLiteral("__shared__"),
                                QStringLiteral("__constant__"),
                                QStringLiteral("__managed__"),
                                QStringLiteral("__restrict__"),
                                QStringLiteral("__forceinline__"),
                                QStringLiteral("__noinline__"),
                                QStringLiteral("__launch_bounds__"),
                                QStringLiteral("__grid_constant__"),
                                QStringLiteral("__syncthreads"),
                                QStringLiteral("__syncwarp"),
                                QStringLiteral("__shfl_sync"),
                                QStringLiteral("__shfl_down_sync"),
                                QStringLiteral("__shfl_xor_sync"),
                                QStringLiteral("__ldg"),
                                QStringLiteral("__fmaf_rn"),
                                QStringLiteral("__half2float"),
                                QStringLiteral("__float2half"),
                                QStringLiteral("atomicAdd"),
                                QStringLiteral("threadIdx"),
                                QStringLiteral("blockIdx"),
                                QStringLiteral("blockDim"),
                                QStringLiteral("gridDim"),
                                QStringLiteral("warpSize")};
  return k;
}

const QStringList& typeWords() {
  static const QStringList k = {
      QStringLiteral("void"),     QStringLiteral("bool"),         QStringLiteral("char"),     QStringLiteral("short"),
      QStringLiteral("int"),      QStringLiteral("long"),         QStringLiteral("float"),    QStringLiteral("double"),
      QStringLiteral("signed"),   QStringLiteral("unsigned"),     QStringLiteral("size_t"),   QStringLiteral("int8_t"),
      QStringLiteral("int16_t"),  QStringLiteral("int32_t"),      QStringLiteral("int64_t"),  QStringLiteral("uint8_t"),
      QStringLiteral("uint16_t"), QStringLiteral("uint32_t"),     QStringLiteral("uint64_t"), QStringLiteral("half"),
      QStringLiteral("__half"),   QStringLiteral("__half2"),      QStringLiteral("half2"),    QStringLiteral("float2"),
      QStringLiteral("float4"),   QStringLiteral("int2"),         QStringLiteral("int4"),     QStringLiteral("uint4"),
      QStringLiteral("dim3"),     QStringLiteral("__nv_bfloat16")};
  return k;
}

QRegularExpression wordsPattern(const QStringList& words) {
  QStringList escaped;
  for (const QString& w : words) escaped << QRegularExpression::escape(w);
  return QRegularExpression(QStringLiteral("\\b(?:%1)\\b").arg(escaped.join(QLatin1Char('|'))));
}

QTextCharFormat charFormat(const QColor& color, bool bold = false, bool italic = false) {
  QTextCharFormat f;
  f.setForeground(color);
  if (bold) f.setFontWeight(QFont::Bold);
  f.setFontItalic(italic);
  return f;
}

}  // namespace

// ---- highlighter ----------------------------------------------------------------------------------------

CudaHighlighter::CudaHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {
  // Later rules paint over earlier ones: numbers, then words; strings, comments and preprocessor lines are
  // handled in highlightBlock after the rules (they win over anything inside them).
  m_rules.push_back({QRegularExpression(QStringLiteral(
                         "\\b(?:0[xX][0-9a-fA-F]+[uUlL]*|(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?[fFuUlL]*)\\b")),
                     charFormat(QColor(150, 60, 160))});
  m_rules.push_back({wordsPattern(typeWords()), charFormat(QColor(0, 110, 110), true)});
  m_rules.push_back({wordsPattern(keywords()), charFormat(QColor(0, 50, 160), true)});
  m_rules.push_back({wordsPattern(cudaWords()), charFormat(QColor(175, 80, 0), true)});
  m_comment = charFormat(QColor(110, 130, 110), false, true);
  m_string = charFormat(QColor(170, 40, 40));
  m_preprocessor = charFormat(QColor(120, 90, 20));
}

QString CudaHighlighter::classify(const QString& word) {
  if (cudaWords().contains(word)) return QStringLiteral("cuda");
  if (typeWords().contains(word)) return QStringLiteral("type");
  if (keywords().contains(word)) return QStringLiteral("keyword");
  return {};
}

void CudaHighlighter::highlightBlock(const QString& text) {
  for (const Rule& rule : m_rules) {
    auto it = rule.pattern.globalMatch(text);
    while (it.hasNext()) {
      const auto m = it.next();
      setFormat(static_cast<int>(m.capturedStart()), static_cast<int>(m.capturedLength()), rule.format);
    }
  }
  // A preprocessor line: the directive and its argument (an #include's <file> or "file" too).
  static const QRegularExpression directive(QStringLiteral("^\\s*#\\s*[A-Za-z_]+"));
  const auto d = directive.match(text);
  if (d.hasMatch()) setFormat(0, static_cast<int>(d.capturedEnd()), m_preprocessor);
  static const QRegularExpression include(QStringLiteral("^\\s*#\\s*include\\s*(<[^>]*>)"));
  const auto inc = include.match(text);
  if (inc.hasMatch())
    setFormat(static_cast<int>(inc.capturedStart(1)), static_cast<int>(inc.capturedLength(1)), m_string);

  // Strings, characters and comments, scanned left to right (a // inside a string is not a comment); block
  // state 1: inside a /* */ comment at the end of the line.
  int i = 0;
  const int n = static_cast<int>(text.size());
  if (previousBlockState() == 1) {
    const int end = static_cast<int>(text.indexOf(QStringLiteral("*/")));
    if (end < 0) {
      setFormat(0, n, m_comment);
      setCurrentBlockState(1);
      return;
    }
    setFormat(0, end + 2, m_comment);
    i = end + 2;
  }
  setCurrentBlockState(0);
  while (i < n) {
    const QChar c = text[i];
    if (c == QLatin1Char('/') && i + 1 < n && text[i + 1] == QLatin1Char('/')) {
      setFormat(i, n - i, m_comment);
      return;
    }
    if (c == QLatin1Char('/') && i + 1 < n && text[i + 1] == QLatin1Char('*')) {
      const int end = static_cast<int>(text.indexOf(QStringLiteral("*/"), i + 2));
      if (end < 0) {
        setFormat(i, n - i, m_comment);
        setCurrentBlockState(1);
        return;
      }
      setFormat(i, end + 2 - i, m_comment);
      i = end + 2;
      continue;
    }
    if (c == QLatin1Char('"') || c == QLatin1Char('\'')) {
      int j = i + 1;
      while (j < n && text[j] != c) j += text[j] == QLatin1Char('\\') ? 2 : 1;
      const int end = std::min(j + 1, n);
      setFormat(i, end - i, m_string);
      i = end;
      continue;
    }
    ++i;
  }
}

// ---- line numbers ----------------------------------------------------------------------------------------

class LineNumberArea : public QWidget {
 public:
  explicit LineNumberArea(CodeEditor* editor) : QWidget(editor), m_editor(editor) {
    setObjectName(QStringLiteral("lineNumberArea"));
  }
  QSize sizeHint() const override { return {m_editor->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { m_editor->paintLineNumbers(event); }
  bool event(QEvent* event) override {
    if (event->type() == QEvent::ToolTip && m_editor->lineNumberTip(static_cast<QHelpEvent*>(event))) return true;
    return QWidget::event(event);
  }
  // A click on a line's number puts the cursor on that line.
  void mousePressEvent(QMouseEvent* event) override {
    const QTextCursor c = m_editor->cursorForPosition(QPoint(0, static_cast<int>(event->position().y())));
    m_editor->goToLine(c.blockNumber() + 1);
  }

 private:
  CodeEditor* m_editor;
};

CodeEditor::CodeEditor(QWidget* parent) : QPlainTextEdit(parent) {
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  mono.setStyleHint(QFont::Monospace);
  setFont(mono);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabStopDistance(fontMetrics().horizontalAdvance(QLatin1Char(' ')) * 4);
  m_lineNumbers = new LineNumberArea(this);
  m_highlighter = new CudaHighlighter(document());
  connect(this, &QPlainTextEdit::blockCountChanged, this,
          [this] { setViewportMargins(lineNumberAreaWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy)
      m_lineNumbers->scroll(0, dy);
    else
      m_lineNumbers->update(0, rect.y(), m_lineNumbers->width(), rect.height());
  });
  connect(this, &QPlainTextEdit::cursorPositionChanged, this, [this] { updateExtraSelections(); });
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
  updateExtraSelections();
}

int CodeEditor::lineNumberAreaWidth() const {
  int digits = 1;
  for (int max = std::max(1, blockCount()); max >= 10; max /= 10) ++digits;
  digits = std::max(digits, 3);
  // The numbers, and room for the diagnostics' marker at the left.
  return 14 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * digits + 6;
}

void CodeEditor::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect cr = contentsRect();
  m_lineNumbers->setGeometry(QRect(cr.left(), cr.top(), lineNumberAreaWidth(), cr.height()));
}

void CodeEditor::paintLineNumbers(QPaintEvent* event) {
  QPainter p(m_lineNumbers);
  p.fillRect(event->rect(), QColor(245, 245, 245));
  QTextBlock block = firstVisibleBlock();
  int number = block.blockNumber();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  int bottom = top + qRound(blockBoundingRect(block).height());
  const int current = textCursor().blockNumber();
  const int h = fontMetrics().height();
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible() && bottom >= event->rect().top()) {
      // The worst marker of the line: an error's red dot over a warning's amber one.
      int mark = 0;  // 0 none, 1 warning, 2 error
      for (const Anchored& a : m_markers)
        if (a.cursor.blockNumber() == number) mark = std::max(mark, a.marker.error ? 2 : 1);
      if (mark) {
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        p.setBrush(mark == 2 ? kErrorMark : kWarningMark);
        const int d = std::min(9, h - 4);
        p.drawEllipse(QRect(3, top + (h - d) / 2, d, d));
      }
      p.setPen(number == current ? QColor(40, 40, 40) : QColor(150, 150, 150));
      p.drawText(0, top, m_lineNumbers->width() - 4, h, Qt::AlignRight, QString::number(number + 1));
    }
    block = block.next();
    top = bottom;
    bottom = top + qRound(blockBoundingRect(block).height());
    ++number;
  }
}

void CodeEditor::setMarkers(const std::vector<Marker>& markers) {
  m_markers.clear();
  for (const Marker& m : markers) {
    const QTextBlock block = document()->findBlockByNumber(m.line - 1);
    if (m.line < 1 || !block.isValid()) continue;
    QTextCursor c(block);
    m_markers.push_back({c, m});
  }
  updateExtraSelections();
  m_lineNumbers->update();
}

void CodeEditor::clearMarkers() { setMarkers({}); }

std::vector<int> CodeEditor::markerLines() const {
  std::vector<int> out;
  for (const Anchored& a : m_markers) out.push_back(a.cursor.blockNumber() + 1);
  return out;
}

std::vector<int> CodeEditor::highlightedLines() const {
  std::vector<int> out;
  for (const QTextEdit::ExtraSelection& s : extraSelections())
    if (s.format.hasProperty(kMarkerProperty)) out.push_back(s.cursor.blockNumber() + 1);
  return out;
}

QString CodeEditor::markerText(int line) const {
  QStringList lines;
  for (const Anchored& a : m_markers)
    if (a.cursor.blockNumber() + 1 == line)
      lines << QStringLiteral("%1%2: %3")
                   .arg(a.marker.error ? QStringLiteral("error") : QStringLiteral("warning"),
                        a.marker.column > 0 ? QStringLiteral(" (column %1)").arg(a.marker.column) : QString(),
                        a.marker.message);
  return lines.join(QLatin1Char('\n'));
}

void CodeEditor::goToLine(int line, int column) {
  const QTextBlock block = document()->findBlockByNumber(std::max(0, line - 1));
  if (!block.isValid()) return;
  QTextCursor c(block);
  if (column > 1) c.movePosition(QTextCursor::Right, QTextCursor::MoveAnchor, std::min(column - 1, block.length() - 1));
  setTextCursor(c);
  // From the left edge when the column fits (a jump made while the page was narrow or hidden scrolled sideways).
  horizontalScrollBar()->setValue(0);
  centerCursor();
  setFocus(Qt::OtherFocusReason);
}

void CodeEditor::updateExtraSelections() {
  QList<QTextEdit::ExtraSelection> selections;
  QTextEdit::ExtraSelection current;
  current.format.setBackground(kCurrentLine);
  current.format.setProperty(QTextFormat::FullWidthSelection, true);
  current.cursor = textCursor();
  current.cursor.clearSelection();
  selections << current;
  for (const Anchored& a : m_markers) {
    QTextEdit::ExtraSelection s;
    s.format.setBackground(a.marker.error ? kErrorLine : kWarningLine);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    s.format.setProperty(kMarkerProperty, true);
    s.format.setToolTip(a.marker.message);
    s.cursor = a.cursor;
    s.cursor.clearSelection();
    selections << s;
  }
  setExtraSelections(selections);
}

bool CodeEditor::lineNumberTip(QHelpEvent* event) {
  const QTextCursor c = cursorForPosition(QPoint(0, event->pos().y()));
  const QString text = markerText(c.blockNumber() + 1);
  if (text.isEmpty()) {
    QToolTip::hideText();
    return true;
  }
  QToolTip::showText(event->globalPos(), text, m_lineNumbers);
  return true;
}

bool CodeEditor::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = markerText(cursorForPosition(help->pos()).blockNumber() + 1);
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, viewport());
    return true;
  }
  return QPlainTextEdit::viewportEvent(event);
}

}  // namespace mnv2::ui
