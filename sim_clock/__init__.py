"""sim_clock: a ROS 2 clock server that owns simulated time."""
