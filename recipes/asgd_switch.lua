-- NT-ASGD vs ET-ASGD (thesis §4.4.2, Tables 4.6/4.7, Fig. 4.8/4.9): Softmax, SS, GSS, LMS-PLIF,
-- MoS and MoC, each trained once with the non-monotonically triggered switch to averaged SGD and
-- once with the switch at a fixed epoch. The thesis finds ET lowers every head's test perplexity
-- (by about 1 on PTB, 0.75 on WT2; LMS-PLIF and MoC gain most).
--
--   lmkit run recipes/asgd_switch.lua                                   -- tiny scale (a few minutes on a CPU)
--   lmkit run recipes/asgd_switch.lua --set heads=softmax,mos --set epochs=2
--   lmkit run recipes/asgd_switch.lua --set scale=paper --set dataset=wikitext-2
--
-- The schedule: at paper scale 1000 epochs (MoS on WT2: 500), NT with nonmono = 5, ET at epoch 200;
-- at small scale the preset's (40 epochs, ET at 25). At tiny scale a run has only a handful of
-- epochs, where a window of 5 would never close, so the defaults are 6 epochs, ET at half the
-- epochs and nonmono = 0 (NT switches at the first epoch whose validation loss is not a new best).
-- `--set epochs/switch_epoch/nonmono` override any of these. The table's "Switch" column is the
-- epoch each run actually switched at (summary.switch_epoch; "—": never).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"

-- #Param, train, validation and test ppl, rank of Q, per policy and head, as published.
local function row(params, train, valid, test, rank)
  return {params = params, train_ppl = train, valid_ppl = valid, test_ppl = test, rank = rank}
end
local PAPER = {
  ptb = {  -- Table 4.6
    nt = {softmax = row("24.22M", 34.05, 60.35, 58.07, 402), sigsoftmax = row("24.22M", 33.68, 60.45, 57.75, 4906),
          gss = row("24.22M", 34.24, 59.95, 57.60, 8276), plif = row("24.32M", 37.19, 60.86, 58.45, 510),
          mos = row("21.50M", 33.08, 58.21, 56.07, 9979), moc = row("21.50M", 33.73, 59.84, 57.40, 282)},
    et = {softmax = row("24.22M", 34.03, 59.48, 57.10, 402), sigsoftmax = row("24.22M", 32.83, 59.95, 57.16, 4979),
          gss = row("24.22M", 34.21, 59.37, 56.78, 8989), plif = row("24.32M", 37.07, 59.08, 56.67, 580),
          mos = row("21.50M", 31.62, 57.12, 55.11, 9983), moc = row("21.50M", 31.37, 58.38, 55.81, 282)},
  },
  ["wikitext-2"] = {  -- Table 4.7
    nt = {softmax = row("33.55M", 39.07, 68.35, 65.28, 402), sigsoftmax = row("33.55M", 39.21, 67.84, 65.08, 5879),
          gss = row("33.55M", 39.05, 67.72, 65.07, 9130), plif = row("33.65M", 41.11, 68.54, 65.59, 479),
          mos = row("34.90M", 35.92, 65.93, 63.06, 13215), moc = row("34.90M", 37.21, 69.08, 66.42, 302)},
    et = {softmax = row("33.55M", 39.09, 67.59, 64.56, 402), sigsoftmax = row("33.55M", 39.19, 67.19, 64.33, 6590),
          gss = row("33.55M", 39.12, 66.97, 64.38, 10145), plif = row("33.65M", 41.19, 67.19, 64.32, 513),
          mos = row("34.90M", 35.99, 64.58, 61.90, 15738), moc = row("34.90M", 37.23, 68.19, 65.83, 302)},
  },
}
local POLICY_LABEL = {nt = "NT-ASGD", et = "ET-ASGD"}
local COLORS = {softmax = "#1f77b4", sigsoftmax = "#ff7f0e", gss = "#2ca02c", plif = "#d62728", mos = "#9467bd",
                moc = "#8c564b"}

