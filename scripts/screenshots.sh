#!/usr/bin/env bash
# Takes the README's screenshots from a real interactive session: for each screen size it starts Xvfb, a
# window manager (openbox), a private D-Bus session with the accessibility bus, and the app in its normal
# interactive mode (no --run/--screenshot/--quit scripting). It maximizes the window through the window
# manager and drives the app with real X input events from xdotool (keyboard shortcuts, menu accelerators,
# clicks, typing into fields), then saves a PNG of the whole screen after each step of STEPS below.
#
# Widgets are found, and runs waited for, through the app's accessibility tree (AT-SPI: the names Qt gives
# buttons, tabs and form fields from their labels); that is read-only, every action is an X input event.
#
#   scripts/screenshots.sh [--app PATH] [--model F] [--image IMG] [--out DIR] [--sizes WxH,WxH]
#                          [--timeout S] [--only SUBSTRING] [--lab-kernel F.cu [--lab-slot S] [--lab-layers L]]
#                          [--install]
#
# Defaults: --app build/app/mnv2-profiler, --model ../shared/weights/mobilenet_v2_1.0_224.onnx,
# --image ../shared/images/cat.bmp, --out docs/screenshots, --sizes 1280x720,1920x1080, --timeout 300
# (seconds for any one wait); --only saves just the pictures whose step name contains SUBSTRING (every step
# still runs: later steps build on earlier ones). Files: OUT/session-WxH-STEP.png. Exit 0 when every step
# ran; non-zero with a message on the first step that failed or timed out (a run failing, an error dialog,
# a widget not found, the app exiting).
#
# --lab-kernel F.cu adds the Kernel lab (issue 18): the app starts with F in the lab's editor (slot --lab-slot,
# default depthwise), and two more steps run `mnv2 lab` through the page as a user does: "lab-run" presses Run
# and waits for the per-layer chart of the kernel against ours and cuDNN (it must pass the check), then
# "lab-compile-error" types a line with an undeclared name at the end of the source, presses Ctrl+B (Compile)
# and waits for the compile error, its diagnostics and the marked line. The page runs the mnv2 that
# MNV2_CLI names, else the one beside the app, else the PATH's: on a machine with a GPU, a real one; with the
# tests' fake (MNV2_CLI=tests/ui/fake_mnv2_lab.sh) only the layout can be checked (its figures are made up).
#
# Needs (Debian packages; --install runs apt-get for them, nothing is installed otherwise; not part of
# scripts/install-deps.sh because CI does not take screenshots):
#   xvfb openbox xdotool x11-utils x11-apps imagemagick dbus at-spi2-core python3-gi gir1.2-atspi-2.0
#   pngquant (optional: shrinks the PNGs)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
app="$root/build/app/mnv2-profiler"
model="$root/../shared/weights/mobilenet_v2_1.0_224.onnx"
image="$root/../shared/images/cat.bmp"
out="$root/docs/screenshots"
sizes="1280x720,1920x1080"
timeout_s=300
only=""
lab_kernel=""
lab_slot=depthwise
lab_layers=""
packages=(xvfb openbox xdotool x11-utils x11-apps imagemagick dbus at-spi2-core python3-gi gir1.2-atspi-2.0 pngquant)

die() {
  echo "screenshots.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --app) app=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --lab-kernel) lab_kernel=$2; shift 2 ;;
    --lab-slot) lab_slot=$2; shift 2 ;;
    --lab-layers) lab_layers=$2; shift 2 ;;
    --install)
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
      shift ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "screenshots.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

for tool in Xvfb openbox xdotool xwininfo xwd import dbus-daemon /usr/bin/python3; do
  command -v "$tool" >/dev/null || die "$tool is missing (run with --install, or see --help)"
done
[ -x /usr/libexec/at-spi-bus-launcher ] || die "at-spi2-core is missing (run with --install)"
/usr/bin/python3 -c "import gi; gi.require_version('Atspi', '2.0')" 2>/dev/null ||
  die "python3-gi / gir1.2-atspi-2.0 are missing (run with --install)"
