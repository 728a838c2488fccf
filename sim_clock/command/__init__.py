"""ros2cli command extensions of sim_clock."""
