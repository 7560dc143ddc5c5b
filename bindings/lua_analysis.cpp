#include "bindings/lua_analysis.h"

#include "bindings/lua_call.h"
#include "bindings/lua_tensor.h"
#include "runtime/analysis/matrix_rank.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::lua {
namespace {

torch::ScalarType opt_eps_dtype(lua_State* L, int position) {
  const auto name = opt_string(L, position);
  return name ? parse_dtype(*name) : torch::kFloat32;
}

int analysis_svdvals(lua_State* L) {
  auto& q = check_tensor(L, 1);
  Options options(L, 2, {"float64"});
  push_tensor(L, analysis::svdvals(q, options.boolean("float64").value_or(false)));
  return 1;
}

int analysis_press_rank(lua_State* L) {
  auto& sv = check_tensor(L, 1);
  const auto rows = check_integer(L, 2);
  const auto cols = check_integer(L, 3);
  lua_pushinteger(L, analysis::press_rank(sv, rows, cols, opt_eps_dtype(L, 4)));
  return 1;
}

int analysis_effective_rank(lua_State* L) {
  auto& sv = check_tensor(L, 1);
  lua_pushinteger(L, analysis::effective_rank(sv, check_number(L, 2)));
  return 1;
}

int analysis_rank_report(lua_State* L) {
  auto& q = check_tensor(L, 1);
  const auto report = analysis::rank_report(q, opt_eps_dtype(L, 2));
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, report.press);
  lua_setfield(L, -2, "press");
  lua_pushnumber(L, report.tolerance);
  lua_setfield(L, -2, "tolerance");
  lua_pushnumber(L, report.sigma_max);
  lua_setfield(L, -2, "sigma_max");
  lua_pushinteger(L, report.rows);
  lua_setfield(L, -2, "rows");
  lua_pushinteger(L, report.cols);
  lua_setfield(L, -2, "cols");
  lua_createtable(L, static_cast<int>(report.effective.size()), 0);
  int k = 0;
  for (const auto& [eps, rank] : report.effective) {
    lua_createtable(L, 0, 2);
    lua_pushnumber(L, eps);
    lua_setfield(L, -2, "eps");
    lua_pushinteger(L, rank);
    lua_setfield(L, -2, "rank");
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "effective");
  return 1;
}

const Function kFunctions[] = {
    {"svdvals", analysis_svdvals, "lmkit.analysis.svdvals(Q[, {float64=false}]) -> Tensor\nSingular values of a matrix, descending, in its own precision (float64 on request); LAPACK gesdd on CPU, cuSOLVER on GPU — never through QᵀQ."},
    {"press_rank", analysis_press_rank, "lmkit.analysis.press_rank(sv, rows, cols[, eps_dtype=\"float32\"]) -> integer\nNumber of singular values above 0.5·sqrt(rows+cols+1)·σ_max·eps(eps_dtype) (the thesis's rank; float32 eps as the reference computed it)."},
    {"effective_rank", analysis_effective_rank, "lmkit.analysis.effective_rank(sv, eps) -> integer\nSmallest k with Σ_{i≤k} σ_i² ≥ (1 − eps)·Σ σ_i²."},
    {"rank_report", analysis_rank_report, "lmkit.analysis.rank_report(Q[, eps_dtype=\"float32\"]) -> {press=, tolerance=, sigma_max=, rows=, cols=, effective={{eps=, rank=}, ...}}\nPress rank and the ε-effective ranks for ε = 1e-3, 1e-4, 1e-5."},
};

}  // namespace

void open_analysis(lua_State* L, int module_index) {
  lua_newtable(L);
  set_functions(L, -1, "lmkit.analysis", kFunctions);
  register_doc(L, -1, "lmkit.analysis", "lmkit.analysis — ranks and spectra of log-probability matrices.");
  lua_setfield(L, module_index, "analysis");
}

}  // namespace lmkit::lua