[ -x "$app" ] || die "no app at $app (build it: bash scripts/build.sh, or pass --app PATH)"
[ -f "$model" ] || die "no model at $model (--model F)"
[ -f "$image" ] || die "no image at $image (--image IMG)"
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a whole number of seconds, not '$timeout_s'"
lab_args=()
if [ -n "$lab_kernel" ]; then
  [ -f "$lab_kernel" ] || die "no kernel at $lab_kernel (--lab-kernel F.cu)"
  lab_args=(--lab-slot "$lab_slot" --lab-kernel "$(cd "$(dirname "$lab_kernel")" && pwd)/$(basename "$lab_kernel")")
  [ -z "$lab_layers" ] || lab_args+=(--lab-layers "$lab_layers")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
image_name=$(basename "$image")

# The steps. One line each: "NAME | ACTION; ACTION ...". After the actions the script waits until the screen
# is still and saves OUT/session-WxH-NAME.png (a NAME of "-" saves nothing). Actions (functions below):
#   key KEYS...               xdotool key, e.g. "key ctrl+2", "key alt+r Return"
#   tab NAME                  click the tab called NAME (as its label reads)
#   set_field NAME VALUE      click the form field labelled NAME, select its text, type VALUE
#   retype VALUE              replace the text of the focused field, then Tab (after set_field: the next box)
#   choose NAME ITEM          open the combo box labelled NAME with the keyboard and pick ITEM
#   click ROLE NAME           click a widget, e.g. "click 'push button' Run"
#   ctrl_click ROLE NAME      the same with Ctrl held (adds a table row to the selection)
#   run_wait                  wait until the run that was just started has finished (fails if it failed)
#   wait_title TEXT           wait until the window title contains TEXT
#   scroll_to ROLE NAME       wheel-scroll until the widget is inside its scroll area's viewport
#   lab_wait WORDS            wait until the Kernel lab's job has ended; fail unless its status has WORDS
#   lab_type_error            put the cursor at the end of the lab's editor and type a line that cannot compile
STEPS=(
  "classify          | wait_title '$image_name'"
  "-                 | tab Timings"
  "run-batch1        | key F5; run_wait"
  "run-batch2        | set_field Batch 2; click 'push button' Run; run_wait"
  "run-random-160    | choose Input 'random tensor (seed 1)'; set_field Batch 1; set_field 'Input size' 160; retype 160; key alt+r r; run_wait"
  "topology          | tab Topology"
  "timings           | tab Timings"
  "diffs             | tab Diffs; click 'push button' 'Compute diff'; run_wait"
  "runs-compare      | click 'table cell' 'run 1'; ctrl_click 'table cell' 'run 2'; click 'push button' 'Compare two'"
  "graph             | tab Graph"
  "roofline          | tab 'Roofline & memory'"
  "sweep             | tab Sweep"
  "accuracy          | tab Accuracy"
  "timeline          | tab Timeline"
)
if [ -n "$lab_kernel" ]; then
  STEPS+=(
    "lab-run           | tab 'Kernel lab'; click 'push button' 'Run kernel'; lab_wait 'passed'"
    "lab-compile-error | lab_type_error; key ctrl+b; lab_wait 'compile error'"
  )
fi

# ---- the accessibility helper: reads the app's widget tree (never acts on it) ----
atspi_py=$(mktemp /tmp/mnv2-screens-atspi.XXXXXX.py)
cat > "$atspi_py" <<'PY'
import re, sys, time
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi

S = Atspi.StateType

def app():
    d = Atspi.get_desktop(0)
    for i in range(d.get_child_count()):
        a = d.get_child_at_index(i)
        if a is not None and a.get_name() == "mnv2-profiler":
            return a
    return None

def walk(a, parents=()):
    yield a, parents
    try:
        n = a.get_child_count()
    except Exception:
        return
    for i in range(n):
        c = a.get_child_at_index(i)
        if c is not None:
            yield from walk(c, parents + (a,))

def rect(a):
    e = a.get_extents(Atspi.CoordType.SCREEN)
    return e.x, e.y, e.width, e.height

def visible_rect(a, parents):
    # The part of the widget inside every ancestor (a scroll area's viewport clips its content).
    x0, y0, w, h = rect(a)
    x1, y1 = x0 + w, y0 + h
    for p in parents:
        px, py, pw, ph = rect(p)
        if pw <= 0 or ph <= 0 or p.get_role() == Atspi.Role.APPLICATION:
            continue
        x0, y0, x1, y1 = max(x0, px), max(y0, py), min(x1, px + pw), min(y1, py + ph)
    return x0, y0, x1 - x0, y1 - y0

