# Installation layout and the Debian packages (CPack DEB, one package per component):
#   mnv2-profiler       the CLI, the desktop app, the engine with the CPU backend, the labels, the desktop entry
#                       and icon. Its dependencies are Debian's, from dpkg-shlibdeps. Needs no CUDA at all.
#   mnv2-profiler-cuda  the GPU plugin (cudnn and cuda backends, CUPTI and cudaEvent timing). NVIDIA's libraries
#                       are never bundled: it depends on NVIDIA's own package names (their CUDA repository for
#                       Debian/Ubuntu). Without them the programs still start and name what is missing.
# No weights are shipped: a model goes to ~/.local/share/mnv2-profiler/ or /usr/share/mnv2-profiler/
# (README, Install).
install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/mnv2-profiler.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT core)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/mnv2-profiler.png
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/256x256/apps COMPONENT core)
install(FILES ${PROJECT_SOURCE_DIR}/resources/imagenet_labels_1001.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mnv2-profiler COMPONENT core)
# The report formats' JSON Schemas (docs/REPORTS.md), for users who validate what mnv2 writes.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mnv2-profiler/schemas
        COMPONENT core FILES_MATCHING PATTERN "*.schema.json")
set(MNV2_DOCDIR ${CMAKE_INSTALL_DATADIR}/doc/mnv2-profiler)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${MNV2_DOCDIR} COMPONENT core)
install(FILES ${PROJECT_SOURCE_DIR}/docs/REPORTS.md DESTINATION ${MNV2_DOCDIR} COMPONENT core)
install(FILES ${PROJECT_SOURCE_DIR}/weights/README.md DESTINATION ${MNV2_DOCDIR} COMPONENT core
        RENAME weights-README.md)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${MNV2_DOCDIR} COMPONENT core RENAME copyright)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/mnv2-profiler-cuda
        COMPONENT cuda RENAME copyright)

set(CPACK_PACKAGE_NAME mnv2-profiler)
set(CPACK_PACKAGE_VENDOR "mnv2-profiler developers")
set(CPACK_PACKAGE_CONTACT "mnv2-profiler developers <mnv2-profiler@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Visual profiler for MobileNetV2 inference on NVIDIA GPUs and the CPU")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL core)
if(MNV2_WITH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/mnv2-profiler/mnv2-profiler")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps finds the engine library inside the package being built through the programs' RUNPATH.
set(CPACK_DEBIAN_CORE_PACKAGE_NAME mnv2-profiler)
set(CPACK_DEBIAN_CORE_DESCRIPTION
    "Visual profiler for MobileNetV2 inference on NVIDIA GPUs and the CPU
 mnv2 (command line) and mnv2-profiler (Qt 6 desktop app) import a MobileNetV2 ONNX model, classify
 photographs, time every layer (host clock, cudaEvents, CUPTI), compare backends layer by layer and write
 CSV, JSON and Perfetto reports. This package runs the CPU backend; install mnv2-profiler-cuda for the
 cuDNN and custom-CUDA-kernel backends. No model weights are included.")
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME mnv2-profiler-cuda)
set(CPACK_DEBIAN_CUDA_DESCRIPTION
    "GPU backends for mnv2-profiler (cuDNN, custom CUDA kernels, CUPTI)
 The plugin the mnv2-profiler programs load at run time for the cudnn and cuda backends and GPU timing.
 It carries code for the CUDA architectures ${MNV2_CUDA_ARCHITECTURES_DEFINE}. NVIDIA's CUDA runtime, cuDNN, cuBLAS and
 CUPTI come from NVIDIA's packages (NVRTC too, for the kernel lab, which also wants the toolkit's headers);
 the NVIDIA driver 580 or newer must be installed.")
# NVIDIA's package names in their CUDA repository for Debian and Ubuntu (CUDA 13.0, cuDNN 9 for CUDA 13).
set(MNV2_CUDA_PACKAGE_MAJOR_MINOR "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS
    "mnv2-profiler (= ${PROJECT_VERSION}), cuda-cudart-${MNV2_CUDA_PACKAGE_MAJOR_MINOR}, libcublas-${MNV2_CUDA_PACKAGE_MAJOR_MINOR}, cuda-cupti-${MNV2_CUDA_PACKAGE_MAJOR_MINOR}, cuda-nvrtc-${MNV2_CUDA_PACKAGE_MAJOR_MINOR}, libcudnn9-cuda-${CUDAToolkit_VERSION_MAJOR}")
# The kernel lab compiles user kernels that include cuda_fp16.h and friends: the toolkit's headers.
set(CPACK_DEBIAN_CUDA_PACKAGE_RECOMMENDS "cuda-cudart-dev-${MNV2_CUDA_PACKAGE_MAJOR_MINOR}")
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION science)
include(CPack)
