"""`draftsim plan`: the plan file (`config`), the analytical screen (`screen`), GPU prices (`prices`) and the
command (`main`)."""
