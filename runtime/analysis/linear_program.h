// A linear program   maximize cᵀx   subject to   a_rᵀx ≤ u_r (one row each),  lo ≤ x ≤ hi,
// solved by GLPK's simplex method (Debian's libglpk). Rows can be added between solves and the next
// solve starts from the last basis with the dual simplex: added cuts leave that basis dual feasible,
// so a cutting-plane method re-solves in a few pivots instead of from scratch.
#pragma once
#include <memory>
#include <vector>

namespace lmkit::analysis {

class LinearProgram {
 public:
  enum class Status { kOptimal, kInfeasible, kUnbounded };

  // `columns` variables, each free (−∞, ∞) with objective coefficient 0 until set.
  explicit LinearProgram(int columns);
  ~LinearProgram();
  LinearProgram(const LinearProgram&) = delete;
  LinearProgram& operator=(const LinearProgram&) = delete;

  // 0-based columns; an infinite bound leaves that side open.
  void set_bounds(int column, double lower, double upper);
  void set_objective(int column, double coefficient);
  // coefficients: one per column (zeros are skipped).
  void add_row(const std::vector<double>& coefficients, double upper);

  // Throws std::runtime_error when GLPK gives up (a numerical failure), naming its code.
  Status solve();
  double objective() const;
  std::vector<double> solution() const;
  int rows() const;

 private:
  struct Problem;
  std::unique_ptr<Problem> problem_;
  int columns_;
};

}  // namespace lmkit::analysis
