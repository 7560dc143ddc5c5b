-- lmkit.report: result tables rendered as Markdown, CSV and LaTeX (booktabs), with the paper's
-- numbers beside ours. See docs/reports-and-plots.md.
--
--   local t = lmkit.report.table{title = "Test perplexity", columns = {
--     {key = "head", label = "Head"},
--     {key = "ppl", label = "Test ppl", digits = 2, paper = {58.8, 57.3}}}}
--   t:add{head = "Softmax", ppl = 58.61}; t:add{head = "MoS", ppl = 56.02}
--   t:print(); t:save("results/table.tex")
return function(lmkit)
  local report = {}

  local TABLE_OPTIONS = {columns = true, rows = true, title = true, paper = true, id = true, digits = true,
                         label = true, paper_label = true, ours_label = true, delta_label = true, missing = true,
                         data = true, notes = true}
  local COLUMN_OPTIONS = {key = true, label = true, digits = true, format = true, align = true, paper = true,
                          delta = true, sd = true, best = true, latex_label = true}

  -- An unknown key is blamed on the caller of the report function that checks it.
  local function check_options(t, allowed, what)
    lmkit.check_options(t, allowed, what, 3)
  end

  local function is_number(v) return type(v) == "number" end

  -- A cell's raw value: numbers, strings, booleans; one-element tensors become numbers.
  local function plain(v)
    if lmkit.is_tensor(v) then
      if v:numel() ~= 1 then error("lmkit.report: a cell holds a tensor with " .. v:numel() .. " elements", 4) end
      return v:item()
    end
    return v
  end

  local function format_number(v, col, table_digits, signed)
    if v ~= v then return "nan" end
    if v == math.huge then return signed and "+inf" or "inf" end
    if v == -math.huge then return "-inf" end
    local s
    if type(col.format) == "string" then
      s = col.format:format(v)
    elseif col.digits == nil and math.type(v) == "integer" then
      s = ("%d"):format(v)
    else
      s = ("%." .. (col.digits or table_digits) .. "f"):format(v)
    end
    local zero = s:match("^[-+]?[0.]+$") ~= nil  -- rounds to zero: no sign, not even "-0"
    if zero and s:sub(1, 1) == "-" then s = s:sub(2) end
    if signed and v > 0 and not zero and s:sub(1, 1) ~= "+" then s = "+" .. s end
    return s
  end

  local Table = {}
  Table.__index = Table

  -- The columns as rendered: a column with paper numbers expands into paper | ours | Δ.
  local function paper_value(self, col, row, index)
    local source = col.paper
    if source == false then return nil end
    if source == nil or source == true then
      local by_id = self.paper
      if type(by_id) ~= "table" then return nil end
      local entry = by_id[row[self.id]]
      return type(entry) == "table" and plain(entry[col.key]) or nil
    end
    if type(source) == "string" then return plain(row[source]) end
    if type(source) == "function" then return plain(source(row, index)) end
    if type(source) == "table" then return plain(source[index]) end
    error(("lmkit.report: column '%s': paper must be true, false, a row field name, an array or a function"):format(col.key), 4)
  end

  local function has_paper(self, col)
    if col.paper == false then return false end
    if col.paper ~= nil and col.paper ~= true then return true end
    if type(self.paper) ~= "table" then return false end
    for _, entry in pairs(self.paper) do
      if type(entry) == "table" and entry[col.key] ~= nil then return true end
    end
    return col.paper == true
  end

  -- Cells as {text=, number=} per rendered column; header structure for LaTeX's two-level header.
  local function layout(self)
    local groups, flat = {}, {}
    for _, col in ipairs(self.columns) do
      local numeric = col.align == nil
      local any = false
      for _, row in ipairs(self.rows) do
        local v = plain(row[col.key])
        if v ~= nil then
          any = true
          if not is_number(v) then numeric = false end
        end
      end
      if not any then numeric = col.align == nil and col.paper ~= nil end
      local align = col.align or (numeric and "right" or "left")
      local group = {col = col, label = col.label or col.key, align = align, parts = {}}
      group.has_paper = has_paper(self, col)
      if group.has_paper then
        local delta = col.delta
        if delta == nil then delta = "diff" end
        -- Ours minus the paper's means something only on the paper's own data.
        if self.data and not self.data.paper_data then delta = false end
        group.parts[#group.parts + 1] = {kind = "paper", label = self.paper_label, align = align}
        group.parts[#group.parts + 1] = {kind = "ours", label = self.ours_label, align = align}
        if delta then group.parts[#group.parts + 1] = {kind = "delta", label = self.delta_label, align = align, delta = delta} end
      else
        group.parts[1] = {kind = "value", label = group.label, align = align}
      end
      if col.sd then group.parts[group.has_paper and 2 or 1].sd_key = col.sd end
      for _, part in ipairs(group.parts) do
        part.group = group
        flat[#flat + 1] = part
      end
      groups[#groups + 1] = group
    end
    -- Values per row, then the best value per column (for bold).
    local cells = {}
    for i, row in ipairs(self.rows) do
      local line = {}
      for _, part in ipairs(flat) do
        local col = part.group.col
        local ours = plain(row[col.key])
        local v, sd
        if part.kind == "paper" then
          v = paper_value(self, col, row, i)
        elseif part.kind == "delta" then
          local p = paper_value(self, col, row, i)
          if is_number(p) and is_number(ours) then
            v = part.delta == "percent" and 100 * (ours - p) / p or ours - p
          end
        else
          v = ours
          if col.sd then sd = plain(row[col.sd]) end
        end
        local text
        if v == nil then
          text = nil
        elseif type(col.format) == "function" then
          text = tostring(col.format(v, row))
        elseif is_number(v) then
          text = format_number(v, col, self.digits, part.kind == "delta")
          if part.kind == "delta" and part.delta == "percent" then text = text .. "%" end
        else
          text = tostring(v)
        end
        local sd_text = (is_number(sd) and text) and format_number(sd, col, self.digits) or nil
        line[#line + 1] = {text = text, sd = sd_text, number = is_number(v) and v or nil,
                           sd_number = is_number(sd) and sd or nil}
      end
      cells[i] = line
    end
    for j, part in ipairs(flat) do
      local best = part.group.col.best
      if best and (part.kind == "value" or part.kind == "ours") then
        if best ~= "min" and best ~= "max" then
          error(("lmkit.report: column '%s': best must be \"min\" or \"max\""):format(part.group.col.key), 3)
        end
        local target
        for i = 1, #cells do
          local v = cells[i][j].number
          if v and v == v and (target == nil or (best == "min" and v < target) or (best == "max" and v > target)) then target = v end
        end
        for i = 1, #cells do
          if target ~= nil and cells[i][j].number == target then cells[i][j].bold = true end
        end
      end
    end
    return groups, flat, cells
  end

  local function width(s)
    return utf8.len(s) or #s
  end

  local function pad(s, w, align)
    local gap = w - width(s)
    if gap <= 0 then return s end
    if align == "right" then return (" "):rep(gap) .. s end
    if align == "center" then
      local left = gap // 2
      return (" "):rep(left) .. s .. (" "):rep(gap - left)
    end
    return s .. (" "):rep(gap)
  end

  function Table:add(row)
    if type(row) ~= "table" then error("bad argument #1 to 'add' (table expected, got " .. type(row) .. ")", 2) end
    self.rows[#self.rows + 1] = row
    return self
  end

  function Table:markdown()
    local _, flat, cells = layout(self)
    local function md(s) return (s:gsub("|", "\\|")) end
    local header, widths = {}, {}
    for j, part in ipairs(flat) do
      local label = part.kind == "value" and part.label or (part.group.label .. " " .. part.label)
      header[j] = md(label)
      widths[j] = math.max(3, width(header[j]))
    end
    local body = {}
    for i, line in ipairs(cells) do
      body[i] = {}
      for j, cell in ipairs(line) do
        local s = cell.text and md(cell.text) or self.missing
        if cell.sd then s = s .. " ± " .. md(cell.sd) end
        if cell.bold then s = "**" .. s .. "**" end
        body[i][j] = s
        widths[j] = math.max(widths[j], width(s))
      end
    end
    local out = {}
    if self.title then out[#out + 1] = "**" .. md(self.title) .. "**\n\n" end
    for _, line in ipairs(self:data_lines()) do out[#out + 1] = "*" .. md(line) .. "*\n\n" end
    local function emit(values)
      local parts = {}
      for j, v in ipairs(values) do parts[j] = pad(v, widths[j], flat[j].align) end
      out[#out + 1] = "| " .. table.concat(parts, " | ") .. " |\n"
    end
    emit(header)
    local rules = {}
    for j, part in ipairs(flat) do
      local w = widths[j]
      if part.align == "right" then rules[j] = ("-"):rep(w - 1) .. ":"
      elseif part.align == "center" then rules[j] = ":" .. ("-"):rep(w - 2) .. ":"
      else rules[j] = ":" .. ("-"):rep(w - 1) end
    end
    out[#out + 1] = "| " .. table.concat(rules, " | ") .. " |\n"
    for _, values in ipairs(body) do emit(values) end
    if #self.notes > 0 then
      out[#out + 1] = "\n"
      for _, note in ipairs(self.notes) do out[#out + 1] = md(note) .. "\n\n" end
    end
    return table.concat(out)
  end

  -- What the numbers were measured on, and whether the paper's are comparable with them.
  function Table:data_lines()
    local data = self.data
    if not data then return {} end
    local lines = {"Data: " .. data.label .. "."}
    local shows_paper = false
    for _, col in ipairs(self.columns) do shows_paper = shows_paper or has_paper(self, col) end
    if shows_paper and not data.paper_data then
      lines[#lines + 1] = ("The paper's numbers are for %s, shown for orientation only: the data differ, so no Δ.")
        :format(data.paper_label or "the paper's corpus")
    end
    return lines
  end

  -- A line under the table (a correlation, a plot's file), kept in every format that has room.
  function Table:note(text)
    if type(text) ~= "string" then error("bad argument #1 to 'note' (string expected, got " .. type(text) .. ")", 2) end
    self.notes[#self.notes + 1] = text
    return self
  end

  local function csv_field(s)
    if s:find('[",\r\n]') or s:match("^%s") or s:match("%s$") then
      return '"' .. s:gsub('"', '""') .. '"'
    end
    return s
  end

  -- The shortest decimal that reads back as the same double.
  local function shortest(v)
    if math.type(v) == "integer" then return ("%d"):format(v) end
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
    for precision = 15, 17 do
      local s = ("%." .. precision .. "g"):format(v)
      if tonumber(s) == v then return s end
    end
  end

  function Table:csv(options)
    options = options or {}
    check_options(options, {raw = true}, "Table:csv")
    local _, flat, cells = layout(self)
    local lines = {}
    local header = {}
    for j, part in ipairs(flat) do
      header[#header + 1] = csv_field(part.kind == "value" and part.label or (part.group.label .. " " .. part.label))
      if options.raw and part.sd_key then header[#header + 1] = csv_field(part.label .. " sd") end
    end
    lines[1] = table.concat(header, ",")
    for i, line in ipairs(cells) do
      local fields = {}
      for j, cell in ipairs(line) do
        if options.raw then
          fields[#fields + 1] = csv_field(cell.number and shortest(cell.number) or cell.text or "")
          if flat[j].sd_key then fields[#fields + 1] = csv_field(cell.sd_number and shortest(cell.sd_number) or "") end
        else
          local s = cell.text or ""
          if cell.sd then s = s .. " ± " .. cell.sd end
          fields[#fields + 1] = csv_field(s)
        end
      end
      lines[i + 1] = table.concat(fields, ",")
    end
    return table.concat(lines, "\n") .. "\n"
  end

  local LATEX_ESCAPES = {
    ["\\"] = "\\textbackslash{}", ["{"] = "\\{", ["}"] = "\\}", ["_"] = "\\_", ["%"] = "\\%", ["&"] = "\\&",
    ["#"] = "\\#", ["$"] = "\\$", ["~"] = "\\textasciitilde{}", ["^"] = "\\textasciicircum{}",
  }
  -- The symbols lmkit's tables use, as LaTeX math (pdflatex has no glyph for a bare σ or ₁): a
  -- header like "σ_{d/2}/σ₁" or "ε-rank" compiles in any document.
  local LATEX_SYMBOLS = {
    ["σ"] = "\\sigma", ["ε"] = "\\varepsilon", ["ρ"] = "\\rho", ["π"] = "\\pi", ["μ"] = "\\mu", ["α"] = "\\alpha",
    ["β"] = "\\beta", ["κ"] = "\\kappa", ["λ"] = "\\lambda", ["τ"] = "\\tau", ["θ"] = "\\theta", ["Δ"] = "\\Delta",
    ["≥"] = "\\geq", ["≤"] = "\\leq", ["±"] = "\\pm", ["×"] = "\\times", ["·"] = "\\cdot", ["−"] = "-",
    ["→"] = "\\to", ["‖"] = "\\|", ["√"] = "\\surd", ["∞"] = "\\infty", ["≈"] = "\\approx", ["′"] = "'",
    ["₀"] = "_{0}", ["₁"] = "_{1}", ["₂"] = "_{2}", ["₃"] = "_{3}", ["₄"] = "_{4}", ["₅"] = "_{5}", ["₆"] = "_{6}",
    ["₇"] = "_{7}", ["₈"] = "_{8}", ["₉"] = "_{9}", ["ᵢ"] = "_{i}", ["ₖ"] = "_{k}", ["ᵣ"] = "_{r}",
    ["⁰"] = "^{0}", ["¹"] = "^{1}", ["²"] = "^{2}", ["³"] = "^{3}", ["⁻"] = "^{-}",
    ["★"] = "^{\\star}", ["♣"] = "^{\\clubsuit}", ["◊"] = "^{\\diamond}", ["†"] = "^{\\dagger}", ["‡"] = "^{\\ddagger}",
    ["≠"] = "\\neq", ["Σ"] = "\\Sigma", ["δ"] = "\\delta", ["∈"] = "\\in", ["≪"] = "\\ll", ["≫"] = "\\gg",
    ["ω"] = "\\omega", ["γ"] = "\\gamma", ["η"] = "\\eta", ["φ"] = "\\phi", ["ψ"] = "\\psi", ["ℓ"] = "\\ell",
  }
  local function latex_escape(s)
    local escaped = s:gsub("[\\{}_%%&#%$~%^]", LATEX_ESCAPES)
    return (escaped:gsub(utf8.charpattern, function(c)
      local symbol = LATEX_SYMBOLS[c]
      return symbol and ("$" .. symbol .. "$") or c
    end))
  end
  report.latex_escape = latex_escape

  function Table:latex(options)
    options = options or {}
    check_options(options, {float = true, placement = true}, "Table:latex")
    local groups, flat, cells = layout(self)
    local float = options.float
    if float == nil then float = self.title ~= nil or self.label ~= nil end
    local align_letter = {left = "l", right = "r", center = "c"}
    local spec = {}
    for j, part in ipairs(flat) do spec[j] = align_letter[part.align] end
    local out = {}
    local indent = float and "  " or ""
    local function w(s) out[#out + 1] = indent .. s .. "\n" end
    if float then
      out[#out + 1] = "\\begin{table}[" .. (options.placement or "t") .. "]\n"
      w("\\centering")
      if self.title then
        local caption = self.title
        for _, line in ipairs(self:data_lines()) do caption = caption .. " " .. line end
        w("\\caption{" .. latex_escape(caption) .. "}")
      end
      if self.label then w("\\label{" .. self.label .. "}") end
    end
    w("\\begin{tabular}{" .. table.concat(spec) .. "}")
    local outer = indent
    indent = indent .. "  "
    w("\\toprule")
    local function label_of(group)
      return group.col.latex_label or latex_escape(group.label)
    end
    local two_level = false
    for _, g in ipairs(groups) do if #g.parts > 1 then two_level = true end end
    if two_level then
      local top, rules, bottom, first = {}, {}, {}, 1
      for _, g in ipairs(groups) do
        if #g.parts > 1 then
          top[#top + 1] = ("\\multicolumn{%d}{c}{%s}"):format(#g.parts, label_of(g))
          rules[#rules + 1] = ("\\cmidrule(lr){%d-%d}"):format(first, first + #g.parts - 1)
          for _, part in ipairs(g.parts) do
            bottom[#bottom + 1] = part.kind == "delta" and "$\\Delta$" or latex_escape(part.label)
          end
        else
          top[#top + 1] = label_of(g)
          bottom[#bottom + 1] = ""
        end
        first = first + #g.parts
      end
      w(table.concat(top, " & ") .. " \\\\")
      w(table.concat(rules, " "))
      w(table.concat(bottom, " & ") .. " \\\\")
    else
      local header = {}
      for _, g in ipairs(groups) do header[#header + 1] = label_of(g) end
      w(table.concat(header, " & ") .. " \\\\")
    end
    w("\\midrule")
    for _, line in ipairs(cells) do
      local values = {}
      for j, cell in ipairs(line) do
        local s = cell.text and latex_escape(cell.text) or "---"
        if cell.number and s:sub(1, 1) == "-" then s = "$-$" .. s:sub(2) end
        if cell.sd then s = s .. " $\\pm$ " .. latex_escape(cell.sd) end
        if cell.bold then s = "\\textbf{" .. s .. "}" end
        values[j] = s
      end
      w(table.concat(values, " & ") .. " \\\\")
    end
    w("\\bottomrule")
    indent = outer
    w("\\end{tabular}")
    if float then out[#out + 1] = "\\end{table}\n" end
    return table.concat(out)
  end

  function Table:print()
    io.write(self:markdown())
    io.flush()
  end

  local FORMAT_BY_EXTENSION = {md = "markdown", markdown = "markdown", csv = "csv", tex = "latex"}

  function Table:save(path, options)
    if type(path) ~= "string" then error("bad argument #1 to 'save' (string expected, got " .. type(path) .. ")", 2) end
    local ext = path:match("%.([%w]+)$")
    local format = ext and FORMAT_BY_EXTENSION[ext:lower()]
    if not format then
      error(("Table:save: cannot tell the format of '%s' (use .md, .csv or .tex)"):format(path), 2)
    end
    lmkit.write_file(path, self[format](self, options))  -- atomic: temporary file, fsync, rename
    return path
  end

  function Table:__tostring()
    return self:markdown()
  end

  -- The yardsticks of a test perplexity (docs/recipes.md, "Yardsticks"): a model whose perplexity
  -- is at least (1 − NEAR_UNIGRAM) × the unigram model's has learnt little beyond word frequencies.
  -- The 5% is lmkit's choice; the thesis reports no such yardstick.
  report.NEAR_UNIGRAM = 0.05

  -- The results' numbers: a recipe's results ({cell =, result =}, result nil for a cell not
  -- finished) or plain rows such as run summaries.
  local function numbers_of(r)
    if type(r) ~= "table" then return nil end
    if r.cell ~= nil or r.result ~= nil then return type(r.result) == "table" and r.result or nil end
    return r
  end

  -- The notes under a table of models: the unigram model's test perplexity and, on a synthetic
  -- language, the true distribution's (with the share of the gap the best model closes), from each
  -- result's unigram_ppl and bound_ppl; then, when some models sit near the unigram model, a note
  -- saying that their differences say little. `key` names the results' perplexity.
  local function yardstick_notes(results, key)
    local unigrams, bounds, measured, unmeasured, near = {}, {}, 0, 0, 0
    local best, best_closed  -- the model that closes the largest share of its own corpus's gap
    local function add_value(list, v)
      for _, old in ipairs(list) do if math.abs(old - v) <= 1e-9 * math.abs(v) then return end end
      list[#list + 1] = v
    end
    for _, r in ipairs(results) do
      local x = numbers_of(r)
      local ppl = x and x[key]
      if type(ppl) == "number" and ppl == ppl then  -- NaN (a diverged model's) is no perplexity
        if type(x.unigram_ppl) == "number" then
          measured = measured + 1
          add_value(unigrams, x.unigram_ppl)
          if ppl >= (1 - report.NEAR_UNIGRAM) * x.unigram_ppl then near = near + 1 end
          if type(x.bound_ppl) == "number" then
            add_value(bounds, x.bound_ppl)
            local closed = (math.log(x.unigram_ppl) - math.log(ppl)) / (math.log(x.unigram_ppl) - math.log(x.bound_ppl))
            if not best or closed > best_closed then best, best_closed = x, closed end
          end
        else
          unmeasured = unmeasured + 1
        end
      end
    end
    if measured + unmeasured == 0 then return {} end
    local why_missing = "results written before lmkit recorded it, or a recipe's result without it: a run's " ..
                        "summary() has it; delete a cell's folder to run the cell again"
    if measured == 0 then
      return {("Yardsticks: no result here has a unigram_ppl (%s)."):format(why_missing)}
    end
    local function values_text(list)
      table.sort(list)
      if #list == 1 then return ("%.2f"):format(list[1]) end
      return ("%.2f to %.2f (the cells' corpora differ)"):format(list[1], list[#list])
    end
    local text = ("Yardsticks on the test split: the unigram model (the training split's word frequencies, add-½, " ..
                  "no context) has perplexity %s"):format(values_text(unigrams))
    if #bounds > 0 then
      text = text .. ("; the true distribution (the language's own probabilities, which no model beats in " ..
                      "expectation) %s"):format(values_text(bounds))
      if best_closed >= 1 then
        text = text .. ("; the best model here (%.2f) reaches it, within the test split's sampling noise"):format(best[key])
      elseif best_closed > 0 then
        text = text .. ("; the best model here (%.2f) closes %.0f%% of the gap between them"):format(best[key], 100 * best_closed)
      else
        text = text .. ("; no model here beats the unigram model (the best: %.2f)"):format(best[key])
      end
      text = text .. "."
    else
      text = text .. "; for real text the true distribution's perplexity is unknown."
    end
    if unmeasured > 0 then
      text = text .. (" %d of the %d models' results have no unigram_ppl (%s)."):format(
        unmeasured, measured + unmeasured, why_missing)
    end
    local notes = {text}
    if near > 0 then
      notes[2] = ("%s within %.0f%% of the unigram model's test perplexity or above it: %s learnt little beyond word " ..
                  "frequencies, so differences between such models, and any correlation over them, say little; train " ..
                  "longer or at a larger scale for a finding."):format(
        near == 1 and measured == 1 and "The model is" or near == measured and ("All %d models are"):format(measured)
          or near == 1 and ("1 of the %d models is"):format(measured) or ("%d of the %d models are"):format(near, measured),
        100 * report.NEAR_UNIGRAM, near == 1 and "it has" or "they have")
    end
    return notes
  end

  local function check_results(results, key, level)
    if type(results) ~= "table" then
      error(("bad argument #1 (a list of results or rows expected, got %s)"):format(type(results)), level + 1)
    end
    if key ~= nil and type(key) ~= "string" then
      error(("bad argument #2 (the perplexity's key, a string, expected, got %s)"):format(type(key)), level + 1)
    end
  end

  function report.yardsticks(results, key)
    check_results(results, key, 2)
    return yardstick_notes(results, key or "test_ppl")
  end

  -- Adds report.yardsticks' notes under the table.
  function Table:note_yardsticks(results, key)
    check_results(results, key, 2)
    for _, note in ipairs(yardstick_notes(results, key or "test_ppl")) do self:note(note) end
    return self
  end

  local function new_table(spec)
    if type(spec) ~= "table" then error("bad argument #1 to 'lmkit.report.table' (table expected, got " .. type(spec) .. ")", 2) end
    check_options(spec, TABLE_OPTIONS, "lmkit.report.table")
    if type(spec.columns) ~= "table" or #spec.columns == 0 then
      error("lmkit.report.table: columns = {{key = ...}, ...} expected", 2)
    end
    local columns = {}
    for i, col in ipairs(spec.columns) do
      if type(col) == "string" then col = {key = col} end
      if type(col) ~= "table" or col.key == nil then
        error(("lmkit.report.table: column %d needs a key"):format(i), 2)
      end
      check_options(col, COLUMN_OPTIONS, ("lmkit.report.table: column '%s'"):format(tostring(col.key)))
      if col.align and col.align ~= "left" and col.align ~= "right" and col.align ~= "center" then
        error(("lmkit.report.table: column '%s': align must be \"left\", \"right\" or \"center\""):format(col.key), 2)
      end
      if col.delta ~= nil and col.delta ~= false and col.delta ~= "diff" and col.delta ~= "percent" then
        error(("lmkit.report.table: column '%s': delta must be \"diff\", \"percent\" or false"):format(col.key), 2)
      end
      columns[i] = col
    end
    local data = spec.data
    if data ~= nil and (type(data) ~= "table" or type(data.label) ~= "string" or type(data.paper_data) ~= "boolean") then
      error("lmkit.report.table: data = {label = \"...\", paper_data = true|false[, paper_label = \"...\"]} expected", 2)
    end
    local notes = {}
    for i, note in ipairs(spec.notes or {}) do
      if type(note) ~= "string" then error(("lmkit.report.table: note %d is not a string"):format(i), 2) end
      notes[i] = note
    end
    local rows = {}
    for i, row in ipairs(spec.rows or {}) do
      if type(row) ~= "table" then error(("lmkit.report.table: row %d is not a table"):format(i), 2) end
      rows[i] = row
    end
    return setmetatable({
      columns = columns, rows = rows, title = spec.title, label = spec.label, paper = spec.paper,
      id = spec.id or columns[1].key, digits = spec.digits or 2,
      paper_label = spec.paper_label or "paper", ours_label = spec.ours_label or "ours",
      delta_label = spec.delta_label or "Δ", missing = spec.missing or "—", data = data, notes = notes,
    }, Table)
  end
  report.table = new_table

  lmkit.document(new_table, "lmkit.report.table", [[
lmkit.report.table{columns=, rows=, title=, paper=, id=, digits=2, label=, missing="—", data=, notes=} -> Table
A results table rendered as Markdown, CSV or LaTeX (booktabs). columns: {key=, label=, digits=, format=, align=, paper=, delta="diff", sd=, best=, latex_label=} (a string is {key=s}); rows: tables keyed by the column keys (more with t:add(row)).
Numbers get `digits` decimals (integers stay integers unless digits is set); format = "%.3g" or function(value, row) overrides. align: "left" | "right" | "center" (default: right for numbers). sd = "ppl_sd" shows "mean ± sd". best = "min" | "max" sets the best value in bold.
The paper's numbers: a column with paper = "field" (a row field), {v1, v2, ...} (by row), function(row, i), or true/omitted with the table's paper = {[id] = {key = value}} (rows matched by the `id` column, default the first) shows "paper | ours | Δ" (Δ = ours − paper; delta = "percent" or false).
data = {label=, paper_data=, paper_label=} says what the numbers were measured on ("Data: ..." under the title); with paper_data = false the paper's columns stay but Δ is dropped, and a line says why. notes = {...} (or t:note(text)) are lines under the table (a correlation, a plot's file).
Methods: t:markdown(), t:csv([{raw=true}]), t:latex([{float=, placement="t"}]), t:print(), t:save(path) (.md, .csv or .tex; atomic), t:add(row), t:note(text), t:note_yardsticks(results[, key]) (lmkit.report.yardsticks).]])
  lmkit.document(report.yardsticks, "lmkit.report.yardsticks", [[
lmkit.report.yardsticks(results[, key="test_ppl"]) -> {note, ...}
The yardsticks of the results' perplexities, as every built-in recipe's report prints them: the unigram model's test perplexity (each result's unigram_ppl: a run's summary() has it) and, on a synthetic language, the true distribution's (bound_ppl: presets.yardsticks(corpus)) with the share of the gap the best model closes; then how many models are within 5% of the unigram model (lmkit.report.NEAR_UNIGRAM), whose differences say little. results: a recipe's results ({cell=, result=}) or plain rows. t:note_yardsticks(results[, key]) adds them under table t.]])
  lmkit.document(latex_escape, "lmkit.report.latex_escape", "lmkit.report.latex_escape(s) -> string\nEscapes LaTeX's special characters \\ { } _ % & # $ ~ ^ so that s prints as itself, and writes the Greek letters, subscript digits and symbols lmkit's tables use (σ, ε, ₁, ≥, ±, ...) as math, which pdflatex typesets.")
  return report
end