def clipper(a, parents):
    # The innermost ancestor that cuts the widget (a scroll area's viewport), or the widget: "x y w h".
    x0, y0, w, h = rect(a)
    for p in parents:  # innermost first
        px, py, pw, ph = rect(p)
        if pw <= 0 or ph <= 0 or p.get_role() == Atspi.Role.APPLICATION:
            continue
        if x0 < px or y0 < py or x0 + w > px + pw or y0 + h > py + ph:
            return px, py, pw, ph
    return x0, y0, w, h

def find(role, name):
    a = app()
    if a is None:
        return None
    label_for = None
    for node, parents in walk(a):
        try:
            st = node.get_state_set()
            if not st.contains(S.SHOWING) or node.get_role_name() != role:
                continue
            if node.get_name() == name:
                return node, parents
        except Exception:
            continue
    return None

def main():
    cmd = sys.argv[1]
    if cmd == "ready":  # the app's window is in the tree
        a = app()
        sys.exit(0 if a is not None and a.get_child_count() > 0 else 1)
    elif cmd == "find":  # ROLE NAME -> "x y w h vx vy vw vh focused"
        r = find(sys.argv[2], sys.argv[3])
        if r is None:
            sys.exit(1)
        node, parents = r
        st = node.get_state_set()
        print(*rect(node), *visible_rect(node, parents), int(st.contains(S.FOCUSED)), int(st.contains(S.ENABLED)),
              *clipper(node, parents))
    elif cmd == "field":  # LABEL -> the field the form label names: "find" output for it
        label = sys.argv[2]
        a = app()
        # Qt names a form field after its label (the label's buddy); a size row is two spin boxes, unnamed,
        # on the label's line: take the first editable widget to the right of the label on its line.
        lab = None
        for node, parents in walk(a):
            try:
                if node.get_role_name() == "label" and node.get_name() == label and node.get_state_set().contains(S.SHOWING):
                    lab = rect(node)
                    break
            except Exception:
                continue
        best = None
        for node, parents in walk(a):
            try:
                role = node.get_role_name()
                if role not in ("spin button", "text", "combo box") or not node.get_state_set().contains(S.SHOWING):
                    continue
                x, y, w, h = rect(node)
                if node.get_name() == label:
                    best = (node, parents)
                    break
                if lab and w > 0 and abs((y + h / 2) - (lab[1] + lab[3] / 2)) < max(h, lab[3]) / 2 and x > lab[0]:
                    if best is None or x < rect(best[0])[0]:
                        best = (node, parents)
            except Exception:
                continue
        if best is None:
            sys.exit(1)
        node, parents = best
        st = node.get_state_set()
        print(*rect(node), *visible_rect(node, parents), int(st.contains(S.FOCUSED)), int(st.contains(S.ENABLED)),
              *clipper(node, parents))
    elif cmd == "run-state":  # -> "enabled|disabled <status text>" of the Run button and the run status line
        a = app()
        run, status = None, ""
        nodes = list(walk(a))
        for i, (node, parents) in enumerate(nodes):
            try:
                if node.get_role_name() == "push button" and node.get_name() == "Run" and run is None:
                    run = node.get_state_set().contains(S.ENABLED)
                if node.get_role_name() == "progress bar" and not status:
                    # the status line is the label laid out right under the run progress bar
                    px, py, pw, ph = rect(node)
                    for other, _ in nodes:
                        if other.get_role_name() == "label":
                            x, y, w, h = rect(other)
                            if x == px and py + ph <= y <= py + ph + 12:
                                status = other.get_name() or ""
                                break
            except Exception:
                continue
        if run is None:
            sys.exit(1)
        print("enabled" if run else "disabled", status.replace("\n", " "))
    elif cmd == "lab-state":  # -> "busy|idle <status>" of the Kernel lab (its Cancel button and status line)
        busy, status = None, None
        for node, parents in walk(app()):
            try:
                if node.get_role_name() == "push button" and node.get_name() == "Cancel kernel job":
                    busy = node.get_state_set().contains(S.ENABLED)
                elif node.get_role_name() == "label" and node.get_name() == "Kernel lab status":
                    status = node.get_description() or ""
            except Exception:
                continue
        if busy is None or status is None:
            sys.exit(1)
        print("busy" if busy else "idle", status.replace("\n", " "))
    elif cmd == "dialogs":  # top-level windows other than the main one: "title: text"
        a = app()
        for i in range(a.get_child_count()):
            w = a.get_child_at_index(i)
            if w is None or w.get_name().startswith("mnv2-profiler"):
                continue
            if not w.get_state_set().contains(S.SHOWING):
                continue
            texts = [n.get_name() for n, _ in walk(w) if n.get_role_name() == "label" and n.get_name()]
            print(w.get_name() + ": " + " ".join(texts).replace("\n", " "))
    else:
        sys.exit(2)

