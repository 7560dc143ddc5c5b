// Singular values of a large dense matrix that the caller hands over, by LAPACK's values-only
// divide-and-conquer SVD (?gesdd with jobz = 'N'), called directly through LAPACKE.
//
// Why not torch::linalg_svdvals: Torch hands LAPACK a column-major copy of a row-major tensor, so a
// logP matrix of PTB's test split (82,430 × 10,000 float32, 3.3 GB) would need twice its size.
// A row-major m × n matrix is, byte for byte, the column-major n × m matrix Qᵀ, which has the same
// singular values: gesdd runs on the tensor's own memory, with no copy and an O(min(m, n)·block)
// workspace. The tensor is overwritten (gesdd destroys its input), so it is taken by value: pass a
// tensor nobody else needs (std::move), or a clone.
#pragma once
#include <string>

#include "runtime/core/torch.h"

namespace lmkit::analysis {

// Descending singular values of a 2-D float32/float64 CPU tensor, in its dtype. The tensor's
// contents are destroyed when it is contiguous (else a contiguous copy is made and destroyed).
// UsageError for a non-finite entry, another dtype or device, or a dimension beyond LAPACK's
// 32-bit integers; std::runtime_error when gesdd does not converge.
torch::Tensor svdvals_destroying(torch::Tensor matrix);

// What svdvals_destroying runs on this build, for reports: "LAPACK sgesdd" (float32) or
// "LAPACK dgesdd", or "Torch linalg_svdvals" where lmkit was built without LAPACKE.
std::string destroying_svd_routine(torch::ScalarType dtype);

}  // namespace lmkit::analysis
