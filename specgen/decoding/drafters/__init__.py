"""The drafters, one module each behind the interface in `base`: a draft model, and copies of
text already written (the prompt, the reply, past outputs, a prediction, a JSON reply's records),
each copy source behind the interface in `source`."""
