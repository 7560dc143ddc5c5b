-- Writing a recipe's report tables, shared by the line-up recipes (presets/lineup.lua) and the
-- chapter-5 ones (presets/measure.lua) so that every recipe's files are named and placed alike.
--   local report_files = require "presets.report_files"
--   report_files.print_and_save(t, ctx.out, "pvalues")    -- prints t, writes <out>/pvalues.{md,csv,tex}
local report_files = {}

-- Writes a report table as <out>/<name>.{md,csv,tex} (name: "report" unless given), creating <out>:
-- a report of a grid none of whose cells has finished yet has no folder to write into.
function report_files.save(t, out, name)
  name = name or "report"
  lmkit.fs.mkdir(out)
  for _, ext in ipairs{"md", "csv", "tex"} do t:save(("%s/%s.%s"):format(out, name, ext)) end
end

-- What every recipe does with a finished table: show it on the terminal, then write its files.
function report_files.print_and_save(t, out, name)
  t:print()
  report_files.save(t, out, name)
end

-- The closing line of a report written as several tables, e.g.
-- "report files: out/{report_mos,report_gss}.{md,csv,tex}".
function report_files.print_names(out, names)
  print(("report files: %s/{%s}.{md,csv,tex}"):format(out, table.concat(names, ",")))
end

return report_files
