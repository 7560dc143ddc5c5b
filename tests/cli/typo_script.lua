local x = lmkti.zeros(2)
