"""What every entry point does against a store: store, describe, execute, enqueue and cancel plans; the wiring of settings to parts; the lease-queue worker."""
