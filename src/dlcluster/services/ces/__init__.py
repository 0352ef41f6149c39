"""CES, cluster energy saving: forecast node demand and power idle nodes down (open loop and in the simulator)."""
