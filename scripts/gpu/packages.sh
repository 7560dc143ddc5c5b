# Sourced (bash) by scripts/gpu/fetch_debs.sh, which fetches these Debian 12 packages, and by
# scripts/gpu/check_prefix_build.sh, which hides every file they install on the connected machine:
# one list for both, so that what is carried and what is proven carried cannot drift apart.
# shellcheck shell=bash disable=SC2034  # the arrays are read by the scripts that source this file

# lmkit's build and run dependencies besides Torch, as in scripts/setup.sh, with the runtime
# libraries that dpkg -x does not pull in by itself. Boost comes as headers only (Boost.Math is
# header-only), BLAS/LAPACK as OpenBLAS: LAPACKE_sgesdd on a logP matrix is hopeless on the
# reference BLAS.
lmkit_deps_packages=(
  liblua5.4-dev liblua5.4-0 lua5.4
  libfmt-dev libfmt9
  nlohmann-json3-dev
  libcli11-dev
  libxxhash-dev libxxhash0
  libglpk-dev libglpk40 libamd2 libcolamd2 libsuitesparseconfig5 libltdl7 libgmp10 zlib1g
  zlib1g-dev   # deflated .npz members; without it lmkit builds and refuses them by name
  libboost1.74-dev   # the Boost of libboost-math-dev, which scripts/setup.sh installs
  liblapacke-dev liblapacke libtmglib-dev libtmglib3
  libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
  libreadline-dev libreadline8 libncurses-dev libncurses6 libncursesw6 libtinfo6
  libgtest-dev libgmock-dev googletest
  time   # GNU time: scripts/bench.sh reads each program's peak RSS from it
)
# Debian's cmake needs curl, archive and their TLS/compression libraries; all of them are carried
# because the GPU machine's versions (if any) are unknown. fetch_debs.sh's closure check keeps this list honest.
lmkit_tools_packages=(
  cmake cmake-data ninja-build
  libarchive13 libcurl4 libexpat1 libjsoncpp25 librhash0 libuv1 zlib1g
  libacl1 libbz2-1.0 liblz4-1 liblzma5 libnettle8 libxml2 libicu72 libzstd1
  libbrotli1 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  libidn2-0 libunistring2 libldap-2.5-0 libsasl2-2 libnghttp2-14 libpsl5 librtmp1 libgnutls30
  libhogweed6 libgmp10 libp11-kit0 libffi8 libtasn1-6 libssh2-1 libssl3
)
