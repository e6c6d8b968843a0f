# Finds the Qt 6 build of QCustomPlot (Debian: libqcustomplot-dev + libqcustomplot2.1-qt6) and defines
# the imported target QCustomPlotQt6::QCustomPlotQt6.
#
# Debian installs two libraries beside one header: libQCustomPlot.so is built against Qt 5 and
# libQCustomPlotQt6.so against Qt 6. Linking the Qt 5 one into a Qt 6 program loads both Qt versions and
# crashes at start-up, so this module only ever accepts a library whose name ends in "Qt6". The package's
# own QCustomPlotQt6Config.cmake gives a target without include directories or Qt dependencies; this
# module gives a complete one (as KDAB/hotspot keeps QCustomPlot behind its own find module).
#
# Input:  QCustomPlotQt6_ROOT (or CMAKE_PREFIX_PATH) to look elsewhere first.
# Output: QCustomPlotQt6_FOUND, QCustomPlotQt6_INCLUDE_DIR, QCustomPlotQt6_LIBRARY, QCustomPlotQt6_VERSION,
#         target QCustomPlotQt6::QCustomPlotQt6 (links Qt6::Widgets and Qt6::PrintSupport).

find_path(QCustomPlotQt6_INCLUDE_DIR NAMES qcustomplot.h PATH_SUFFIXES qcustomplot)
# Only the Qt 6 names: never "QCustomPlot"/"qcustomplot", which are the Qt 5 builds.
find_library(QCustomPlotQt6_LIBRARY NAMES QCustomPlotQt6 qcustomplot-qt6)

if(QCustomPlotQt6_INCLUDE_DIR AND EXISTS "${QCustomPlotQt6_INCLUDE_DIR}/qcustomplot.h")
  file(STRINGS "${QCustomPlotQt6_INCLUDE_DIR}/qcustomplot.h" _qcp_version_line
       REGEX "^#define QCUSTOMPLOT_VERSION_STR \"[^\"]+\"")
  string(REGEX REPLACE "^#define QCUSTOMPLOT_VERSION_STR \"([^\"]+)\".*" "\\1" QCustomPlotQt6_VERSION
                       "${_qcp_version_line}")
  unset(_qcp_version_line)
endif()

# A library found through a cache override must still be the Qt 6 build.
if(QCustomPlotQt6_LIBRARY)
  get_filename_component(_qcp_name "${QCustomPlotQt6_LIBRARY}" NAME_WE)
  if(NOT _qcp_name MATCHES "[Qq]t6$")
    message(WARNING "QCustomPlotQt6_LIBRARY=${QCustomPlotQt6_LIBRARY} is not a Qt 6 build of QCustomPlot; ignored")
    set(QCustomPlotQt6_LIBRARY "QCustomPlotQt6_LIBRARY-NOTFOUND" CACHE FILEPATH "" FORCE)
  endif()
  unset(_qcp_name)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(QCustomPlotQt6
  REQUIRED_VARS QCustomPlotQt6_LIBRARY QCustomPlotQt6_INCLUDE_DIR
  VERSION_VAR QCustomPlotQt6_VERSION)

if(QCustomPlotQt6_FOUND AND NOT TARGET QCustomPlotQt6::QCustomPlotQt6)
  find_package(Qt6 REQUIRED COMPONENTS Widgets PrintSupport)
  add_library(QCustomPlotQt6::QCustomPlotQt6 SHARED IMPORTED)
  set_target_properties(QCustomPlotQt6::QCustomPlotQt6 PROPERTIES
    IMPORTED_LOCATION "${QCustomPlotQt6_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${QCustomPlotQt6_INCLUDE_DIR}"
    # The header marks its classes Q_DECL_IMPORT only with this define.
    INTERFACE_COMPILE_DEFINITIONS QCUSTOMPLOT_USE_LIBRARY
    INTERFACE_LINK_LIBRARIES "Qt6::Widgets;Qt6::PrintSupport")
endif()

mark_as_advanced(QCustomPlotQt6_INCLUDE_DIR QCustomPlotQt6_LIBRARY)