main()
PY

# ---- processes, cleaned up whatever happens ----
pids=()
tmp=$(mktemp -d /tmp/mnv2-screens.XXXXXX)
cleanup() {
  local p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'cleanup; rm -rf "$tmp" "$atspi_py"' EXIT
trap 'exit 130' INT TERM

atspi() { /usr/bin/python3 "$atspi_py" "$@"; }
atspi_ready() { atspi ready 2>/dev/null; }  # until the bus is up the library complains on stderr

# Polls CONDITION (a command) every 0.25 s until it succeeds; after --timeout seconds fails with WHAT.
wait_for() {
  local what=$1
  shift
  local deadline=$((SECONDS + timeout_s))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${timeout_s}s waiting for $what (step '$step')"
    app_alive
    sleep 0.25
  done
}

app_alive() {
  kill -0 "$app_pid" 2>/dev/null && return 0
  echo "--- app output:" >&2
  tail -20 "$tmp/app.log" >&2 || true
  die "the app exited during step '$step'"
}

check_dialogs() {
  local d
  d=$(atspi dialogs 2>/dev/null || true)
  [ -z "$d" ] || die "the app shows a dialog during step '$step': $d"
}

title_has() { xdotool getwindowname "$win" 2>/dev/null | grep -qF -- "$1"; }
wait_title() { wait_for "the window title to contain '$1'" title_has "$1"; }

# Waits until the screen has not changed for a second (charts replotted, layouts done). A blinking text
# cursor keeps changing a few pixels forever: changes under 100 pixels count as still.
settle() {
  local same=0 diff deadline=$((SECONDS + timeout_s))
  xwd -root -silent >"$tmp/prev.xwd"
  while [ "$same" -lt 4 ]; do
    [ "$SECONDS" -lt "$deadline" ] || die "the screen never settled (step '$step')"
    sleep 0.25
    xwd -root -silent >"$tmp/now.xwd"
    diff=$(compare -metric AE "$tmp/prev.xwd" "$tmp/now.xwd" null: 2>&1 || true)
    diff=$(awk '{ printf "%d", $1 }' <<<"$diff")  # some ImageMagick versions print 1.2e+03
    if [[ "$diff" =~ ^[0-9]+$ ]] && [ "$diff" -lt 100 ]; then same=$((same + 1)); else same=0; fi
    mv "$tmp/now.xwd" "$tmp/prev.xwd"
  done
}

key() { xdotool key --delay 80 "$@"; }

pointer_away() { xdotool mousemove "$((screen_w - 2))" "$((screen_h - 2))"; }

click_at() {  # X Y: a real click, then the pointer out of the way (no tooltip in the picture)
  xdotool mousemove "$1" "$2" sleep 0.15 click 1
  sleep 0.2
  pointer_away
}

# Brings a widget into its scroll area's viewport with the mouse wheel. $1: "find"/"field", then its args.
located=()
locate() {
  local r
  r=$(atspi "$@") || die "no widget '${*:2}' on screen (step '$step')"
  read -r -a located <<<"$r"
}
scroll_into_view() {
  local tries=0
  locate "$@"
  # located: x y w h vx vy vw vh focused enabled, then the clipping scroll viewport: cx cy cw ch
  while [ "${located[7]}" -lt "${located[3]}" ] || [ "${located[6]}" -lt "${located[2]}" ]; do
    [ "$tries" -lt 40 ] || die "cannot scroll '${*:2}' into view (step '$step')"
    # Wheel over the viewport's left margin (the form's labels, which pass the wheel to the scroll area: over a
    # field's column a combo box or spin box under the pointer would take the wheel and change its value), half way
    # down, towards the widget.
    local wx=$((located[10] + 6)) wy=$((located[11] + located[13] / 2))
    local button=5
    [ "${located[1]}" -lt "${located[11]}" ] && button=4  # above the viewport: scroll up
    xdotool mousemove "$wx" "$wy" click "$button"
    sleep 0.2
    tries=$((tries + 1))
    locate "$@"
  done
}
scroll_to() { scroll_into_view find "$1" "$2"; }

click() {  # ROLE NAME
  scroll_into_view find "$1" "$2"
  [ "${located[9]}" = 1 ] || die "'$2' ($1) is disabled (step '$step')"
  click_at "$((located[0] + located[2] / 2))" "$((located[1] + located[3] / 2))"
}

ctrl_click() {  # ROLE NAME
  scroll_into_view find "$1" "$2"
  xdotool mousemove "$((located[0] + located[2] / 2))" "$((located[1] + located[3] / 2))" sleep 0.15 \
    keydown ctrl click 1 keyup ctrl
  sleep 0.2
  pointer_away
}

tab() { click "page tab" "$1"; }

set_field() {  # LABEL VALUE: click into the field (left part: not on a spin box's arrows), replace its text
  scroll_into_view field "$1"
  [ "${located[9]}" = 1 ] || die "the field '$1' is disabled (step '$step')"
  click_at "$((located[0] + located[2] / 3))" "$((located[1] + located[3] / 2))"
  key ctrl+a
  xdotool type --delay 60 -- "$2"
  key Tab
}

retype() {  # VALUE: replace the text of the focused field (e.g. the second box of a size row), then Tab
  key ctrl+a
  xdotool type --delay 60 -- "$1"
  key Tab
}

choose() {  # LABEL ITEM: focus the combo box with a click, then keyboard: Home, Down until ITEM shows
  scroll_into_view field "$1"
  [ "${located[9]}" = 1 ] || die "the combo box '$1' is disabled (step '$step')"
  click_at "$((located[0] + located[2] / 2))" "$((located[1] + located[3] / 2))"
  key Escape  # a click opens the list; the keys below work on the closed box
  key Home
  local i
  for ((i = 0; i < 30; i++)); do
    if atspi find "combo box" "$2" >/dev/null; then return 0; fi
    key Down
    sleep 0.1
  done
  die "the combo box '$1' has no item '$2' (step '$step')"
}

run_before=""
lab_before=""
# Waits for the Kernel lab's job just started: idle again (its Cancel button disabled) with a status line other
# than before the step (each job's status names its version: "v2 run — passed: ..."), then checks the words.
lab_wait() {
  local state status deadline=$((SECONDS + timeout_s))
  while :; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${timeout_s}s waiting for the lab job (step '$step')"
    app_alive
    state=$(atspi lab-state 2>/dev/null) || { sleep 0.25; continue; }
    status=${state#* }
    if [ "${state%% *}" = idle ] && [ "$status" != "$lab_before" ] && [[ "$status" != *… ]]; then
      break
    fi
    sleep 0.25
  done
  echo "  lab: $status"
  [[ "$status" == *"$1"* ]] || die "the lab job ended '$status', not '$1' (step '$step')"
  check_dialogs
}
lab_type_error() {
  click text 'Kernel source'
  key ctrl+End
  # A name NVRTC cannot know: the compile error and its marked line are what the picture shows.
  xdotool type --delay 30 -- "
__device__ float lab_typo() { return undefined_scale * 2.0f; }"
}
# Waits for the run (or diff) just started: the Run button goes disabled, or the status line changes, and
# then the Run button is enabled again with a status line that says how it went.
run_wait() {
  local state status busy=0 deadline=$((SECONDS + timeout_s))
  while :; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${timeout_s}s waiting for the run (step '$step')"
    app_alive
    state=$(atspi run-state 2>/dev/null) || { sleep 0.25; continue; }
    status=${state#* }
    if [ "${state%% *}" = disabled ]; then
      busy=1
    elif { [ "$busy" = 1 ] || [ "$status" != "$run_before" ]; } && [[ "$status" != *… ]]; then
      break
    fi
    sleep 0.25
  done
  case "$status" in
    failed*|cancelled*) die "the run ended '$status' (step '$step')" ;;
  esac
  echo "  run: $status"
  check_dialogs
}
remember_run_state() {
  local s
  s=$(atspi run-state 2>/dev/null) || s="? "
  run_before=${s#* }
  s=$(atspi lab-state 2>/dev/null) || s="? "
  lab_before=${s#* }
}

maximize() {
  key super+Up
  local i
  for ((i = 0; i < 40; i++)); do
    read -r w h < <(xdotool getwindowgeometry "$win" | sed -n 's/.*Geometry: \([0-9]*\)x\([0-9]*\).*/\1 \2/p')
    [ "$w" -ge $((screen_w - 20)) ] && [ "$h" -ge $((screen_h - 60)) ] && return 0
    sleep 0.25
  done
  die "the window manager did not maximize the window (${w}x${h} on ${screen_w}x${screen_h})"
}

session() {  # WxH
  screen_w=${1%x*}
  screen_h=${1#*x}
  local display n=90
  while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
  display=":$n"
  echo "== ${screen_w}x${screen_h} on $display"
  Xvfb "$display" -screen 0 "${screen_w}x${screen_h}x24" -nolisten tcp -noreset >"$tmp/xvfb.log" 2>&1 &
  pids+=($!)
  export DISPLAY=$display
  for ((n = 0; n < 100; n++)); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
  xdpyinfo >/dev/null 2>&1 || die "Xvfb did not start: $(cat "$tmp/xvfb.log")"

  # A private session bus and the accessibility bus on it.
  rm -f "$tmp/bus"  # not the address of the previous size's bus
  dbus-daemon --session --nofork --print-address=3 3>"$tmp/bus" >/dev/null 2>&1 &
  pids+=($!)
  for ((n = 0; n < 50; n++)); do [ -s "$tmp/bus" ] && break; sleep 0.1; done
  [ -s "$tmp/bus" ] || die "the D-Bus session bus did not start"
  DBUS_SESSION_BUS_ADDRESS=$(head -1 "$tmp/bus")
  export DBUS_SESSION_BUS_ADDRESS
  /usr/libexec/at-spi-bus-launcher --launch-immediately >"$tmp/atspi.log" 2>&1 &
  pids+=($!)

  # openbox with its stock look and one key binding added: Super+Up maximizes.
  sed 's|<keyboard>|<keyboard><keybind key="W-Up"><action name="Maximize"/></keybind>|' \
    /etc/xdg/openbox/rc.xml >"$tmp/rc.xml"
  openbox --config-file "$tmp/rc.xml" >"$tmp/openbox.log" 2>&1 &
  pids+=($!)
  sleep 0.5

  # The app as a user starts it (its saved settings left alone: a throw-away home).
  mkdir -p "$tmp/home"
  HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 QT_QPA_PLATFORM=xcb \
    "$app" --model "$model" --image "$image" "${lab_args[@]}" >"$tmp/app.log" 2>&1 &
  app_pid=$!
  pids+=("$app_pid")
  step=start
  win=$(timeout "$timeout_s" xdotool search --sync --onlyvisible --pid "$app_pid" --name '^mnv2-profiler' | head -1) ||
    { app_alive; die "no app window within ${timeout_s}s"; }
  xdotool windowactivate --sync "$win" 2>/dev/null || true
  wait_for "the app on the accessibility bus" atspi_ready
  maximize
  pointer_away

  local line name actions
  for line in "${STEPS[@]}"; do
    name=$(echo "${line%%|*}" | xargs)
    actions=${line#*|}
    step=$name
    echo "-- $name:$actions"
    remember_run_state
    eval "$actions"
    app_alive
    check_dialogs
    if [ "$name" != "-" ] && { [ -z "$only" ] || [[ "$name" == *"$only"* ]]; }; then
      pointer_away
      settle
      local file="$out/session-${screen_w}x${screen_h}-$name.png"
      import -window root "$tmp/shot.png"
      if command -v pngquant >/dev/null; then
        pngquant --force --quality 60-90 --output "$file" "$tmp/shot.png" || cp "$tmp/shot.png" "$file"
      else
        cp "$tmp/shot.png" "$file"
      fi
      echo "   $file ($(($(stat -c %s "$file") / 1024)) KB)"
    fi
  done

  xdotool key --window "$win" ctrl+q 2>/dev/null || true
  for ((n = 0; n < 40; n++)); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.25; done
  cleanup
  unset DBUS_SESSION_BUS_ADDRESS
}

IFS=, read -r -a size_list <<<"$sizes"
for s in "${size_list[@]}"; do
  [[ "$s" =~ ^[1-9][0-9]{2,4}x[1-9][0-9]{2,4}$ ]] || die "--sizes wants WxH,WxH (e.g. 1280x720), not '$s'"
done
for s in "${size_list[@]}"; do session "$s"; done
echo "done: $out"
