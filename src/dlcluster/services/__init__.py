"""Services built on prediction and simulation: QSSF ordering and CES power management."""
