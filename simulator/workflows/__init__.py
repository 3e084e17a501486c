"""User workflows on top of the DES: `draftsim estimate` (`estimate`), capacity planning (`plan`),
parameter sweeps (`sweep`) and goodput search (`goodput`)."""
