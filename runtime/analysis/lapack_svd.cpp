#include "runtime/analysis/lapack_svd.h"

#include <limits>
#include <stdexcept>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

#ifdef LMKIT_HAVE_LAPACKE
#include <lapacke.h>
#endif

namespace lmkit::analysis {
namespace {

#ifdef LMKIT_HAVE_LAPACKE
// The C interface of ?gesdd for both precisions, so one driver serves float and double.
lapack_int gesdd(lapack_int m, lapack_int n, float* a, lapack_int lda, float* s, float* work, lapack_int lwork,
                 lapack_int* iwork) {
  return LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, 'N', m, n, a, lda, s, nullptr, 1, nullptr, 1, work, lwork, iwork);
}
lapack_int gesdd(lapack_int m, lapack_int n, double* a, lapack_int lda, double* s, double* work, lapack_int lwork,
                 lapack_int* iwork) {
  return LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', m, n, a, lda, s, nullptr, 1, nullptr, 1, work, lwork, iwork);
}

template <typename Real>
torch::Tensor values_only_svd(torch::Tensor& matrix) {
  // Row-major [rows, cols] is column-major [cols, rows] = Qᵀ with leading dimension cols.
  const auto m = static_cast<lapack_int>(matrix.size(1));
  const auto n = static_cast<lapack_int>(matrix.size(0));
  const lapack_int k = std::min(m, n);
  auto s = torch::empty({k}, matrix.options());
  Real size_query = 0;
  std::vector<lapack_int> iwork(8 * static_cast<std::size_t>(k));
  lapack_int info = gesdd(m, n, matrix.data_ptr<Real>(), m, s.data_ptr<Real>(), &size_query, -1, iwork.data());
  if (info != 0) throw std::runtime_error("gesdd's workspace query failed (info " + integer_text(info) + ")");
  // LAPACK reports the size as a floating-point number; round up, as it may be just below.
  const double wanted = static_cast<double>(size_query) + 1.0;
  if (wanted > static_cast<double>(std::numeric_limits<lapack_int>::max())) {
    throw UsageError("svd: gesdd wants a workspace beyond 32-bit LAPACK's reach");
  }
  const auto lwork = static_cast<lapack_int>(wanted);
  std::vector<Real> work(static_cast<std::size_t>(lwork));
  info = gesdd(m, n, matrix.data_ptr<Real>(), m, s.data_ptr<Real>(), work.data(), lwork, iwork.data());
  if (info > 0) {
    throw std::runtime_error("svd: LAPACK gesdd did not converge (info " + integer_text(info) +
                             "); the matrix may be badly scaled — try dtype float64");
  }
  if (info < 0) throw std::runtime_error("svd: LAPACK gesdd rejected argument " + integer_text(-info));
  return s;
}
#endif

}  // namespace

std::string destroying_svd_routine(torch::ScalarType dtype) {
#ifdef LMKIT_HAVE_LAPACKE
  return dtype == torch::kFloat64 ? "LAPACK dgesdd" : "LAPACK sgesdd";
#else
  (void)dtype;
  return "Torch linalg_svdvals";
#endif
}

torch::Tensor svdvals_destroying(torch::Tensor matrix) {
  if (matrix.dim() != 2) throw UsageError("svd needs a matrix, got size " + format_shape(matrix.sizes()));
  const auto dtype = matrix.scalar_type();
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64) {
    throw UsageError("svd: the matrix must be float32 or float64, got " + dtype_name(dtype));
  }
  if (!matrix.device().is_cpu()) throw UsageError("svd: the matrix must be in host memory (CPU)");
  if (matrix.numel() == 0) return torch::empty({0}, matrix.options());
  if (!torch::isfinite(matrix).all().item<bool>()) throw UsageError("svd: the matrix contains nan or inf");
#ifdef LMKIT_HAVE_LAPACKE
  const auto limit = static_cast<std::int64_t>(std::numeric_limits<lapack_int>::max());
  if (matrix.size(0) > limit || matrix.size(1) > limit) {
    throw UsageError("svd: a matrix of size " + format_shape(matrix.sizes()) + " exceeds LAPACK's 32-bit dimensions");
  }
  matrix = matrix.detach().contiguous();
  return dtype == torch::kFloat64 ? values_only_svd<double>(matrix) : values_only_svd<float>(matrix);
#else
  return torch::linalg_svdvals(matrix.detach());
#endif
}

}  // namespace lmkit::analysis
