"""Parameter sweeps: an experiment file expanded into cells, run locally or on Ray, collected in one table."""
