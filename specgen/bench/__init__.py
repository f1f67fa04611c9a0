"""The bench command's engine: interleaved runs of configurations, their statistics and exactness
audit, and the table that shows them; uses llama, models and decoding, never the CLI."""
