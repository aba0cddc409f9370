"""The engine: pure scheduling, one step with its policies, template inputs, durable transitions."""
