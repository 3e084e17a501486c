"""`draftsim sweep`: the sweep file (`config`), executors (`executors`), the resumable store (`store`),
plots (`plots`) and the command (`main`)."""
