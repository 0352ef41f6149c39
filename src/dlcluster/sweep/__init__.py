"""Parameter sweeps: running grids of simulations and comparing their results."""
