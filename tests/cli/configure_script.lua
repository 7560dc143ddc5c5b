local cfg = lmkit.configure({lr = 20, epochs = 10})
print(cfg.lr)
