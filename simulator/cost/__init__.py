"""What a step costs: forward passes priced by a latency model (`step_cost`, its batch × context table
`step_table`), drafter families' passes and memory (`drafters`) and expert-parallel MoE passes (`moe`)."""
