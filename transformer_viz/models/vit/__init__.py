"""The Vision Transformer: config.py its JSON config (no torch), model.py the model, names.py
its documented trace names."""
