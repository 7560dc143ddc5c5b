// lmkit.analysis, language-model part: word similarity of embeddings (thesis Tables 5.2–5.4,
// Fig. 5.3) and next-word predictions for chosen contexts (Table 5.1).
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Adds its functions to the lmkit.analysis table made by open_analysis (call it after
// open_analysis, open_data and open_model).
void open_lm_analysis(lua_State* L, int module_index);

}  // namespace lmkit::lua
