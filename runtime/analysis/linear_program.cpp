#include "runtime/analysis/linear_program.h"

#include <glpk.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/core/number_text.h"

namespace lmkit::analysis {

struct LinearProgram::Problem {
  glp_prob* lp = glp_create_prob();
  bool solved_once = false;
  ~Problem() { glp_delete_prob(lp); }
};

LinearProgram::LinearProgram(int columns) : problem_(std::make_unique<Problem>()), columns_(columns) {
  if (columns < 1) throw std::invalid_argument("LinearProgram: needs at least one column, got " + integer_text(columns));
  glp_set_obj_dir(problem_->lp, GLP_MAX);
  glp_add_cols(problem_->lp, columns);
  for (int c = 1; c <= columns; ++c) glp_set_col_bnds(problem_->lp, c, GLP_FR, 0.0, 0.0);
}

LinearProgram::~LinearProgram() = default;

void LinearProgram::set_bounds(int column, double lower, double upper) {
  const bool has_lower = std::isfinite(lower), has_upper = std::isfinite(upper);
  int type = GLP_FR;
  if (has_lower && has_upper) type = lower == upper ? GLP_FX : GLP_DB;
  else if (has_lower) type = GLP_LO;
  else if (has_upper) type = GLP_UP;
  glp_set_col_bnds(problem_->lp, column + 1, type, has_lower ? lower : 0.0, has_upper ? upper : 0.0);
}

void LinearProgram::set_objective(int column, double coefficient) {
  glp_set_obj_coef(problem_->lp, column + 1, coefficient);
}

void LinearProgram::add_row(const std::vector<double>& coefficients, double upper) {
  if (static_cast<int>(coefficients.size()) != columns_) {
    throw std::invalid_argument("LinearProgram: a row needs " + integer_text(columns_) + " coefficients, got " +
                                integer_text(coefficients.size()));
  }
  // GLPK's arrays are 1-based: entry 0 is unused.
  std::vector<int> index(1, 0);
  std::vector<double> value(1, 0.0);
  for (int c = 0; c < columns_; ++c) {
    if (coefficients[c] != 0.0) {
      index.push_back(c + 1);
      value.push_back(coefficients[c]);
    }
  }
  const int row = glp_add_rows(problem_->lp, 1);
  glp_set_row_bnds(problem_->lp, row, GLP_UP, 0.0, upper);
  glp_set_mat_row(problem_->lp, row, static_cast<int>(index.size()) - 1, index.data(), value.data());
}

LinearProgram::Status LinearProgram::solve() {
  glp_smcp parameters;
  glp_init_smcp(&parameters);
  parameters.msg_lev = GLP_MSG_OFF;
  // Dual simplex from the previous basis: rows added since keep it dual feasible.
  parameters.meth = problem_->solved_once ? GLP_DUALP : GLP_PRIMAL;
  int code = glp_simplex(problem_->lp, &parameters);
  if (code == GLP_EFAIL || code == GLP_ESING || code == GLP_ECOND) {
    // A basis gone bad numerically: start again from the standard one, by the primal method.
    glp_std_basis(problem_->lp);
    parameters.meth = GLP_PRIMAL;
    code = glp_simplex(problem_->lp, &parameters);
  }
  if (code != 0) throw std::runtime_error("GLPK's simplex failed (glp_simplex returned code " + integer_text(code) + ")");
  problem_->solved_once = true;
  switch (glp_get_status(problem_->lp)) {
    case GLP_OPT: return Status::kOptimal;
    case GLP_NOFEAS: return Status::kInfeasible;
    case GLP_UNBND: return Status::kUnbounded;
    default:
      throw std::runtime_error("GLPK's simplex ended without a verdict (status " +
                               integer_text(glp_get_status(problem_->lp)) + ")");
  }
}

double LinearProgram::objective() const { return glp_get_obj_val(problem_->lp); }

std::vector<double> LinearProgram::solution() const {
  std::vector<double> x(columns_);
  for (int c = 0; c < columns_; ++c) x[c] = glp_get_col_prim(problem_->lp, c + 1);
  return x;
}

int LinearProgram::rows() const { return glp_get_num_rows(problem_->lp); }

}  // namespace lmkit::analysis
