-- A script that never reads its settings: `lmkit run` must say that its --set values had no effect.
print("ran without reading settings")
