"""What-if studies of MoE serving: expert vs tensor parallelism, pre-scheduling, speculation."""
