"""The decoder-only model (GPT): config.py its JSON config (no torch), model.py the model,
names.py its documented trace names."""
