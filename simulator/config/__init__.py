"""The pydantic boundary: the scenario schema (`scenario`) and its speculation sections (`speculation`).
Everything inside the simulator works on the validated sections."""