-- The cell's schedule: epochs, ET's epoch and NT's window (see the header).
local function schedule(cfg, p)
  local tiny = cfg.scale == "tiny"
  local epochs = cfg.epochs > 0 and cfg.epochs or (tiny and 6 or p.train.epochs)
  local switch_epoch = cfg.switch_epoch > 0 and cfg.switch_epoch
                       or (tiny and math.max(1, math.ceil(epochs / 2)) or p.train.switch_epoch or 200)
  local nonmono = cfg.nonmono >= 0 and cfg.nonmono or (tiny and 0 or p.train.nonmono or 5)
  return {epochs = epochs, switch_epoch = switch_epoch, nonmono = nonmono}
end

return recipe.define{
  name = "asgd_switch",
  description = "NT-ASGD vs ET-ASGD for Softmax, SS, GSS, LMS-PLIF, MoS, MoC (thesis Tables 4.6/4.7, Fig. 4.8/4.9)",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from",
    heads = recipe.setting("softmax,sigsoftmax,gss,plif,mos,moc", "any of these, comma-separated"),
    policies = recipe.setting("nt,et", "the ASGD switches compared, each for every head: nt, et (comma-separated)"),
    epochs = recipe.setting(0, "> 0 overrides the schedule's epochs"),
    switch_epoch = recipe.setting(0, "> 0: ET's epoch (default: see the header)"),
    nonmono = recipe.setting(-1, "≥ 0: NT's window (default: see the header)"),
  },

  grid = function(cfg)
    local cells = {}
    for _, policy in ipairs(lineup.list(cfg.policies)) do
      if not POLICY_LABEL[policy] then error("asgd_switch: policies are nt and et, got '" .. policy .. "'") end
      for _, head in ipairs(lineup.list(cfg.heads)) do
        if not COLORS[head] then error("asgd_switch: no head '" .. head .. "' in the line-up (softmax, sigsoftmax, gss, plif, mos, moc)") end
        cells[#cells + 1] = {switch = policy, head = head}
      end
    end
    return cells
  end,

  needs = function(cell, cfg)
    return lineup.needs(cell, cfg, schedule(cfg, lineup.preset(cell.head, cfg)).epochs)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local p = lineup.preset(cell.head, cfg)
    local s = schedule(cfg, p)
    local dir = ctx.dir .. "/run"
    local result = lineup.run_cell{name = cell.head, cfg = cfg, preset = p, dir = dir, rank = true,
                                   train = {epochs = s.epochs, switch = cell.switch, switch_epoch = s.switch_epoch,
                                            nonmono = s.nonmono}}
    result.schedule_switch_epoch, result.nonmono = s.switch_epoch, s.nonmono
    -- The learning curve (Fig. 4.8/4.9) from the run's epoch records.
    result.curve = {epoch = {}, train_ppl = {}, valid_ppl = {}}
    for _, r in ipairs(lmkit.open_run(dir):metrics("epoch")) do
      table.insert(result.curve.epoch, r.epoch)
      table.insert(result.curve.train_ppl, r.train_ppl)
      table.insert(result.curve.valid_ppl, r.valid_ppl)
    end
    return result
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local paper = PAPER[cfg.dataset]
    local function from_paper(key)
      if not paper then return nil end
      return function(row) return paper[row.switch][row.head][key] end
    end
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("NT-ASGD vs ET-ASGD on %s (thesis Table %s)"):format(data.short, cfg.dataset == "ptb" and "4.6" or "4.7"),
      data = data,
      columns = {
        {key = "policy", label = "Policy"}, {key = "function", label = "Function"},
        {key = "params_paper", label = "#Param (paper)"}, {key = "params", label = "#Param (ours)"},
        {key = "switched", label = "Switch"},
        {key = "train_ppl", label = "Train ppl", digits = 2, paper = from_paper("train_ppl")},
        {key = "valid_ppl", label = "Validation ppl", digits = 2, paper = from_paper("valid_ppl")},
        {key = "test_ppl", label = "Test ppl", digits = 2, paper = from_paper("test_ppl")},
        {key = "rank", label = "Rank", digits = 0, paper = from_paper("rank")},
      },
    }
    local by = {nt = {}, et = {}}
    for _, r in ipairs(results) do
      local c, res = r.cell, r.result
      local line = {policy = POLICY_LABEL[c.switch], ["function"] = lineup.label(c.head), switch = c.switch, head = c.head,
                    params_paper = paper and paper[c.switch][c.head].params}
      if res then
        line.params, line.train_ppl, line.valid_ppl, line.test_ppl, line.rank =
          res.params, res.train_ppl, res.valid_ppl, res.test_ppl, res.rank
        line.switched = res.switch_epoch and ("epoch " .. res.switch_epoch) or "never"
        by[c.switch][c.head] = res
      end
      t:add(line)
    end
    measure.note_rank(t, results, cfg.dataset)
    t:note_yardsticks(results)
    lineup.print_and_save(t, ctx.out, "report")

    -- What ET changes per head: Δ test ppl = ET − NT (the thesis: ≈ −1.00 on PTB, −0.75 on WT2).
    local gain = lmkit.report.table{
      title = ("Test ppl ET-ASGD − NT-ASGD on %s"):format(data.short),
      data = data,
      columns = {{key = "function", label = "Function"},
                 {key = "delta", label = "Δ test ppl", digits = 2,
                  paper = paper and function(row) return paper.et[row.head].test_ppl - paper.nt[row.head].test_ppl end}},
    }
    local heads_seen = {}
    for _, r in ipairs(results) do
      local h = r.cell.head
      if not heads_seen[h] then
        heads_seen[h] = true
        local nt, et = by.nt[h], by.et[h]
        gain:add{["function"] = lineup.label(h), head = h, delta = (nt and et) and (et.test_ppl - nt.test_ppl) or nil}
      end
    end
    lineup.print_and_save(gain, ctx.out, "et_minus_nt")

    -- Fig. 4.8/4.9: train (solid) and validation (dashed) perplexity per epoch, one plot per policy.
    for _, policy in ipairs{"nt", "et"} do
      local series, vlines, markers, last_epoch = {}, {}, {}, 0
      for _, r in ipairs(results) do
        local res = r.result
        if r.cell.switch == policy and res and res.curve and #res.curve.epoch > 0 then
          local label, color = lineup.label(r.cell.head), COLORS[r.cell.head]
          last_epoch = math.max(last_epoch, res.curve.epoch[#res.curve.epoch])
          series[#series + 1] = {x = res.curve.epoch, y = res.curve.train_ppl, label = label .. " train", color = color,
                                 with = "linespoints", pointsize = 0.5}
          series[#series + 1] = {x = res.curve.epoch, y = res.curve.valid_ppl, label = label .. " valid", color = color,
                                 with = "linespoints", pointsize = 0.5, dashtype = 2}
          if policy == "et" and #vlines == 0 and res.switch_epoch then
            vlines[1] = {x = res.switch_epoch, label = "switch"}
          end
          -- NT switches when validation stalls, at an epoch of each model's own (the point of
          -- Fig. 4.8): a ring on its validation curve there, in its colour.
          if policy == "nt" and res.switch_epoch then
            for i, e in ipairs(res.curve.epoch) do
              if e == res.switch_epoch then
                markers[#markers + 1] = {x = {e}, y = {res.curve.valid_ppl[i]}, color = color, with = "points",
                                         pointtype = 6, pointsize = 2.5,
                                         label = #markers == 0 and "NT switch (ring)" or nil}
              end
            end
          end
        end
      end
      for _, m in ipairs(markers) do series[#series + 1] = m end
      if #series > 0 then
        local out = ("%s/curves_%s.png"):format(ctx.out, policy)
        lmkit.plot.line{out = out, series = series, vlines = vlines, xlabel = "epoch", ylabel = "perplexity",
                        key = "outside right top", width = 900, set = last_epoch <= 20 and {"set xtics 1"} or nil,
                        title = ("%s on %s"):format(POLICY_LABEL[policy], data.short)}
        print("learning curves: " .. out)
      end
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}, " .. ctx.out .. "/et_minus_nt.{md,csv,tex}")
  end,
}
