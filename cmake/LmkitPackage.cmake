# `cpack -G DEB` in the build folder makes lmkit_<version>_amd64.deb: the executable, the Lua module,
# the recipes and the docs under /usr, its dependencies on Debian's libraries (libtorch, Lua, fmt,
# OpenBLAS/LAPACKE, readline, ...) computed by dpkg-shlibdeps from what the binaries link.
set(CPACK_PACKAGE_NAME lmkit)
set(CPACK_PACKAGE_VENDOR "the lmkit authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Softmax-bottleneck research toolkit for word-level language models (C++/LibTorch, Lua)")
set(CPACK_PACKAGE_DESCRIPTION
    "lmkit reproduces the experiments of the softmax-bottleneck literature (AWD-LSTM with Softmax, SigSoftmax, "
    "GSS, LMS-PLIF, MoS, MoC, AdvSoft heads; NT-/ET-ASGD; logP matrix ranks) with one Lua recipe per table, "
    "a REPL, and batch runs on Slurm.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "lmkit authors <lmkit@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Not linked, but used: plots go through gnuplot; `require "lmkit"` runs in the stock interpreter.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, lua5.4")
# Debug information stays in the build: the package ships stripped binaries (141 MB → a few MB).
set(CPACK_STRIP_FILES ON)
include(CPack)
