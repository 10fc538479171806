"""The toy Detection Transformer: config.py its JSON config (no torch), model.py the model,
names.py its documented trace names, boxes.py box formats, the Hungarian matching and the set
loss."""
